"""The run index with 10,000 real run folders on disk (tests/run_folders.py writes them as
the journal writer does): a lookup, the journal after a seq and a page of ``jarvis runs``
read what they need and no day or run.json more; the index is rebuilt when deleted or
broken, and catches up with folders added or removed behind its back. ``GET /api/runs``
of a real `jarvis serve` pages with its cursor."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jarvis.cli import main
from jarvis.events import EventBus, StepFinished, TaskFinished, TaskStarted
from jarvis.runs import index as index_module
from jarvis.runs.index import INDEX_DIR, INDEX_FILE, RunIndex, index_files
from jarvis.runs.journal import JournalWriter
from jarvis.runs.reader import BadCursor, events_after, find_run, list_runs
from tests.agent_harness import agent_settings
from tests.api_harness import serving_api
from tests.fake_model import FakeModel
from tests.run_folders import Made, write_run, write_runs

RUNS = 10_000
PER_DAY = 100


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[Made]]]:
    data = tmp_path_factory.mktemp("big") / "data"
    made = write_runs(data, RUNS, PER_DAY)
    list_runs(data, 1)  # the index, built once for the module
    yield data, made


class Counted:
    """Counts the run.json reads and date folder listings the index does."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reads = self.days = 0
        read_run, scan_day = index_module.read_run, RunIndex._scan_day

        def counted_read(folder: Path) -> Any:
            self.reads += 1
            return read_run(folder)

        def counted_scan(index: RunIndex, day: str, seen: str) -> None:
            self.days += 1
            scan_day(index, day, seen)

        monkeypatch.setattr(index_module, "read_run", counted_read)
        monkeypatch.setattr(RunIndex, "_scan_day", counted_scan)


def index_path(data: Path) -> Path:
    return data / "runs" / INDEX_DIR / INDEX_FILE


def drop_index(data: Path) -> None:
    for name in index_files():
        index_path(data).with_name(name).unlink(missing_ok=True)


def page_through(data: Path, limit: int, cursor: str | None = None) -> list[str]:
    seen: list[str] = []
    while True:
        page = list_runs(data, limit, cursor)
        seen += [r.task_id for r in page.runs]
        if page.next is None:
            return seen
        cursor = page.next


def test_find_run_of_an_old_run_reads_no_day(big: tuple[Path, list[Made]], monkeypatch) -> None:
    data, made = big
    counted = Counted(monkeypatch)
    assert find_run(data, made[0].task_id) == made[0].folder
    assert find_run(data, made[4321].task_id) == made[4321].folder
    assert find_run(data, "T99999") is None
    assert (counted.reads, counted.days) == (0, 0)


def test_events_after_reads_only_the_journals_after_it(
    big: tuple[Path, list[Made]], monkeypatch: pytest.MonkeyPatch
) -> None:
    data, made = big
    first = RUNS - 3 * PER_DAY - 7  # three days and a bit back
    after = made[first].first_seq  # its task_started line is before, task_finished after
    read: list[Path] = []
    original = index_module.RunIndex.journals_after

    def journals(index: RunIndex, since: int) -> list[Path]:
        found = original(index, since)
        read.extend(found)
        return found

    monkeypatch.setattr(RunIndex, "journals_after", journals)
    lines = list(events_after(data, after))
    assert [r["seq"] for r in lines] == list(range(after + 1, 2 * RUNS + 1))
    assert len({p.parent.parent.name for p in read}) == 4  # days, across midnight
    assert sorted(read) == sorted(m.folder / "events.jsonl" for m in made[first:])
    assert list(events_after(data, 2 * RUNS)) == []


def test_paging_yields_each_run_once_newest_first(big: tuple[Path, list[Made]]) -> None:
    data, made = big
    newest_first = [m.task_id for m in reversed(made)]
    assert page_through(data, 700) == newest_first
    page = list_runs(data, 3)
    assert [r.task_id for r in page.runs] == newest_first[:3]
    assert page.runs[0].folder == made[-1].folder.relative_to(data).as_posix()
    assert (page.runs[0].status, page.runs[0].ending) == ("completed", "completed: done")
    later = list_runs(data, 2, page.next)
    assert [r.task_id for r in later.runs] == newest_first[3:5]
    for bad in ("x", "2024-01-01/x/T00001", "2024-01-01/1.0/../x", "2024-01-01/inf/T1", ""):
        with pytest.raises(BadCursor):
            list_runs(data, 2, bad or "/")


