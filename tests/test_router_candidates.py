"""The router reads a bounded list (DESIGN 14): at most ``router.candidates`` open tasks, the
thread first, then the most similar, then the newest; the prompt says when the list was cut;
a merge into a task the model was not shown becomes a new task.

Real parts: todos.md in a temp dir read by a real TodoList, the real prompt files, the
long-term memory's offline embedding model; the model is scripted at our own interface.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from jarvis.config import load_settings
from jarvis.desktop.x11 import XDisplay
from jarvis.gateway.candidates import (
    Candidates,
    Embed,
    TaskVectors,
    choose,
    embedder_of,
)
from jarvis.gateway.gateway import Gateway
from jarvis.gateway.markdown import Document
from jarvis.gateway.router import MessageRouter, describe_tasks
from jarvis.gateway.todo_format import Todo, render_todos
from jarvis.gateway.todos import TODOS_PREAMBLE, TodoList
from jarvis.memory.embedding import make_embedding
from tests.test_router import ScriptedModel, message, run

START = datetime(2026, 1, 5, 9, 0)
VERBS = (
    "Rename", "Compress", "Back up", "Sort", "Print", "Convert to PDF", "Upload", "Archive",
    "Check the spelling of", "Translate", "Move to the shared drive", "Resize",
    "Count the words in", "Encrypt", "Tag", "Share with the team", "Proofread", "Export",
    "Open", "Sync", "Scan", "Zip", "Index", "Duplicate", "Attach to the ticket",
)  # fmt: skip
THINGS = (
    "the quarterly tax spreadsheet", "the holiday photos folder", "the kernel build logs",
    "the printer driver installer", "the conference slides", "the garden plan drawing",
    "the invoice scans from March", "the onboarding handbook", "the podcast audio files",
    "the firewall configuration", "the thesis draft chapter", "the bicycle repair manual",
    "the insurance contract", "the chess tournament results", "the weather station readings",
    "the open source license notes", "the server backup report", "the piano sheet music",
    "the car rental receipt", "the astronomy club newsletter",
)  # fmt: skip
TASK_LINE = re.compile(r"^- (T\d+) \(", re.MULTILINE)
NO_MERGE = '{"action": "new", "title": "something else"}'


def task(number: int, title: str, **fields: Any) -> Todo:
    """Task ``T{number}``, made ``number`` minutes after START (a higher number is newer)."""
    base = {"id": f"T{number:03d}", "title": title, "created": START + timedelta(minutes=number)}
    return Todo.model_validate(base | {"source": "tui"} | fields)


def unrelated(count: int, first: int = 1) -> list[Todo]:
    """``count`` open tasks about files and documents, none about food or bookings."""
    made = []
    for i in range(count):
        verb, thing = VERBS[i % len(VERBS)], THINGS[(i // len(VERBS)) % len(THINGS)]
        made.append(task(first + i, f"{verb} {thing}", description=f"{verb} {thing} (batch {i})"))
    return made


def write_books(data_dir: Path, tasks: Sequence[Todo]) -> TodoList:
    """todos.md with these tasks, written in one go (as TodoList writes it)."""
    doc: Document[Todo] = Document(TODOS_PREAMBLE)
    doc.items.extend(tasks)
    (data_dir / "todos.md").write_text(render_todos(doc), encoding="utf-8")
    return TodoList(data_dir)


def shown_ids(prompt: str) -> list[str]:
    return TASK_LINE.findall(prompt)


def words(texts: list[str]) -> npt.NDArray[np.float32]:
    """A test embedding: bag of hashed words (deterministic, instant)."""
    rows = np.zeros((len(texts), 64), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in re.findall(r"[a-z]+", text.lower()):
            rows[row, sum(map(ord, word)) % 64] += 1.0
    return rows


@pytest.fixture(scope="module")
def minilm() -> Embed:
    """The long-term memory's offline embedding model, as the gateway hands it over."""
    return embedder_of(make_embedding(SimpleNamespace()))


# --- the choice, as a table -----------------------------------------------------------
TABLE = [
    *(task(n, f"file task {n}") for n in range(1, 11)),
    task(11, "email task", source="email", reply_to="ada@example.com"),
    task(12, "chat task", source="api", reply_to="chat-7"),
    task(13, "chat question", source="api", reply_to="chat-7", status="needs_user"),
    task(14, "newest file task"),
]


