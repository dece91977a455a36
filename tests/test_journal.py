"""The run journal: lines, sequence numbers across writers and restarts, text coalescing,
torn lines, reading across runs and days, run.json, and no secrets on disk."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jarvis.events import (
    AgentWarning,
    EventBus,
    ModelRetry,
    ModelTextDelta,
    ReplyReady,
    StepFinished,
    StepStarted,
    TaskFinished,
    TaskStarted,
    ToolCallFinished,
    ToolCallStarted,
    VerificationFinished,
)
from jarvis.runs.journal import TEXT_INTERVAL_S, JournalWriter, SeqCounter
from jarvis.runs.reader import events_after, find_run, list_runs, read_events, run_events
from jarvis.usage import Usage

SENTINEL = "sk-ant-sentinel-journal-0123456789"


def journal(data: Path, task_id: str) -> list[dict]:
    folder = find_run(data, task_id)
    assert folder is not None
    return list(read_events(folder / "events.jsonl"))


def one_task(bus: EventBus, task_id: str, ts: float | None = None) -> None:
    """A small task's events, as the agent emits them."""
    start = TaskStarted(task_id=task_id, task=f"task {task_id}")
    if ts is not None:
        start.ts = ts
    bus.emit(start)
    bus.emit(StepStarted(task_id=task_id, step=1))
    bus.emit(ModelTextDelta(task_id=task_id, text="Thought: "))
    bus.emit(ModelTextDelta(task_id=task_id, text="click it."))
    bus.emit(ToolCallStarted(task_id=task_id, call_id="c1", tool_name="click", arguments={"x": 1}))
    bus.emit(ToolCallFinished(task_id=task_id, call_id="c1", tool_name="click", ok=True))
    bus.emit(
        StepFinished(task_id=task_id, step=1, input_tokens=100, output_tokens=20, cost_usd=0.5)
    )
    bus.emit(VerificationFinished(task_id=task_id, done=True, reason="looks done"))
    bus.emit(
        TaskFinished(
            task_id=task_id,
            status="finished",
            summary="clicked",
            steps=1,
            input_tokens=150,
            output_tokens=30,
            cost_usd=0.75,
        )
    )


def test_lines_carry_seq_ts_kind_task_and_the_event_fields(tmp_path: Path) -> None:
    bus = EventBus()
    writer = JournalWriter(tmp_path, bus, channel="web", model="m1", provider="anthropic")
    one_task(bus, "T001")
    writer.close()
    lines = journal(tmp_path, "T001")
    kinds = [r["kind"] for r in lines]
    assert kinds == [
        "task_started",
        "step_started",
        "model_text_delta",  # the first delta at once,
        "model_text_delta",  # the next held (under 50 ms) and written before the next event
        "tool_call_started",
        "tool_call_finished",
        "step_finished",
        "verification_finished",
        "task_finished",
    ]
    assert [r["seq"] for r in lines] == list(range(1, 10))
    assert all(list(r)[:4] == ["seq", "ts", "kind", "task_id"] for r in lines)
    assert {r["task_id"] for r in lines} == {"T001"}
    assert (lines[2]["text"], lines[3]["text"]) == ("Thought: ", "click it.")
    assert lines[4]["arguments"] == {"x": 1} and lines[4]["call_id"] == "c1"
    run = json.loads((find_run(tmp_path, "T001") / "run.json").read_text())  # type: ignore[operator]
    assert run["status"] == "completed" and run["channel"] == "web" and run["model"] == "m1"
    assert run["tokens"] == {
        "input_tokens": 150,
        "output_tokens": 30,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
    }
    assert run["cost_usd"] == 0.75 and run["steps"] == 1 and run["summary"] == "clicked"
    assert run["verdict"] == {"done": True, "reason": "looks done", "tree_tokens": 0}
    assert (run["first_seq"], run["last_seq"]) == (1, 9)
    assert run["ended"] >= run["started"]


def test_events_without_a_task_go_to_the_running_task_only(tmp_path: Path) -> None:
    bus = EventBus()
    writer = JournalWriter(tmp_path, bus)
    bus.emit(AgentWarning(message="before any task"))  # no task: not journaled
    bus.emit(TaskStarted(task_id="T001", task="x"))
    bus.emit(ModelRetry(attempt=1, reason="overloaded", delay_s=0.5))
    bus.emit(TaskFinished(task_id="T001", status="failed"))
    bus.emit(ReplyReady(task_id="T001", channel="web", status="failed"))  # its reply
    bus.emit(AgentWarning(message="after the task"))
    writer.close()
    lines = journal(tmp_path, "T001")
    assert [r["kind"] for r in lines] == [
        "task_started",
        "model_retry",
        "task_finished",
        "reply_ready",
    ]
    assert lines[1]["task_id"] == "T001"
    assert not any("before any task" in json.dumps(r) for r in lines)


