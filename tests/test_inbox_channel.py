"""The inbox drop channel on a real folder, with real watchdog observers."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jarvis.events import EventBus, EventRecorder, MalformedEntry
from jarvis.gateway.channels.drop_files import split_front_matter, wanted
from jarvis.gateway.channels.inbox import InboxChannel
from jarvis.gateway.message_format import Message
from jarvis.gateway.queue import MessageQueue

NOTE = Path(__file__).parent / "data" / "drop_note.md"
OLD = time.time() - 3600


def drop(queue: MessageQueue, name: str, text: str, mtime: float | None = OLD) -> Path:
    queue.drop_dir.mkdir(parents=True, exist_ok=True)
    path = queue.drop_dir / name
    path.write_text(text, encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met before the deadline")
        await asyncio.sleep(0.02)


@pytest.fixture
def queue(tmp_path: Path) -> MessageQueue:
    return MessageQueue(tmp_path)


def test_front_matter() -> None:
    fields, body = split_front_matter("---\nsender: ada\nPriority: high\n---\nhello\n")
    assert fields == {"sender": "ada", "priority": "high"} and body == "hello\n"
    assert split_front_matter("---\njust a rule\n---\ntext") == ({}, "---\njust a rule\n---\ntext")
    assert split_front_matter("---\nsender: x\nno end") == ({}, "---\nsender: x\nno end")
    assert split_front_matter("plain") == ({}, "plain")


_VALUE = st.text(
    st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters="\"'"),
    max_size=20,
).map(str.strip)


@given(
    sender=_VALUE,
    priority=st.sampled_from(["high", "normal", "low", "urgent", "2"]),
    body=st.text(max_size=200).map(lambda t: t.replace("\r", "")),
    crlf=st.booleans(),
)
def test_front_matter_round_trips(sender: str, priority: str, body: str, crlf: bool) -> None:
    text = f"---\nsender: {sender}\npriority: {priority}\n---\n{body}"
    if crlf:
        text = text.replace("\n", "\r\n")
    fields, rest = split_front_matter(text)
    assert fields == {"sender": sender, "priority": priority}
    assert rest == body


@pytest.mark.parametrize(
    ("name", "ok"),
    [("note.md", True), ("NOTE.MD", True), (".note.md", False), ("note.md~", False),
     ("note.md.tmp", False), ("#note.md#", False), ("note.txt", False)],
)  # fmt: skip
def test_which_names_are_read(name: str, ok: bool) -> None:
    assert wanted(name) is ok


def test_a_drop_file_becomes_a_message(queue: MessageQueue) -> None:
    drop(queue, NOTE.name, NOTE.read_text(encoding="utf-8"))
    channel = InboxChannel(queue)
    [m] = asyncio.run(channel.scan())
    assert (m.sender, m.channel, m.priority, m.reply_to) == ("ada", "inbox", 1, "ada@example.com")
    assert m.source == "drop/drop_note.md"
    assert m.text == 'Open the file manager and make a folder called "Reports 2026" on the desktop.'
    assert queue.pending() == [m] and channel.arrived.is_set()
    assert not (queue.drop_dir / NOTE.name).exists()
    assert (queue.drop_dir / "processed" / NOTE.name).read_bytes() == NOTE.read_bytes()
    assert asyncio.run(channel.scan()) == []  # nothing new


def test_crash_between_append_and_move_imports_nothing_twice(queue: MessageQueue) -> None:
    channel = InboxChannel(queue)
    drop(queue, "task.md", "Open the calculator")
    [m] = asyncio.run(channel.scan())
    processed = queue.drop_dir / "processed" / "task.md"
    os.replace(processed, queue.drop_dir / "task.md")  # as if we died before the move
    assert asyncio.run(InboxChannel(queue).scan()) == [m]  # a restarted channel: not a new one
    assert [x.id for x in queue.pending()] == [m.id]
    assert not (queue.drop_dir / "task.md").exists()
    # later, after the message was handled and archived: still not imported again
    queue.claim_all()
    queue.archive(m.id, "completed", "T001")
    os.replace(processed, queue.drop_dir / "task.md")
    assert asyncio.run(InboxChannel(queue).scan()) == []
    assert queue.pending() == [] and queue.processing() == []
    # a file of the same name with new text is a new message, moved aside under another name
    drop(queue, "task.md", "Open the calculator again")
    [again] = asyncio.run(channel.scan())
    assert again.id != m.id
    assert len(list((queue.drop_dir / "processed").glob("task*.md"))) == 2


def test_files_still_being_written_and_temp_files_wait(queue: MessageQueue) -> None:
    channel = InboxChannel(queue, settle_s=60)
    fresh = drop(queue, "fresh.md", "half of a mess", mtime=None)
    for name in (".draft.md", "x.md.tmp", "y.md~", "notes.txt"):
        drop(queue, name, "ignored")
    assert asyncio.run(channel.scan()) == []
    assert fresh.exists() and queue.pending() == []
    os.utime(fresh, (OLD, OLD))  # the writer finished long ago
    [m] = asyncio.run(channel.scan())
    assert m.text == "half of a mess"
    assert sorted(p.name for p in queue.drop_dir.iterdir() if p.is_file()) == [
        ".draft.md",
        "notes.txt",
        "x.md.tmp",
        "y.md~",
    ]


def test_empty_and_odd_files_are_reported(tmp_path: Path) -> None:
    bus = EventBus()
    recorder = EventRecorder(bus)
    queue = MessageQueue(tmp_path)
    channel = InboxChannel(queue, bus=bus)
    empty = drop(queue, "empty.md", "---\nsender: x\n---\n\n")
    drop(queue, "odd.md", "---\npriority: whenever\nvia: email\n---\nDo the thing")
    [m] = asyncio.run(channel.scan())
    asyncio.run(channel.scan())
    assert m.priority is None and m.channel == "inbox" and m.text == "Do the thing"
    assert empty.exists()  # never deleted, never imported
    reasons = sorted(e.reason for e in recorder.of(MalformedEntry))
    assert len(reasons) == 3  # each reported once
    assert any("no message text" in r for r in reasons)
    assert any("priority" in r for r in reasons) and any("'via'" in r for r in reasons)


@pytest.mark.parametrize("polling", [False, True], ids=["inotify", "polling"])
def test_watcher_notices_drops_and_hand_edits(queue: MessageQueue, polling: bool) -> None:
    seen: list[Message] = []

    async def scenario() -> None:
        # a long scan interval: within the deadline only the watcher can wake the channel
        channel = InboxChannel(
            queue, poll_interval_s=300, settle_s=0.05, use_polling=polling, on_messages=seen.extend
        )
        await channel.start()
        try:
            await until(lambda: channel._worker is not None and not channel._wake.is_set())
            tmp = queue.drop_dir / ".incoming.md.tmp"
            tmp.write_text("---\nsender: bob\n---\nDropped in", encoding="utf-8")
            os.replace(tmp, queue.drop_dir / "incoming.md")  # how a careful writer drops
            await until(lambda: len(seen) == 1)
            assert channel.arrived.is_set()
            channel.arrived.clear()
            with queue.inbox_file.path.open("a", encoding="utf-8") as fh:
                fh.write("\n## [2026-02-01 10:00:00] from:me via:inbox\nTyped by hand\n---\n")
            await until(lambda: len(seen) == 2)
            assert channel.arrived.is_set()
        finally:
            await channel.stop()

    asyncio.run(scenario())
    assert [(m.sender, m.text) for m in seen] == [("bob", "Dropped in"), ("me", "Typed by hand")]
    assert [m.id for m in queue.pending()] == [m.id for m in seen]


def test_the_channels_own_reads_of_the_inbox_do_not_wake_it(queue: MessageQueue) -> None:
    """Each scan reads inbox.md; inotify reports that read (opened, closed unwritten):
    woken by it, the channel would scan again and again, a core busy for nothing."""
    seen: list[Message] = []
    scans = 0

    async def scenario() -> None:
        nonlocal scans
        channel = InboxChannel(queue, poll_interval_s=300, settle_s=0.05, on_messages=seen.extend)
        scan = channel.scan

        async def counted() -> list[Message]:
            nonlocal scans
            scans += 1
            return await scan()

        channel.scan = counted  # type: ignore[method-assign]
        await channel.start()
        try:
            drop(queue, "first.md", "one")
            await until(lambda: len(seen) == 1)
            for _ in range(20):  # reads, as each scan makes
                await asyncio.to_thread(queue.pending)
            drop(queue, "second.md", "two")  # a change after the reads: it wakes the channel
            await until(lambda: len(seen) == 2)
            with pytest.raises(AssertionError):  # woken by its reads, it would go on and on
                await until(lambda: scans >= 12, timeout=1.0)
        finally:
            await channel.stop()

    asyncio.run(scenario())
    assert [m.text for m in seen] == ["one", "two"]
    assert scans < 12, f"{scans} scans for two drops"


def test_without_any_file_watcher_a_scan_still_finds_drops(
    queue: MessageQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    import jarvis.gateway.channels.inbox as inbox

    class Refused:
        def schedule(self, *args: object, **kwargs: object) -> None:
            raise OSError(28, "inotify watch limit reached")

    monkeypatch.setattr(inbox, "Observer", Refused)
    monkeypatch.setattr(inbox, "PollingObserver", Refused)
    seen: list[Message] = []

    async def scenario() -> None:
        channel = InboxChannel(queue, poll_interval_s=0.1, settle_s=0.05, on_messages=seen.extend)
        await channel.start()
        try:
            assert channel._observer is None  # no watcher could start
            drop(queue, "late.md", "---\nsender: cron\n---\nFound by a scan")
            await until(lambda: len(seen) == 1)
        finally:
            await channel.stop()

    asyncio.run(scenario())
    assert [(m.sender, m.text) for m in seen] == [("cron", "Found by a scan")]
    assert (queue.drop_dir / "processed" / "late.md").exists()