@pytest.mark.parametrize(
    ("case", "fields", "cap", "similarity", "answers", "expected"),
    [
        ("all fit", {}, 20, None, None, {}),
        (
            "tui: the sender's 3 newest, then the newest",
            {},
            6,
            None,
            None,
            {"thread": ["T014", "T010", "T009"], "newest": ["T013", "T012", "T011"]},
        ),
        (
            "reply_to: the task waiting for the user first",
            {"channel": "api", "reply_to": "chat-7"},
            4,
            None,
            None,
            {"thread": ["T013", "T012"], "newest": ["T014", "T011"]},
        ),
        (
            "the sender's address is a task's reply_to",
            {"channel": "email", "sender": "ada@example.com"},
            2,
            None,
            None,
            {"thread": ["T011"], "newest": ["T014"]},
        ),
        (
            "answers: the answered task first, even the oldest",
            {"channel": "api", "reply_to": "chat-7"},
            4,
            None,
            "t1",
            {"thread": ["T001", "T013"], "newest": ["T014", "T012"]},
        ),
        (
            "similar after the thread, a quarter left for the newest",
            {"channel": "web"},
            8,
            {"T002": 0.9, "T005": 0.8, "T003": 0.7, "T004": 0.6, "T006": 0.5, "T007": 0.4},
            None,
            {
                "similar": ["T002", "T005", "T003", "T004", "T006", "T007"],
                "newest": ["T014", "T013"],
            },
        ),
        (
            "the thread takes at most half",
            {"channel": "api", "reply_to": "chat-7"},
            2,
            {"T001": 1.0},
            None,
            {"thread": ["T013"], "similar": ["T001"]},
        ),
    ],
)
def test_choose(
    case: str,
    fields: dict[str, str],
    cap: int,
    similarity: dict[str, float] | None,
    answers: str | None,
    expected: dict[str, list[str]],
) -> None:
    picked = choose(message("hello", **fields), TABLE, cap, answers=answers, similarity=similarity)
    assert len(picked.shown) == min(cap, len(TABLE))
    assert picked.cut == (cap < len(TABLE)) and picked.total == len(TABLE)
    by_reason: dict[str, list[str]] = {}
    for task_id, why in picked.reasons.items():
        by_reason.setdefault(why, []).append(task_id)
    assert by_reason == expected, case
    positions = [TABLE.index(t) for t in picked.shown]
    assert positions == sorted(positions)  # shown in the list's order


def test_task_vectors_embed_each_task_once(tmp_path: Path) -> None:
    batches: list[int] = []

    def counting(texts: list[str]) -> npt.NDArray[np.float32]:
        batches.append(len(texts))
        return words(texts)

    vectors = TaskVectors(counting)
    tasks = unrelated(40)
    first = vectors.scores("Print the holiday photos folder", tasks)
    assert batches == [41] and len(first) == 40
    assert max(first, key=first.__getitem__) == "T030"  # "Print the holiday photos folder"
    vectors.scores("another message", tasks)
    changed = tasks[0].model_copy(update={"description": "now about something else"})
    vectors.scores("a third", [changed, *tasks[1:30]])  # one changed, ten closed
    assert batches == [41, 1, 2]
    vectors.scores("a fourth", tasks)  # the ten closed ones come back: embedded again
    assert batches == [41, 1, 2, 12]


# --- the router -------------------------------------------------------------------------
def test_a_reply_finds_its_task_among_500(tmp_path: Path) -> None:
    asked = task(3, "Pick a colour for the poster", source="api", reply_to="chat-42")
    asked = asked.model_copy(update={"status": "needs_user", "summary": "Blue or green?"})
    todos = write_books(tmp_path, [*unrelated(2), asked, *unrelated(497, first=4)])
    merge = '{"action": "merge", "task_id": "T003", "mode": "update", "text": "green"}'
    model = ScriptedModel(merge)
    routed = run(
        MessageRouter(todos, model).route(message("green", channel="api", reply_to="chat-42"))
    )
    prompt = model.requests[0].messages[0].text
    ids = shown_ids(prompt)
    assert len(ids) == 20 and "T003" in ids
    assert "Showing 20 of 500 open tasks" in prompt
    assert routed.action == "update" and routed.todo.id == "T003"
    assert routed.todo.message_ids == ["m-new"] and routed.todo.status == "pending"


def test_a_similar_task_is_found_among_500_unrelated(tmp_path: Path, minilm: Embed) -> None:
    dinner = task(
        150,
        "Reserve a table for two at Luigi's trattoria",
        description="Reserve a table for two at Luigi's trattoria, Friday dinner at 8pm",
    )
    books = [*unrelated(149), dinner, *unrelated(350, first=151)]
    todos = write_books(tmp_path, books)
    text = "The dinner booking at Luigi's restaurant: we are four people now, not two."
    batches: list[int] = []

    def counting(texts: list[str]) -> npt.NDArray[np.float32]:
        batches.append(len(texts))
        return minilm(texts)

    router = MessageRouter(todos, ScriptedModel(NO_MERGE, NO_MERGE), candidates=12, embed=counting)
    offered = router.offer(message(text), todos.open_tasks())
    assert len(offered.shown) == 12 and offered.reasons["T150"] == "similar"
    without = MessageRouter(todos, None, candidates=12).offer(message(text), todos.open_tasks())
    assert "T150" not in {t.id for t in without.shown}  # found by similarity, not by chance
    run(router.route(message(text, "m-1")))
    run(router.route(message("Print the chess tournament results", "m-2")))
    # each task embedded once; then only the message; then it and the one new task (m-1's)
    assert batches == [501, 1, 2]