def test_text_deltas_are_coalesced_to_about_20_lines_a_second(tmp_path: Path) -> None:
    bus = EventBus()
    writer = JournalWriter(tmp_path, bus)
    written: list[float] = []
    writer.listen(lambda line: written.append(time.monotonic()))
    bus.emit(TaskStarted(task_id="T001", task="x"))
    pieces = [f"w{i} " for i in range(300)]
    started = time.monotonic()
    for piece in pieces:  # 300 deltas over about 1.5 s, from a thread without a loop
        bus.emit(ModelTextDelta(task_id="T001", text=piece))
        time.sleep(0.005)
    elapsed = time.monotonic() - started
    deadline = time.monotonic() + 5
    while "".join(r.get("text", "") for r in journal(tmp_path, "T001")) != "".join(pieces):
        assert time.monotonic() < deadline, "the last text was never written"
        time.sleep(0.01)
    writer.close()
    texts = [r for r in journal(tmp_path, "T001") if r["kind"] == "model_text_delta"]
    assert len(texts) <= elapsed / TEXT_INTERVAL_S + 2
    assert len(texts) >= 5  # streamed as it came, not held to the end
    gaps = [b - a for a, b in itertools.pairwise(written[1:])]  # between text writes
    assert len(written) == len(texts) + 1
    assert min(gaps) >= TEXT_INTERVAL_S * 0.9


async def test_pending_text_is_written_by_the_loop_timer_without_another_event(
    tmp_path: Path,
) -> None:
    bus = EventBus()
    writer = JournalWriter(tmp_path, bus)
    seen: list[str] = []
    writer.listen(lambda line: seen.append(line.kind))
    bus.emit(TaskStarted(task_id="T001", task="x"))
    bus.emit(ModelTextDelta(task_id="T001", text="a"))  # written at once (first)
    bus.emit(ModelTextDelta(task_id="T001", text="b"))  # held, then flushed by the timer
    assert seen == ["task_started", "model_text_delta"]
    deadline = time.monotonic() + 2
    while len(seen) < 3:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.005)
    writer.close()
    assert [r.get("text") for r in journal(tmp_path, "T001")][1:] == ["a", "b"]


def _write_many(data: str, task_id: str, count: int) -> None:
    bus = EventBus()
    writer = JournalWriter(Path(data), bus)
    bus.emit(TaskStarted(task_id=task_id, task="parallel"))
    for step in range(count):
        bus.emit(StepStarted(task_id=task_id, step=step))
    writer.close()


def test_seq_is_unique_and_increasing_across_processes(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_many, args=(str(tmp_path), f"P{i}", 150)) for i in range(3)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    seqs: list[int] = []
    for i in range(3):
        mine = [r["seq"] for r in journal(tmp_path, f"P{i}")]
        assert len(mine) == 151 and mine == sorted(mine)
        seqs += mine
    assert len(set(seqs)) == len(seqs) == 453
    assert max(seqs) == 453
    merged = [r["seq"] for r in events_after(tmp_path, 0)]
    assert merged == sorted(seqs)