def test_a_page_opens_no_run_json(big: tuple[Path, list[Made]], monkeypatch) -> None:
    data, _ = big
    counted = Counted(monkeypatch)
    for limit in (20, 1000):
        assert len(list_runs(data, limit).runs) == limit
    assert (counted.reads, counted.days) == (0, 0)


def test_the_cli_pages_with_a_cursor(big: tuple[Path, list[Made]], capsys) -> None:
    data, made = big
    assert main(["runs", "--data-dir", str(data), "--limit", "2"]) == 0
    header, *out = capsys.readouterr().out.splitlines()
    assert header.split()[:4] == ["started", "task", "status", "steps"]
    assert [line.split()[2] for line in out[:2]] == [made[-1].task_id, made[-2].task_id]
    assert [line.index(made[-1].task_id) for line in out[:1]] == [header.index("task")]
    hint = out[2].split()
    assert hint[:4] == ["older", "runs:", "jarvis", "runs"] and hint[4] == "--before"
    assert (
        main(["runs", "--data-dir", str(data), "--json", "--limit", "1", "--before", hint[5]]) == 0
    )
    shown = json.loads(capsys.readouterr().out)
    assert [r["task_id"] for r in shown["runs"]] == [made[-3].task_id] and shown["next"]
    assert main(["runs", "--data-dir", str(data), "--before", "not-a-cursor"]) == 2


def test_a_deleted_index_is_rebuilt(big: tuple[Path, list[Made]]) -> None:
    data, made = big
    drop_index(data)
    assert find_run(data, made[17].task_id) == made[17].folder
    assert index_path(data).is_file()
    assert [r.task_id for r in list_runs(data, 2).runs] == [made[-1].task_id, made[-2].task_id]


def test_a_broken_index_or_one_of_another_version_is_rebuilt(tmp_path: Path) -> None:
    made = write_runs(tmp_path, 30, per_day=7)
    assert len(page_through(tmp_path, 4)) == 30
    index_path(tmp_path).write_bytes(b"not a database at all" * 100)
    assert find_run(tmp_path, made[-1].task_id) == made[-1].folder
    with RunIndex(tmp_path) as index:
        index.book.rows(f"PRAGMA user_version = {index_module.VERSION + 1}")
    assert page_through(tmp_path, 4) == [m.task_id for m in reversed(made)]


def test_a_stale_index_catches_up(
    big: tuple[Path, list[Made]], monkeypatch: pytest.MonkeyPatch
) -> None:
    data, made = big
    seq = 2 * RUNS + 1
    today = made[-1].folder.parent  # the newest day: looked at by every lookup
    added = write_run(today / "T99000", "T99000", made[-1].started + 1, seq)
    old_day = made[150].folder.parent  # a day long indexed: looked at every SWEEP_S
    late = write_run(old_day / "T99001", "T99001", made[150].started + 5, seq + 2)
    new_day = data / "runs" / "2030-01-01"  # runs/ changes: every day is looked at
    try:
        assert find_run(data, "T99000") == added.folder
        assert [r.task_id for r in list_runs(data, 1).runs] == ["T99000"]
        assert find_run(data, "T99001") is None  # not yet
        monkeypatch.setattr(index_module, "SWEEP_S", 0.0)
        assert find_run(data, "T99001") == late.folder
        monkeypatch.undo()
        write_run(new_day / "T99002", "T99002", made[-1].started + 9e7, seq + 4)
        assert [r.task_id for r in list_runs(data, 1).runs] == ["T99002"]
        shutil.rmtree(made[-1].folder)  # a folder the index names, gone
        assert find_run(data, made[-1].task_id) is None
        after = [r["task_id"] for r in events_after(data, 2 * RUNS)]
        assert after == ["T99000"] * 2 + ["T99001"] * 2 + ["T99002"] * 2
        assert [r.task_id for r in list_runs(data, 2).runs] == ["T99002", "T99000"]
    finally:
        for folder in (added.folder, late.folder, new_day):
            shutil.rmtree(folder, ignore_errors=True)
        if not made[-1].folder.exists():
            write_run(made[-1].folder, made[-1].task_id, made[-1].started, made[-1].first_seq)
    assert find_run(data, "T99002") is None and find_run(data, "T99000") is None
    assert [r.task_id for r in list_runs(data, 1).runs] == [made[-1].task_id]


