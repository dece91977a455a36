"""The message archive at scale, through MessageQueue on real files: lookups by id read one
section of one day file (through the index), the index is rebuilt and caught up from the
files, and an append cut off by a crash is removed without touching the other entries."""

from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from jarvis.gateway import durable_append, message_archive
from jarvis.gateway.markdown import now
from jarvis.gateway.message_archive import INDEX_NAME, render_day
from jarvis.gateway.message_format import Message, format_message, parse_messages
from jarvis.gateway.queue import MessageQueue

LAST_DAY = date(2026, 3, 31)
DAYS, PER_DAY = 90, 40


def archived(day: date, n: int, text: str = "") -> Message:
    """An archived message in canonical form (built without validation: thousands are made)."""
    at = datetime.combine(day, datetime.min.time()) + timedelta(hours=8, seconds=n)
    return Message.model_construct(
        id=f"m-{day:%Y%m%d}-{n:04d}",
        timestamp=at,
        sender="fleet",
        channel="api",
        text=text or f"task {n} of {day}\n---\nwith a rule inside",
        task_id=f"T{n}",
        outcome="completed",
        archived_at=at + timedelta(minutes=1),
        result=f"done {n}",
    )


def write_history(data: Path, days: int = DAYS, per_day: int = PER_DAY) -> list[date]:
    """``days`` day files ending LAST_DAY, in the module's own format; oldest first."""
    folder = data / "messages" / "archive"
    folder.mkdir(parents=True, exist_ok=True)
    dates = [LAST_DAY - timedelta(days=i) for i in reversed(range(days))]
    for day in dates:
        text = render_day(day, (archived(day, n) for n in range(per_day)))
        (folder / f"{day}.md").write_text(text, encoding="utf-8")
    return dates


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("history")
    write_history(data)
    return data


@pytest.fixture
def history(template: Path, tmp_path: Path) -> Iterator[Path]:
    shutil.copytree(template, tmp_path, dirs_exist_ok=True)
    MessageQueue(tmp_path).find("m-none")  # builds the index, as a first start does
    yield tmp_path


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the archive's day files opened from now on."""
    names: list[str] = []
    real_open = os.open

    def spy(path: object, *args: object, **kwargs: object) -> int:
        name = os.fspath(path)  # type: ignore[call-overload]
        if isinstance(name, str) and "/archive/" in name and name.endswith(".md"):
            names.append(Path(name).name)
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", spy)
    return names


def put_in_processing(queue: MessageQueue, text: str) -> Message:
    message = queue.append(text)
    assert queue.claim_next() == message
    return message


def test_a_rendered_day_reads_back() -> None:
    records = [archived(LAST_DAY, n) for n in range(3)]
    text = render_day(LAST_DAY, records)
    assert text.startswith(f"# Jarvis archive {LAST_DAY}\n\n## [")
    assert parse_messages(text).entries() == records


def test_archiving_appends_exactly_what_a_rewrite_wrote(tmp_path: Path) -> None:
    queue = MessageQueue(tmp_path)
    done = []
    for text in ("one\n---\nstill one", "two", "three"):
        m = put_in_processing(queue, text)
        done.append(queue.archive(m.id, "completed", "T1", "ok\n\n---\n\nreally"))
    path = queue.archive_file(now().date()).path
    assert path.read_text(encoding="utf-8") == render_day(now().date(), done)
    assert not durable_append.intent_path(path).read_bytes()  # cleared after each append
    assert queue.archived(now().date()) == done


def test_a_lookup_by_id_without_a_date_reads_one_day_file(history: Path, opened: list[str]) -> None:
    queue = MessageQueue(history)  # a later start: the index is there
    old = LAST_DAY - timedelta(days=60)
    found = queue.find(f"m-{old:%Y%m%d}-0017")
    assert found == archived(old, 17)
    assert opened == [f"{old}.md"]
    opened.clear()
    assert queue.find("m-20250101-0000") is None  # a miss opens no day file
    assert opened == []


def test_the_duplicate_check_refuses_a_resent_archived_id(history: Path, opened: list[str]) -> None:
    queue = MessageQueue(history)
    old = LAST_DAY - timedelta(days=60)
    again = queue.append("sent again", message_id=f"m-{old:%Y%m%d}-0003")
    assert again == archived(old, 3) and again.outcome == "completed"
    assert queue.pending() == []
    assert f"{old}.md" in opened and len(set(opened)) == 1


def test_a_deleted_or_unreadable_index_is_rebuilt(history: Path) -> None:
    folder = history / "messages" / "archive"
    day = LAST_DAY - timedelta(days=45)
    for damage in ("delete", "garbage"):
        for suffix in ("", "-wal", "-shm"):
            (folder / f"{INDEX_NAME}{suffix}").unlink(missing_ok=True)
        if damage == "garbage":
            (folder / INDEX_NAME).write_bytes(b"not a database" * 100)
        queue = MessageQueue(history)
        assert queue.find(f"m-{day:%Y%m%d}-0039") == archived(day, 39)
        count = queue.history.index.one("SELECT count(*) FROM messages")
        assert count == (DAYS * PER_DAY,)
        queue.history.close()


def test_a_day_file_appended_behind_the_index_is_caught_up(
    history: Path, caplog: pytest.LogCaptureFixture
) -> None:
    queue = MessageQueue(history)
    day = LAST_DAY - timedelta(days=30)
    path = queue.archive_file(day).path
    assert queue.find(f"m-{day:%Y%m%d}-0000") is not None
    size = path.stat().st_size
    late = archived(day, 500, "added by another tool")
    with path.open("a", encoding="utf-8") as fh:
        fh.write(f"\n{format_message(late)}\n")
    queue.history.resync_s = 0.0  # (else: at the next start, or within RESYNC_S)
    caplog.set_level(logging.INFO, logger=message_archive.__name__)
    assert queue.find(late.id) == late
    assert f"from byte {size}" in caplog.text
    assert MessageQueue(history).find(late.id) == late  # the index file itself caught up