def test_seq_survives_a_restart_and_a_lost_or_garbled_counter(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for task, damage in [("T001", None), ("T002", "delete"), ("T003", "garble")]:
        if damage == "delete":
            (tmp_path / "runs" / "seq").unlink()
        elif damage == "garble":
            (tmp_path / "runs" / "seq").write_text("not a number")
        bus = EventBus()
        writer = JournalWriter(tmp_path, bus)
        one_task(bus, task)
        writer.close()
    seqs = [r["seq"] for r in events_after(tmp_path, 0)]
    assert seqs == list(range(1, 28))
    assert "is not a number" in caplog.text
    counter = SeqCounter(tmp_path)
    assert counter.next() == 28
    counter.close()


def test_a_torn_last_line_is_skipped_with_a_warning_and_ended_before_appending(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bus = EventBus()
    writer = JournalWriter(tmp_path, bus)
    bus.emit(TaskStarted(task_id="T001", task="x"))
    bus.emit(StepStarted(task_id="T001", step=1))
    writer.close()
    path = find_run(tmp_path, "T001") / "events.jsonl"  # type: ignore[operator]
    with path.open("ab") as f:
        f.write(b'{"seq": 3, "ts": 1.0, "kind": "step_fin')  # a crash mid-write
    with caplog.at_level(logging.WARNING):
        assert [r["seq"] for r in read_events(path)] == [1, 2]
    assert "torn line" in caplog.text
    # the task runs again the same day: the torn line is ended, the new lines parse
    bus = EventBus()
    writer = JournalWriter(tmp_path, bus)
    bus.emit(TaskStarted(task_id="T001", task="x again"))
    bus.emit(StepStarted(task_id="T001", step=1))
    writer.close()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        records = list(read_events(path))
    assert [r["kind"] for r in records] == ["task_started", "step_started"] * 2
    assert [r["seq"] for r in records] == [1, 2, 3, 4]  # the torn 3 was never counted
    assert "line 3 is not a journal line" in caplog.text


def test_events_after_reads_across_runs_and_days_in_order(tmp_path: Path) -> None:
    bus = EventBus()
    writer = JournalWriter(tmp_path, bus)
    one_task(bus, "T001", ts=time.time() - 3 * 86400)  # three days ago
    one_task(bus, "T002", ts=time.time() - 86400)
    one_task(bus, "T003")
    writer.close()
    days = sorted(p.name for p in (tmp_path / "runs").glob("????-??-??"))
    assert len(days) == 3
    for after in (0, 5, 9, 10, 18, 26, 27):  # 9 lines a task
        assert [r["seq"] for r in events_after(tmp_path, after)] == list(range(after + 1, 28))
    assert [r["task_id"] for r in events_after(tmp_path, 14)] == ["T002"] * 4 + ["T003"] * 9
    assert [r["kind"] for r in run_events(tmp_path, "T002", after=17)] == ["task_finished"]


def test_list_runs_newest_first_and_a_dead_running_run_is_interrupted(tmp_path: Path) -> None:
    bus = EventBus()
    writer = JournalWriter(tmp_path, bus, channel=lambda task_id: {"T001": "tui"}.get(task_id))
    one_task(bus, "T001", ts=time.time() - 60)
    bus.emit(TaskStarted(task_id="T002", task="still going"))
    bus.emit(StepFinished(task_id="T002", step=1, input_tokens=5, output_tokens=2, cost_usd=0.1))
    runs = list_runs(tmp_path).runs
    assert [r.task_id for r in runs] == ["T002", "T001"]
    assert runs[0].status == "in_progress" and runs[0].steps == 1  # this process is alive
    assert runs[0].tokens == Usage(input_tokens=5, output_tokens=2)
    assert runs[1].channel == "tui" and runs[0].channel == "unknown"
    writer.close()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], text=True,
                          capture_output=True, check=True)  # fmt: skip
    run_json = find_run(tmp_path, "T002") / "run.json"  # type: ignore[operator]
    info = json.loads(run_json.read_text())
    run_json.write_text(json.dumps(info | {"pid": int(gone.stdout)}))
    assert list_runs(tmp_path).runs[0].status == "interrupted"
    run_json.write_text("{broken")  # rebuilt from the journal
    rebuilt = list_runs(tmp_path, limit=1).runs[0]
    assert (rebuilt.task_id, rebuilt.task, rebuilt.steps) == ("T002", "still going", 1)


def test_no_secret_reaches_the_journal_or_run_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SENTINEL)
    bus = EventBus()
    writer = JournalWriter(tmp_path, bus)
    bus.emit(TaskStarted(task_id="T001", task=f"use {SENTINEL}"))
    bus.emit(ModelTextDelta(task_id="T001", text=f"the key is {SENTINEL}"))
    bus.emit(ToolCallFinished(task_id="T001", call_id="c", tool_name="type", ok=False,
                              error_message=f"bad {SENTINEL}"))  # fmt: skip
    bus.emit(TaskFinished(task_id="T001", status="failed", summary=SENTINEL))
    writer.close()
    for path in (tmp_path / "runs").rglob("*"):  # the run index too
        if path.is_file():
            assert SENTINEL.encode() not in path.read_bytes(), path
    assert "[REDACTED]" in json.dumps(journal(tmp_path, "T001"))


def test_task_ids_cannot_escape_the_runs_folder(tmp_path: Path) -> None:
    bus = EventBus()
    writer = JournalWriter(tmp_path / "data", bus)
    bus.emit(TaskStarted(task_id="../../evil", task="x"))
    writer.close()
    assert not (tmp_path / "evil").exists()
    files = [p for p in (tmp_path / "data" / "runs").rglob("events.jsonl")]
    assert len(files) == 1 and files[0].parent.name == "_.._evil"
    assert os.path.commonpath([files[0], tmp_path / "data" / "runs"]) == str(
        tmp_path / "data" / "runs"
    )
