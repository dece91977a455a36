"""Message entries (parser, writer, round trips) and the MessageQueue on a real data dir."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jarvis.cli import build_parser
from jarvis.config import load_settings
from jarvis.events import EventBus, EventRecorder, MalformedEntry
from jarvis.gateway import locked_file
from jarvis.gateway.locked_file import ChangedOnDisk, MarkdownFile
from jarvis.gateway.markdown import Malformed
from jarvis.gateway.message_format import (
    Message,
    content_id,
    format_message,
    parse_messages,
    render_messages,
)
from jarvis.gateway.queue import MessageQueue

DATA = Path(__file__).parent / "data"
SEED = (DATA / "inbox_seed.md").read_text(encoding="utf-8")


def msg(text: str = "hello", **fields: object) -> Message:
    base: dict[str, object] = {"id": "m-1", "timestamp": datetime(2026, 2, 1, 15, 30), "text": text}
    return Message.model_validate(base | fields)


# --- parser ---------------------------------------------------------------------------
def test_seed_inbox_reads_every_entry() -> None:
    doc = parse_messages(SEED)
    entries = doc.entries()
    assert [m.sender for m in entries] == ["user", "Ada Lovelace", "me", "李雷", "user"]
    ada = entries[1]
    assert ada.channel == "email" and ada.priority == 1
    assert ada.reply_to == "ada@example.com" and ada.meta == {"subject": "Quarterly report"}
    assert ada.text.endswith("Thanks!\nAda")
    assert doc.preamble.startswith("# Jarvis inbox")


def test_hand_written_entry_gets_a_stable_id_and_is_marked_for_write_back() -> None:
    doc = parse_messages(SEED)
    by_hand = doc.entries()[2]
    assert by_hand.id == content_id(by_hand) and by_hand.id.startswith("m-20260201-154000-")
    assert by_hand.timestamp == datetime(2026, 2, 1, 15, 40)
    assert doc.changed
    assert parse_messages(SEED).entries()[2].id == by_hand.id  # same entry, same id


def test_headings_and_rules_inside_a_body_stay_in_the_body() -> None:
    entries = parse_messages(SEED).entries()
    assert "## Notes (a markdown heading inside the text)\n### bar" in entries[2].text
    quoted = entries[4].text
    assert "\n## [2026-01-31 09:00:00] from:bob via:tui id:m-old\n" in quoted  # unescaped
    assert "\n---\n\nstill the same message." in quoted
    assert entries[3].text == "打开记事本，写下“你好，世界”，然后保存到桌面。"


def test_malformed_section_is_kept_verbatim_with_a_reason() -> None:
    doc = parse_messages(SEED)
    [bad] = doc.malformed()
    assert bad.raw.startswith("## [2026-02-01 16:05:00] from:user via:tui priority:urgent")
    assert "priority" in bad.reason and bad.line > 1
    assert bad.raw in render_messages(doc)


def test_seed_rewrite_is_stable() -> None:
    once = render_messages(parse_messages(SEED))
    assert parse_messages(once) == parse_messages(SEED)
    assert render_messages(parse_messages(once)) == once
    assert "\\## [2026-01-31 09:00:00] from:bob" in once  # the quoted header stays escaped


def test_crlf_file_reads_like_lf() -> None:
    assert parse_messages(SEED.replace("\n", "\r\n")) == parse_messages(SEED)


@pytest.mark.parametrize(
    "text",
    [
        "## [2026-02-01 09:00] from:a\n\n\n\nhello\n\n\n\n---\n\n\n",  # extra blank lines
        "## [2026-02-01 09:00] from:a\nhello",  # no separator at the end of the file
        "## [2026-02-01T09:00:00]   from:a   \nhello\n---",  # T separator, loose spacing
    ],
)
def test_hand_written_variants(text: str) -> None:
    [m] = parse_messages(text).entries()
    assert (m.text, m.sender, m.channel) == ("hello", "a", "inbox")
    assert m.timestamp == datetime(2026, 2, 1, 9, 0)


def test_near_miss_header_is_text_with_a_warning() -> None:
    doc = parse_messages("## [2026-02-01 09:00] from:a\nhi\n## [draft] notes\nmore\n---\n")
    [m] = doc.entries()
    assert m.text == "hi\n## [draft] notes\nmore"
    assert [w.raw for w in doc.warnings] == ["## [draft] notes"]


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        ("## [2026-02-30 09:00:00] from:a", "timestamp"),
        ("## [2026-02-01 09:00:00] from:a from:b", "twice"),
        ("## [2026-02-01 09:00:00] id:bad/id", "id"),
        ("## [2026-02-01 09:00:00] from:a", "no text"),
    ],
)
def test_unreadable_headers_are_malformed(header: str, reason: str) -> None:
    body = "" if reason == "no text" else "text"
    [item] = parse_messages(f"{header}\n{body}\n---\n").items
    assert isinstance(item, Malformed) and reason in item.reason


def test_body_line_that_is_a_header_is_escaped_on_write() -> None:
    text = (
        "look:\n## [2026-02-01 09:00:00] from:x\n\\## [2026-02-01 09:00:00] from:y\n**Result:** no"
    )
    m = msg(text, outcome="completed", result="done\n## [2026-01-01 00:00:00] id:z")
    written = format_message(m)
    assert "\n\\## [2026-02-01 09:00:00] from:x\n\\\\## [2026-02-01" in written
    assert "\n\\**Result:** no\n" in written
    assert parse_messages(written).entries() == [m]
    waiting = msg(text)  # not archived: a **Result:** line is plain text
    assert "\n**Result:** no\n" in format_message(waiting)
    assert parse_messages(format_message(waiting)).entries() == [waiting]
    with pytest.raises(ValueError, match="outcome"):
        msg("x", result="r")


def test_values_with_spaces_and_quotes_are_quoted() -> None:
    m = msg(sender='Ada "the Countess" L', channel="e mail", meta={"subject": 'a\\b "c"'})
    header = format_message(m).split("\n", 1)[0]
    assert 'from:"Ada \\"the Countess\\" L"' in header
    assert parse_messages(format_message(m)).entries() == [m]


# --- property-based round trips ----------------------------------------------------------
names = st.text(min_size=1, max_size=20).filter(lambda s: s.split())
messages = st.builds(
    Message,
    id=st.integers(0, 10**9).map(lambda n: f"m-{n:x}"),
    timestamp=st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)),
    sender=names,
    channel=names,
    text=st.text(min_size=1, max_size=80).filter(lambda s: s.strip()),
    priority=st.none() | st.integers(-5, 5),
    reply_to=st.none() | st.text(max_size=20),
    source=st.none() | st.text(max_size=20),
    task_id=st.none() | st.integers(1, 9999).map(lambda n: f"T{n:03d}"),
    outcome=st.sampled_from(["completed", "failed", "merged"]),
    result=st.none() | st.text(max_size=40),
    meta=st.dictionaries(st.sampled_from(["subject", "thread", "x_a"]), st.text(max_size=10)),
)


@settings(max_examples=120, deadline=None)
@given(
    st.lists(
        messages | messages.map(lambda m: m.model_copy(update={"outcome": None, "result": None})),
        max_size=3,
    )
)
def test_messages_round_trip(items: list[Message]) -> None:
    doc = parse_messages(render_messages(parse_messages("")))
    doc.items.extend(items)
    written = render_messages(doc)
    assert parse_messages(written).entries() == items
    assert render_messages(parse_messages(written)) == written


line_pieces = st.sampled_from(
    [
        "## [2026-02-01 15:30:00] from:user via:tui id:m-1",
        "## [2026-02-01 15:30] from:a",
        "## [2026-02-01 15:30:00] id:m-1",
        "## [2026-02-01 15:30:00] id:m-2 outcome:completed",
        "## [2026-02-31 15:30:00] from:a",
        "## [draft] notes",
        "\\## [2026-02-01 15:30:00] from:x",
        "**Result:** done",
        "\\**Result:** x",
        "---",
        "  ---  ",
        "",
        "   ",
        "## heading",
        "### [T001] task",
    ]
)
documents = st.lists(line_pieces | st.text(max_size=30), max_size=25).map("\n".join)
line_endings = st.sampled_from(["\n", "\r\n", "\r"])


@settings(max_examples=200, deadline=None)
@given(documents, line_endings)
def test_parse_write_parse_is_stable(text: str, newline: str) -> None:
    first = parse_messages(text.replace("\n", newline))
    written = render_messages(first)
    assert parse_messages(written) == first
    assert render_messages(parse_messages(written)) == written


# --- the queue --------------------------------------------------------------------------
@pytest.fixture
def queue(tmp_path: Path) -> MessageQueue:
    return MessageQueue(tmp_path)


def entry_ids(path: Path) -> list[str]:
    return [m.id for m in parse_messages(path.read_text(encoding="utf-8")).entries()]


def test_append_writes_the_documented_format(queue: MessageQueue) -> None:
    m = queue.append("Open Chrome and search today's weather", sender="user", channel="tui")
    text = queue.inbox_file.path.read_text(encoding="utf-8")
    header = f"## [{m.timestamp:%Y-%m-%d %H:%M:%S}] from:user via:tui id:{m.id}"
    assert f"{header}\nOpen Chrome and search today's weather\n\n---\n" in text
    assert queue.pending() == [m]


def test_append_rejects_empty_text_and_bad_priority(queue: MessageQueue) -> None:
    with pytest.raises(ValueError, match="text"):
        queue.append(" \n\n ")
    with pytest.raises(ValueError, match="priority"):
        queue.append("x", priority="urgent")
    assert queue.pending() == []


def test_append_with_an_id_is_idempotent(queue: MessageQueue) -> None:
    first = queue.append("once", message_id="m-fixed-1")
    again = queue.append("once", message_id="m-fixed-1")
    assert again == first and len(queue.pending()) == 1
    queue.claim_all()
    queue.archive("m-fixed-1", "completed", "T001")
    assert queue.append("once", message_id="m-fixed-1").outcome == "completed"
    assert queue.pending() == []


def test_hand_written_entry_gets_its_id_written_back(queue: MessageQueue) -> None:
    queue.append("from the daemon")
    with queue.inbox_file.path.open("a", encoding="utf-8") as fh:
        fh.write("\n## [2026-02-01 15:40:00] from:me via:inbox\nby hand\n\n---\n")
    pending = queue.pending()
    assert [m.text for m in pending] == ["from the daemon", "by hand"]
    assert f"id:{pending[1].id}" in queue.inbox_file.path.read_text(encoding="utf-8")


def test_claim_takes_the_most_urgent_then_the_oldest(queue: MessageQueue) -> None:
    a = queue.append("a")
    b = queue.append("b", priority="high")
    c = queue.append("c")
    assert queue.claim_next() == b
    assert queue.claim_all() == [a, c]
    assert queue.claim_next() is None
    assert [m.id for m in queue.processing()] == [b.id, a.id, c.id]
    assert queue.pending() == []


def test_archive_records_the_outcome(queue: MessageQueue) -> None:
    m = queue.append("print page 3")
    queue.claim_all()
    done = queue.archive(m.id, "completed", task_id="T002", summary="Printed on the HP.")
    assert queue.processing() == []
    [archived] = queue.archived(done.archived_at.date())  # type: ignore[union-attr]
    assert archived == done
    assert (archived.outcome, archived.task_id, archived.result) == (
        "completed",
        "T002",
        "Printed on the HP.",
    )
    assert archived.text == "print page 3" and archived.same_as(m)
    assert queue.archive(m.id, "completed") == done  # again: nothing new
    with pytest.raises(KeyError):
        queue.archive("m-nope", "completed")


def test_crash_between_processing_write_and_inbox_removal(queue: MessageQueue) -> None:
    m = queue.append("do it")
    inbox_before = queue.inbox_file.path.read_text(encoding="utf-8")
    assert queue.claim_all() == [m]
    # the crash: processing.md was written, inbox.md still has the message
    queue.inbox_file.path.write_text(inbox_before, encoding="utf-8")
    assert queue.recover() == [m]
    assert queue.claim_all() == []
    assert entry_ids(queue.inbox_file.path) == []
    assert entry_ids(queue.processing_file.path) == [m.id]


def test_crash_between_archive_write_and_processing_removal(queue: MessageQueue) -> None:
    m = queue.append("do it")
    queue.claim_all()
    processing_before = queue.processing_file.path.read_text(encoding="utf-8")
    queue.archive(m.id, "failed")
    queue.processing_file.path.write_text(processing_before, encoding="utf-8")
    assert queue.recover() == []
    assert entry_ids(queue.processing_file.path) == []


def test_same_id_with_other_content_is_not_a_duplicate(queue: MessageQueue) -> None:
    m = queue.append("first")
    queue.claim_all()
    with queue.inbox_file.path.open("a", encoding="utf-8") as fh:  # copy-pasted, then edited
        fh.write(f"## [2026-02-01 15:40:00] from:me via:inbox id:{m.id}\nsecond\n---\n")
    [again] = queue.claim_all()
    assert again.text == "second" and again.id != m.id
    assert [x.text for x in queue.processing()] == ["first", "second"]


def test_malformed_sections_stay_and_are_reported_once(tmp_path: Path) -> None:
    bus = EventBus()
    recorder = EventRecorder(bus)
    queue = MessageQueue(tmp_path, bus=bus)
    queue.inbox_file.path.parent.mkdir(parents=True)
    queue.inbox_file.path.write_text(SEED, encoding="utf-8")
    claimed = queue.claim_all()
    assert len(claimed) == 5
    queue.pending()
    queue.append("later")
    events = recorder.of(MalformedEntry)
    assert len(events) == 1 and "priority" in events[0].reason
    text = queue.inbox_file.path.read_text(encoding="utf-8")
    assert "## [2026-02-01 16:05:00] from:user via:tui priority:urgent\nPriority" in text
    assert [p.reason for p in queue.problems()] == [events[0].reason]


def test_find_looks_everywhere(queue: MessageQueue) -> None:
    a, b = queue.append("a"), queue.append("b")
    queue.claim_next()
    assert queue.find(a.id) == a and queue.find(b.id) == b
    queue.archive(a.id, "completed")
    assert queue.find(a.id, a.timestamp.date()).outcome == "completed"  # type: ignore[union-attr]
    assert queue.find("m-missing") is None


def test_a_write_is_refused_when_the_file_changed_underneath(tmp_path: Path) -> None:
    file = MarkdownFile(tmp_path / "x.md")
    file.path.write_text("one\n", encoding="utf-8")
    snapshot = file.read()
    file.path.write_text("one, edited by a person\n", encoding="utf-8")
    with pytest.raises(ChangedOnDisk):
        file.replace(snapshot, "ours\n")
    assert file.path.read_text(encoding="utf-8") == "one, edited by a person\n"
    file.replace(file.read(), "ours\n")
    assert file.path.read_text(encoding="utf-8") == "ours\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_change_is_tried_again_while_the_file_keeps_changing_then_given_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    conflicts = iter(range(20))

    def busy() -> str:
        if next(conflicts) < 19:  # another writer got in first nineteen times
            raise ChangedOnDisk("x.md")
        return "written"

    assert locked_file.retrying(busy, "adding") == "written"  # no count of tries loses it

    def always() -> str:
        raise ChangedOnDisk("x.md")

    monkeypatch.setattr(locked_file, "WRITE_PATIENCE_S", 0.05)
    with pytest.raises(ChangedOnDisk, match=r"adding: the file kept changing; gave up after"):
        locked_file.retrying(always, "adding")


def test_invalid_utf8_is_kept_byte_for_byte(queue: MessageQueue) -> None:
    raw = b"## [2026-02-01 09:00:00] from:a id:m-x\ncaf\xe9\n\n---\n"
    queue.inbox_file.path.parent.mkdir(parents=True)
    queue.inbox_file.path.write_bytes(raw)
    m = queue.append("valid")
    assert queue.pending() == [m]
    assert queue.inbox_file.path.read_bytes().startswith(raw.rstrip(b"\n"))
    assert "UTF-8" in queue.problems()[0].reason


# --- CLI ----------------------------------------------------------------------------------
def run_cli(argv: list[str], tmp_path: Path) -> int:
    parser = build_parser()  # the real `jarvis` parser: --data-dir is the CLI's
    args = parser.parse_args(argv)
    return int(args.handler(args, load_settings(args.data_dir)))


def test_cli_add_and_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(tmp_path / "d")
    argv = ["inbox", "add", "Open the calculator", "--from", "bob", "--priority", "high"]
    assert run_cli([*argv, "--data-dir", data], tmp_path) == 0
    assert "queued m-" in capsys.readouterr().out
    assert run_cli(["inbox", "--data-dir", data, "list"], tmp_path) == 0
    out = capsys.readouterr().out
    assert "waiting: 1" in out and "from bob" in out and "priority high" in out
    assert "Open the calculator" in out
    [m] = MessageQueue(tmp_path / "d").pending()
    assert (m.sender, m.channel, m.priority) == ("bob", "cli", 1)


def test_cli_rejects_a_bad_priority(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        run_cli(["inbox", "add", "x", "--priority", "soonish"], tmp_path)