def test_a_hand_edited_day_file_is_indexed_again(history: Path) -> None:
    queue = MessageQueue(history)
    day = LAST_DAY - timedelta(days=10)
    path = queue.archive_file(day).path
    kept = [archived(day, n) for n in range(PER_DAY) if n != 5]
    edited = [m.model_copy(update={"result": "checked by hand"}) for m in kept]
    path.write_text(render_day(day, edited), encoding="utf-8")
    queue.history.resync_s = 0.0
    assert queue.find(f"m-{day:%Y%m%d}-0005") is None
    assert queue.find(kept[-1].id) == edited[-1]
    assert MessageQueue(history).find(kept[0].id) == edited[0]


class Crash(BaseException):
    """The process dies here (nothing after it runs, no handler catches it)."""


def test_a_crash_mid_append_loses_no_entry_and_is_repaired(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    queue = MessageQueue(tmp_path)
    first = [queue.archive(put_in_processing(queue, f"m{i}").id, "completed") for i in range(3)]
    victim = put_in_processing(queue, "cut off\n\n---\n\nby the crash")
    writes = []
    real_write = durable_append._write_all

    def crashing(fd: int, data: bytes) -> None:
        writes.append(data)
        if len(writes) == 2:  # the first is the intent; the crash cuts this one short
            real_write(fd, data[: data.index(b"by the crash")])
            raise Crash
        real_write(fd, data)

    monkeypatch.setattr(durable_append, "_write_all", crashing)
    with pytest.raises(Crash):
        queue.archive(victim.id, "failed", summary="never recorded")
    monkeypatch.undo()
    path = queue.archive_file(now().date()).path
    assert path.read_text(encoding="utf-8").count("cut off") == 1  # the torn half is there

    again = MessageQueue(tmp_path)  # the next start
    caplog.set_level(logging.WARNING)
    assert again.processing() == [victim]
    assert again.archived(now().date()) == first
    assert "cut off by a crash" in caplog.text
    assert path.read_text(encoding="utf-8") == render_day(now().date(), first)
    assert again.problems() == []
    done = again.archive(victim.id, "completed", summary="ok")
    assert again.archived(now().date()) == [*first, done]
    assert again.find(victim.id) == done


def test_a_torn_last_section_is_cut_where_it_looks_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The crash came after the bytes were written but before they were all on disk: the
    file ends in a prefix of the entry that stops right after a ``---`` line of its text,
    which reads as a whole (shorter) entry. The intent tells it apart."""
    queue = MessageQueue(tmp_path)
    first = [queue.archive(put_in_processing(queue, f"m{i}").id, "completed") for i in range(2)]
    victim = put_in_processing(queue, "keep this\n\n---\n\nand this")
    before = queue.processing_file.path.read_text(encoding="utf-8")
    monkeypatch.setattr(durable_append, "clear_intent", lambda path: None)
    queue.archive(victim.id, "completed", summary="done")
    monkeypatch.undo()
    queue.processing_file.path.write_text(before, encoding="utf-8")  # not removed yet
    path = queue.archive_file(now().date()).path
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: text.index("\nand this") + 1], encoding="utf-8")  # ends "---\n"
    assert parse_messages(path.read_text(encoding="utf-8")).entries()[-1].text == "keep this"

    again = MessageQueue(tmp_path)
    assert again.archived(now().date()) == first
    assert again.processing() == [victim]
    assert again.find(victim.id) == victim  # in processing, whole
    done = again.archive(victim.id, "completed", summary="done")
    assert done.text == "keep this\n\n---\n\nand this"
    assert again.archived(now().date()) == [*first, done]


def test_a_link_in_place_of_a_day_file_is_replaced_not_written_through(tmp_path: Path) -> None:
    queue = MessageQueue(tmp_path)
    outside = tmp_path / "outside.md"
    outside.write_text("not the archive's\n", encoding="utf-8")
    path = queue.archive_file(now().date()).path
    path.parent.mkdir(parents=True)
    path.symlink_to(outside)
    done = queue.archive(put_in_processing(queue, "one").id, "completed")
    assert outside.read_text(encoding="utf-8") == "not the archive's\n"
    assert not path.is_symlink() and queue.archived(now().date()) == [done]


def find_in_child(data: str, message_id: str, results: Any) -> None:
    found = MessageQueue(Path(data)).find(message_id)
    results.put(None if found is None else found.id)


def test_processes_opening_a_missing_index_at_once_share_one_build(tmp_path: Path) -> None:
    write_history(tmp_path, days=20, per_day=20)
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    wanted = [f"m-{LAST_DAY - timedelta(days=d):%Y%m%d}-{d:04d}" for d in range(3)]
    children = [
        ctx.Process(target=find_in_child, args=(str(tmp_path), mid, results)) for mid in wanted
    ]
    for child in children:
        child.start()
    for child in children:
        child.join(120)
        assert child.exitcode == 0
    assert sorted(results.get(timeout=5) for _ in children) == sorted(wanted)
    queue = MessageQueue(tmp_path)
    assert queue.history.index.one("SELECT count(*) FROM messages") == (20 * 20,)
    assert not queue.history.index.fresh  # built once, by the children
