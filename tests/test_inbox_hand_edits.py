"""``messages/inbox.md`` edited by hand: the near misses people type as headings (no space
after ``##``, an unquoted sender name with spaces, a missing ``---``) are read as headings,
each message its own task, with one log line per forgiven heading; a text line shaped like
one of them is escaped when written, so round trips stay exact; a 5 MB message appended by
hand is refused into ``drop/refused/`` in one line, read in chunks (the reader's memory,
measured in a child process, barely moves)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from jarvis.gateway.message_format import forgiven_headings, format_message, parse_messages
from tests.agent_harness import agent_settings
from tests.api_harness import scripted, serving_api, until
from tests.fake_model import FakeModel

ROOT = Path(__file__).resolve().parent.parent
HAND_TYPED = """# Jarvis inbox

## [2026-11-28 09:00:00] from:me
First, typed as the inbox says.

---

##[2026-11-28 09:01:00] from:me
Second, no space after the hashes.

---
## [2026-11-28 09:02:00] from:Ada Lovelace via:inbox
Third, a name with a space and no quotes; no closing line.
## [2026-11-28 09:03:00] from:me
Fourth, after the missing line.

---
"""
TEXTS = [
    "First, typed as the inbox says.",
    "Second, no space after the hashes.",
    "Third, a name with a space and no quotes; no closing line.",
    "Fourth, after the missing line.",
]


def test_near_misses_are_read_as_headings_and_said() -> None:
    doc = parse_messages(HAND_TYPED)
    assert [m.text for m in doc.entries()] == TEXTS
    assert [m.sender for m in doc.entries()] == ["me", "me", "Ada Lovelace", "me"]
    assert doc.malformed() == [] and doc.warnings == []
    assert forgiven_headings(HAND_TYPED) == [
        (8, "##[2026-11-28 09:01:00] from:me", "no space after '##'"),
        (
            12,
            "## [2026-11-28 09:02:00] from:Ada Lovelace via:inbox",
            "a value with spaces not in double quotes; no '---' line closing the message",
        ),
    ]


@pytest.mark.parametrize(
    "line",
    [
        "##[2026-11-28 09:01:00] from:me",
        "##   [2026-11-28 09:01] from:me",
        "## [2026-11-28 09:02:00] from:Ada Lovelace",
        "\\##[2026-11-28 09:01:00] from:me",
        "\\\\## [2026-11-28 09:02:00] from:Ada Lovelace via:x",
    ],
)
def test_a_text_line_shaped_like_a_forgiven_heading_is_escaped(line: str) -> None:
    [message] = parse_messages(HAND_TYPED.split("\n##[")[0]).entries()
    message.text = f"before\n{line}\nafter"
    written = format_message(message)
    assert f"\n\\{line}\n" in written
    [back] = parse_messages(written).entries()
    assert back.text == message.text


async def test_each_near_miss_becomes_its_own_task(
    tmp_path: Path,
    fake_model: FakeModel,
    monkeypatch: Any,
    caplog: pytest.LogCaptureFixture,
    xserver: Any,
) -> None:
    fake_model.set_default(scripted([]))  # each task finishes at its first step
    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200)
    with caplog.at_level(logging.INFO, logger="jarvis.gateway.queue"):
        async with serving_api(settings) as api:
            inbox = api.data_dir / "messages" / "inbox.md"
            inbox.write_text(HAND_TYPED, encoding="utf-8")
            ids = [f"T00{n}" for n in range(1, 5)]
            await until(lambda: all(api.gateway.todos.get(i) is not None for i in ids), 60)
            todos = [api.gateway.todos.get(i) for i in ids]
            assert api.gateway.todos.get("T005") is None
            assert [len(t.message_ids) for t in todos if t is not None] == [1, 1, 1, 1]
            messages = [api.gateway.queue.find(t.message_ids[0]) for t in todos if t]
            assert [m.text for m in messages if m is not None] == TEXTS
            assert messages[2] is not None and messages[2].sender == "Ada Lovelace"
    said = [r.getMessage() for r in caplog.records if "as a message heading" in r.getMessage()]
    assert len(said) == 2
    assert said[0].endswith(
        "inbox.md:8: read '##[2026-11-28 09:01:00] from:me' as a message heading "
        "(no space after '##')"
    )


READER = """
import json, sys
from pathlib import Path
from jarvis.gateway.queue import MessageQueue

def peak():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

queue = MessageQueue(Path(sys.argv[1]))
queue.append("warm up one", sender="me")
queue.append("warm up two", sender="me")
queue.pending()
before = peak()
print(json.dumps({"ready": before}), flush=True)
sys.stdin.readline()  # the test appends by hand meanwhile
texts = [m.text for m in queue.pending()]
print(json.dumps({"before": before, "after": peak(), "texts": texts}), flush=True)
"""
MB = 1024 * 1024


def append_by_hand(inbox: Path, size: int) -> None:
    line = "All work and no play makes Jack a dull boy. " * 20 + "\n"
    with inbox.open("a", encoding="utf-8") as out:
        out.write("\n## [2026-11-28 10:00:00] from:me\n")
        for _ in range(size // len(line) + 1):
            out.write(line)
        out.write("\n---\n\n##[2026-11-28 10:01:00] from:me\nafter the big one\n\n---\n")


def test_a_5mb_hand_appended_message_is_refused_in_one_line_read_in_chunks(
    tmp_path: Path,
) -> None:
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(tmp_path)],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert reader.stdin is not None and reader.stdout is not None
    json.loads(reader.stdout.readline())
    inbox = tmp_path / "messages" / "inbox.md"
    append_by_hand(inbox, 5 * MB)
    out, err = reader.communicate("go\n", timeout=120)
    assert reader.returncode == 0, err
    found = json.loads(out)
    assert found["texts"] == ["warm up one", "warm up two", "after the big one"]
    # the daemon may grow by at most 50 MB; reading the inbox whole took 30 MB of that
    # for this message (measured), in chunks it takes next to nothing
    assert found["after"] - found["before"] < 10 * MB
    [refused] = (tmp_path / "messages" / "drop" / "refused").iterdir()
    assert refused.stat().st_size > 5 * MB
    assert refused.read_text(encoding="utf-8").startswith("## [2026-11-28 10:00:00] from:me\n")
    assert inbox.stat().st_size < 4096
    lines = [line for line in err.splitlines() if "was not taken" in line]
    assert len(lines) == 1
    assert "over inbox.max_message_chars, 100000" in lines[0] and str(refused) in lines[0]