def test_the_prompt_says_when_the_list_was_cut(tmp_path: Path) -> None:
    todos = write_books(tmp_path, unrelated(5))
    model = ScriptedModel(NO_MERGE, NO_MERGE)
    run(MessageRouter(todos, model, candidates=5).route(message("one", "m-1")))
    run(MessageRouter(todos, model, candidates=5).route(message("two", "m-2")))  # 6 open now
    whole, cut = (r.messages[0].text for r in model.requests)
    assert "Showing" not in whole and "# Open tasks\n- T001 (" in whole
    assert len(shown_ids(whole)) == 5
    assert "# Open tasks\nShowing 5 of 6 open tasks" in cut and len(shown_ids(cut)) == 5
    many = Candidates(todos.open_tasks()[:2], 1000)
    prompt = MessageRouter(todos, model).build_request(message("x"), many).messages[0].text
    assert "Showing 2 of 1,000 open tasks" in prompt


def test_a_merge_into_a_task_not_shown_becomes_a_new_task(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    todos = write_books(tmp_path, unrelated(30))
    hidden = '{"action": "merge", "task_id": "T1", "mode": "update", "text": "x"}'
    shown = '{"action": "merge", "task_id": "T030", "mode": "update", "text": "x"}'
    model = ScriptedModel(hidden, shown)
    router = MessageRouter(todos, model, candidates=5)
    with caplog.at_level(logging.WARNING, logger="jarvis.gateway.router"):
        routed = run(router.route(message("more about it", "m-1")))
    assert "T001" not in shown_ids(model.requests[0].messages[0].text)
    assert routed.action == "new" and routed.todo.id == "T031"
    assert "not shown" in (routed.fallback or "")
    [line] = [r.getMessage() for r in caplog.records if r.name == "jarvis.gateway.router"]
    assert "message m-1" in line and "T1, an open task it was not shown" in line
    assert todos.get("T001").message_ids == []  # type: ignore[union-attr]
    merged = run(router.route(message("and this", "m-2")))  # a shown task takes a merge
    assert merged.action == "update" and merged.todo.id == "T030"


def test_a_failing_embedding_never_fails_routing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(texts: list[str]) -> npt.NDArray[np.float32]:
        raise RuntimeError("onnxruntime fell over")

    todos = write_books(tmp_path, unrelated(30))
    model = ScriptedModel(NO_MERGE, NO_MERGE)
    router = MessageRouter(todos, model, candidates=5, embed=broken)
    with caplog.at_level(logging.WARNING, logger="jarvis.gateway.candidates"):
        first = run(router.route(message("one", "m-1")))
        second = run(router.route(message("two", "m-2")))
    assert (first.todo.id, second.todo.id) == ("T031", "T032")
    assert shown_ids(model.requests[1].messages[0].text) == [f"T0{n}" for n in range(27, 32)]
    said = [r.getMessage() for r in caplog.records if r.name == "jarvis.gateway.candidates"]
    [warning] = said  # once, not for every message
    assert "without similarity" in warning and "onnxruntime fell over" in warning


def test_the_gateway_hands_the_setting_to_its_router(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    values = '{"router": {"candidates": 7}, "long_term_memory": false}'
    (tmp_path / "config" / "settings.json").write_text(values, encoding="utf-8")
    router = Gateway(load_settings(tmp_path), where=XDisplay.from_env())._router(ScriptedModel())
    assert router.candidates == 7 and router.similarity.vectors is None


def test_a_task_is_described_without_saying_anything_twice(tmp_path: Path) -> None:
    two_lines = task(1, "Print the report", description="Print the report\nonly page 3")
    titled = task(2, "Email Bob", description="write to bob about the party", priority=1)
    same = task(3, "Open the calculator", description="Open the calculator")
    text = describe_tasks([two_lines, titled, same])
    assert text.split("\n") == [
        "- T001 (pending, from tui): Print the report",
        "  only page 3",
        "- T002 (pending, priority high, from tui): Email Bob",
        "  write to bob about the party",
        "- T003 (pending, from tui): Open the calculator",
    ]
