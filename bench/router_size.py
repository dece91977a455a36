"""How big the router's request grows with the open tasks (DESIGN 14: routing reads a
bounded list).

:func:`request_tokens` builds the real routing request (``MessageRouter.offer`` and
``build_request``, the real prompt files) for one message, with ``n_open`` open tasks in a
temporary data dir's ``todos.md`` (written in one go), and counts its tokens roughly, as
characters / 4 (no model's tokenizer is installed offline). The tasks look like real ones:
a title, a description of one or two sentences, some with a merged update, some waiting for
the user with their question. Similarity is off (no embedding model): the list has the same
length either way, only its choice differs.

Target: the request with 1,000 open tasks is at most 3 times the one with none. Prints one
JSON object::

    .venv/bin/python bench/router_size.py

Importing this module does nothing else (``bench/books.py`` imports :func:`request_tokens`).
"""

from __future__ import annotations

import json
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

if TYPE_CHECKING:
    from jarvis.gateway.todo_format import Todo
    from jarvis.llm.types import LLMRequest

TARGET_RATIO = 3
CHARS_PER_TOKEN = 4
MESSAGE = "Also send the finished tax spreadsheet to Bob, and cc me."
VERBS = ("Rename", "Compress", "Back up", "Print", "Upload", "Translate", "Proofread", "Export")
THINGS = (
    "the quarterly tax spreadsheet",
    "the holiday photos folder",
    "the conference slides",
    "the insurance contract",
    "the server backup report",
    "the onboarding handbook",
    "the invoice scans from March",
)
DETAILS = (
    "Use the company template and keep the original file as it is.",
    "It is in Documents on the desktop; put the result next to it and tell me the name.",
    "Only the pages about last year, and check with me before deleting anything.",
    "",
)


def open_task(number: int, start: datetime) -> Todo:
    """A plausible open task; every seventh has a merged update, every eleventh a question."""
    from jarvis.gateway.todo_format import Todo

    verb, thing = VERBS[number % len(VERBS)], THINGS[number % len(THINGS)]
    title = f"{verb} {thing}"
    description = f"{title}\n{DETAILS[number % len(DETAILS)]}".strip()  # a two-line message
    if number % 7 == 0:
        description += f"\n\nUpdate (m-{number}):\nMake it two copies, one in colour."
    waiting = number % 11 == 0
    return Todo(
        id=f"T{number:03d}",
        title=title,
        description=description,
        status="needs_user" if waiting else "pending",
        summary="Which folder should the result go to?" if waiting else None,
        source="tui",
        created=start + timedelta(minutes=number),
    )


def request_chars(request: LLMRequest) -> int:
    return len(request.system or "") + sum(len(m.text) for m in request.messages)


def build_request(data_dir: Path, n_open: int) -> LLMRequest:
    """The router's request for :data:`MESSAGE` with ``n_open`` open tasks in ``data_dir``."""
    from jarvis.gateway.markdown import Document
    from jarvis.gateway.message_format import Message
    from jarvis.gateway.router import MessageRouter
    from jarvis.gateway.settings import RouterSettings
    from jarvis.gateway.todo_format import render_todos
    from jarvis.gateway.todos import TODOS_PREAMBLE, TodoList

    start = datetime(2026, 1, 5, 9, 0)
    doc: Document[Todo] = Document(TODOS_PREAMBLE)
    doc.items.extend(open_task(n, start) for n in range(1, n_open + 1))
    (data_dir / "todos.md").write_text(render_todos(doc), encoding="utf-8")
    todos = TodoList(data_dir)
    router = MessageRouter(todos, None, candidates=RouterSettings().candidates)
    message = Message(id="m-bench", timestamp=start + timedelta(days=30), text=MESSAGE)
    offered = router.offer(message, todos.open_tasks())
    assert len(offered.shown) == min(n_open, router.candidates)
    return router.build_request(message, offered)


def request_tokens(n_open: int) -> int:
    """Tokens (characters / 4) of the routing request for one message with ``n_open``
    open tasks, built in a temporary data dir."""
    with tempfile.TemporaryDirectory(prefix="jarvis-router-size-") as tmp:
        return request_chars(build_request(Path(tmp), n_open)) // CHARS_PER_TOKEN


def main() -> None:
    tokens_0, tokens_1000 = request_tokens(0), request_tokens(1000)
    ratio = round(tokens_1000 / tokens_0, 2)
    result = {
        "tokens_0": tokens_0,
        "tokens_1000": tokens_1000,
        "ratio": ratio,
        "target_ratio": TARGET_RATIO,
        "met": ratio <= TARGET_RATIO,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