def test_the_writer_keeps_the_index_current(tmp_path: Path) -> None:
    made = write_runs(tmp_path, 250)
    bus = EventBus()
    writer = JournalWriter(tmp_path, bus)
    try:
        bus.emit(TaskStarted(task_id="T00003", task="again", ts=time.time()))  # an old id
        bus.emit(StepFinished(task_id="T00003", step=1, cost_usd=0.5))
        [running] = list_runs(tmp_path, 1).runs
        assert (running.task_id, running.status, running.steps) == ("T00003", "in_progress", 1)
        with RunIndex(tmp_path) as index:
            assert index.journals_after(made[-1].last_seq) == [running_journal(tmp_path)]
        bus.emit(TaskFinished(task_id="T00003", status="finished", summary="ok", steps=1))
        ended = list_runs(tmp_path, 1).runs[0]
        assert (ended.status, ended.summary, ended.cost_usd) == ("completed", "ok", 0.0)
    finally:
        writer.close()
    kinds = [r["kind"] for r in events_after(tmp_path, made[-1].last_seq)]
    assert kinds == ["task_started", "step_finished", "task_finished"]
    with RunIndex(tmp_path) as index:  # closed: its last seq is known
        assert index.journals_after(made[-1].last_seq + 3) == []


def running_journal(data: Path) -> Path:
    folder = find_run(data, "T00003")
    assert folder is not None
    return folder / "events.jsonl"


def test_a_journal_left_open_by_a_dead_writer_is_closed(tmp_path: Path) -> None:
    [made] = write_runs(tmp_path, 1)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          text=True, capture_output=True, check=True)  # fmt: skip
    with RunIndex(tmp_path) as index:
        index.sync()
        index.book.rows("UPDATE runs SET last_seq = NULL, open_pid = ?", (int(dead.stdout),))
        assert index.journals_after(5) == []  # its end read again: seq 2
        assert index.book.rows("SELECT last_seq, open_pid FROM runs") == [(2, None)]
    assert made.last_seq == 2


def test_a_running_run_whose_process_is_gone_is_interrupted(tmp_path: Path) -> None:
    [made] = write_runs(tmp_path, 1)
    info = json.loads((made.folder / "run.json").read_text())
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          text=True, capture_output=True, check=True)  # fmt: skip
    info |= {"status": "running", "pid": int(dead.stdout)}
    (made.folder / "run.json").write_text(json.dumps(info))
    [run] = list_runs(tmp_path).runs
    assert run.status == "interrupted"
    info["pid"] = os.getpid()  # changed behind the index's back: read again
    (made.folder / "run.json").write_text(json.dumps(info))
    assert list_runs(tmp_path).runs[0].status == "in_progress"


@pytest.mark.usefixtures("xserver")
async def test_the_api_pages_runs_with_a_cursor(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    made = write_runs(settings.data_dir, 130, per_day=40)
    async with serving_api(settings) as api, api.client() as client:
        seen: list[str] = []
        cursor: str | None = None
        while True:
            params = {"limit": 50} | ({"cursor": cursor} if cursor else {})
            answer = (await client.get("/api/runs", params=params)).json()
            assert set(answer) == {"runs", "next"}
            seen += [r["task_id"] for r in answer["runs"]]
            cursor = answer["next"]
            if cursor is None:
                break
        assert seen == [m.task_id for m in reversed(made)]
        [first] = (await client.get("/api/runs", params={"limit": 1})).json()["runs"]
        assert (first["task_id"], first["status"], first["run_count"]) == ("T00130", "completed", 1)
        assert first["folder"] == made[-1].folder.relative_to(settings.data_dir).as_posix()
        assert first["ending"] == "completed: done" and "runs" not in first
        bad = await client.get("/api/runs", params={"cursor": "2024-01-01/x/T1"})
        assert bad.status_code == 400 and "not a cursor" in bad.json()["detail"]
        record = (await client.get("/api/tasks/T00001")).json()  # an old run, by the index
        assert record["run"]["folder"] == made[0].folder.relative_to(settings.data_dir).as_posix()


def test_the_listing_piped_to_head_ends_quietly(big: tuple[Path, list[Made]]) -> None:
    """``jarvis runs --limit 1000 | head -3``: the reader leaves early; no traceback."""
    data, made = big
    lister = subprocess.Popen(
        [sys.executable, "-m", "jarvis", "runs", "--data-dir", str(data), "--limit", "1000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert lister.stdout is not None and lister.stderr is not None
    head = [lister.stdout.readline() for _ in range(3)]
    lister.stdout.close()  # what `head` does after its lines
    errors = lister.stderr.read().decode()
    assert lister.wait(60) == 0, errors
    assert made[-1].task_id in head[1].decode() and errors == ""
