"""`jarvis serve`: the lock, crash recovery, the worker's order, cancels and SIGTERM.

The agent runs for real on the session's Xvfb; only the model is scripted (a loopback
server behind the real SDK). Router, agent step and verification requests are told apart
by their content, so each test answers all three with one responder.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from jarvis.config import Settings
from jarvis.desktop.x11 import XDisplay
from jarvis.events import EventBus, EventRecorder, ReplyReady, TaskStarted
from jarvis.gateway.gateway import Gateway, GatewayOptions, GatewayReport
from jarvis.gateway.queue import MessageQueue
from jarvis.gateway.serve_lock import ServeLock, ServeLockHeld
from jarvis.gateway.todos import TodoList
from tests.agent_harness import TEST_KEY, agent_settings
from tests.fake_model import FakeModel, RecordedRequest, Reply, call, fake_model_fixture

__all__ = ["fake_model_fixture"]

ROOT = Path(__file__).resolve().parent.parent
VERIFIED = Reply(text='{"done": true, "reason": "looks done"}')
NEW_TASK = Reply(text='{"action": "new", "title": "", "priority": "normal"}')
Step = Callable[[RecordedRequest], Reply]


# --- helpers shared with test_serve_e2e.py -------------------------------------------
def is_router(request: RecordedRequest) -> bool:
    return "route incoming messages" in request.all_text()


def is_verify(request: RecordedRequest) -> bool:
    return "You verify computer tasks" in request.all_text()


def is_skill(request: RecordedRequest) -> bool:
    return "You write short, general procedures" in request.all_text()


def is_step(request: RecordedRequest) -> bool:
    return not (is_router(request) or is_verify(request) or is_skill(request))


def task_of(request: RecordedRequest) -> str:
    """The task text of an agent step request (the prompt's ``# Task`` section)."""
    text = request.all_text()
    start = text.index("# Task\n") + len("# Task\n")
    return text[start : text.index("\n\n# Open todos", start)]


def finish(summary: str = "done") -> Reply:
    return Reply(text="Thought: done.", tool_calls=[call("finished", summary=summary)])


def responder(
    step: Step | None = None, route: Callable[[RecordedRequest], Reply] | None = None
) -> Callable[[RecordedRequest], Reply]:
    """Router: new task (or ``route``); step: ``step`` (default finished); verify: done."""

    def answer(request: RecordedRequest) -> Reply:
        if is_router(request):
            return route(request) if route else NEW_TASK
        if is_verify(request):
            return VERIFIED
        if is_skill(request):
            return Reply(text="1. Do what the task says.")
        return step(request) if step else finish(f"did: {task_of(request)}")

    return answer


def serve_settings(tmp_path: Path, fake_model: FakeModel, monkeypatch: Any) -> Settings:
    return agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=300)


def once(settings: Settings, bus: EventBus | None = None, **options: Any) -> GatewayReport:
    gateway = Gateway(
        settings, bus, options=GatewayOptions(once=True, **options), where=XDisplay.from_env()
    )
    return asyncio.run(gateway.run())


async def until(condition: Callable[[], Any], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met before the deadline")
        await asyncio.sleep(0.02)


def wait_until(condition: Callable[[], Any], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met before the deadline")
        time.sleep(0.02)


def archived_today(queue: MessageQueue) -> list[Any]:
    return queue.archived(date.today())


# --- the lock ------------------------------------------------------------------------
def test_the_lock_is_exclusive_and_names_its_holder(tmp_path: Path) -> None:
    with ServeLock(tmp_path):
        with pytest.raises(ServeLockHeld) as held:
            ServeLock(tmp_path).acquire()
        assert held.value.holder is not None
        assert held.value.holder["pid"] == os.getpid()
        assert held.value.holder["host"] == socket.gethostname()
        assert f"pid {os.getpid()}" in str(held.value)
    with ServeLock(tmp_path):  # released: the next one gets it
        pass
    assert (tmp_path / "serve.lock").read_text() == ""  # names nobody once released


# --- recovery ------------------------------------------------------------------------
def test_recovery_routes_processing_once_and_reruns_interrupted_tasks(
    xserver: Any, tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    settings = serve_settings(tmp_path, fake_model, monkeypatch)
    queue, todos = MessageQueue(settings.data_dir), TodoList(settings.data_dir)
    fresh = queue.append("open the calculator")  # claimed, never routed
    running = queue.append("write the weekly report")  # its task was running
    done = queue.append("close the browser")  # completed, archive write lost
    queue.claim_all()
    interrupted = todos.add("write the weekly report", running.text, "inbox", [running.id])
    todos.mark_in_progress(interrupted.id)
    finished = todos.add("close the browser", done.text, "inbox", [done.id])
    todos.mark_in_progress(finished.id)
    todos.finish(finished.id, "completed", "closed it earlier")
    fake_model.set_default(responder())
    bus = EventBus()
    replies = EventRecorder(bus)

    report = once(settings, bus)

    assert report.requeued == [interrupted.id]
    assert report.repaired == [done.id]
    assert report.routed == 1
    tasks = {t.id: t for t in todos.all()}
    assert len(tasks) == 3  # the two attached messages made no new tasks
    new = next(t for t in tasks.values() if t.message_ids == [fresh.id])
    assert [t.status for t in tasks.values()] == ["completed"] * 3
    assert any("interrupted while in progress" in n for n in tasks[interrupted.id].notes)
    assert tasks[finished.id].summary == "closed it earlier"  # not run again
    assert tasks[new.id].summary == "did: open the calculator"
    # the model routed only the unrouted message and ran only the two open tasks
    assert sum(map(is_router, fake_model.requests)) == 1
    ran = [task_of(r) for r in fake_model.requests if is_step(r)]
    assert sorted(ran) == ["open the calculator", "write the weekly report"]
    archive = {m.id: m for m in archived_today(queue)}
    assert set(archive) == {fresh.id, running.id, done.id}
    assert archive[done.id].outcome == "completed"
    assert archive[done.id].result == "closed it earlier"
    assert archive[done.id].task_id == finished.id
    assert archive[fresh.id].task_id == new.id and archive[fresh.id].result is not None
    assert queue.processing() == []
    answered = {tuple(e.message_ids): e for e in replies.of(ReplyReady)}
    assert answered[(done.id,)].status == "completed"
    assert answered[(fresh.id,)].channel == "inbox"


def test_a_completed_task_is_never_run_again(
    xserver: Any, tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    settings = serve_settings(tmp_path, fake_model, monkeypatch)
    queue = MessageQueue(settings.data_dir)
    message = queue.append("rename the file")
    fake_model.set_default(responder())
    once(settings)
    first = len(fake_model.requests)
    report = once(settings)  # a second start finds nothing to do
    assert report.runs == [] and report.repaired == [] and report.requeued == []
    assert len(fake_model.requests) == first == 3  # route, step, verify
    [entry] = archived_today(queue)
    assert entry.id == message.id and entry.outcome == "completed"


# --- the worker ----------------------------------------------------------------------
def test_the_worker_takes_the_most_urgent_then_the_oldest(
    xserver: Any, tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    settings = serve_settings(tmp_path, fake_model, monkeypatch)
    todos = TodoList(settings.data_dir)
    for title, priority in [("a low", "low"), ("b normal", None), ("c high", "high"),
                            ("d normal", None), ("e urgent", 5), ("f waits", None),
                            ("g done", None)]:  # fmt: skip
        todos.add(title, title, "tui", priority=priority)
    todos.finish("T006", "needs_user", "which one?")
    todos.finish("T007", "completed", "done already")
    fake_model.set_default(responder())
    bus = EventBus()
    events = EventRecorder(bus)

    report = once(settings, bus)

    expected = ["e urgent", "c high", "b normal", "d normal", "a low"]
    assert [task_of(r) for r in fake_model.requests if is_step(r)] == expected
    assert [e.task_id for e in events.of(TaskStarted)] == ["T005", "T003", "T002", "T004", "T001"]
    assert [r.status for r in report.runs] == ["completed"] * 5
    statuses = {t.id: t.status for t in todos.all()}
    assert statuses["T006"] == "needs_user" and statuses["T007"] == "completed"
    for todo in todos.all()[:5]:
        assert todo.completed is not None and todo.summary == f"did: {todo.title}"


def test_needs_user_and_failed_endings_are_recorded_and_answered(
    xserver: Any, tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    settings = serve_settings(tmp_path, fake_model, monkeypatch)
    queue = MessageQueue(settings.data_dir)
    ask = queue.append("log in to the bank", reply_to="ada@example.com")
    fail = queue.append("do the impossible")

    def step(request: RecordedRequest) -> Reply:
        if "bank" in task_of(request):
            return Reply(text="Thought: ask", tool_calls=[call("call_user", message="password?")])
        return Reply(text="I cannot do this.")  # no tool: a failed step

    fake_model.set_default(responder(step))
    bus = EventBus()
    replies = EventRecorder(bus)
    once(settings, bus)
    archive = {m.id: m for m in archived_today(queue)}
    assert (archive[ask.id].outcome, archive[ask.id].result) == ("needs_user", "password?")
    assert archive[fail.id].outcome == "failed" and "failed steps" in archive[fail.id].result
    [asked] = [e for e in replies.of(ReplyReady) if e.message_ids == [ask.id]]
    assert (asked.reply_to, asked.status) == ("ada@example.com", "needs_user")
    assert asked.text == "password?"
    todos = {t.message_ids[0]: t for t in TodoList(settings.data_dir).all()}
    assert todos[ask.id].status == "needs_user" and todos[ask.id].completed is None
    assert todos[fail.id].status == "failed" and todos[fail.id].completed is not None


def slow_step(request: RecordedRequest) -> Reply:
    """A step whose answer streams for about 16 s (cancelled long before)."""
    return Reply(text="thinking " * 400, text_chunk=4, delay_s=0.02)


async def test_a_task_cancelled_in_todos_md_stops_and_stays_cancelled(
    xserver: Any, tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    settings = serve_settings(tmp_path, fake_model, monkeypatch)
    queue, todos = MessageQueue(settings.data_dir), TodoList(settings.data_dir)
    message = queue.append("count to a million")
    fake_model.set_default(responder(slow_step))
    gateway = Gateway(
        settings,
        options=GatewayOptions(once=True, watch_interval_s=0.05),
        where=XDisplay.from_env(),
    )
    run = asyncio.create_task(gateway.run())
    await until(lambda: any(is_step(r) for r in fake_model.requests))
    await asyncio.to_thread(todos.update, "T001", status="cancelled")  # a person's edit
    report = await asyncio.wait_for(run, timeout=20)
    assert [r.status for r in report.runs] == ["cancelled"]
    [todo] = todos.all()
    assert todo.status == "cancelled" and "cancelled in todos.md" in (todo.summary or "")
    [entry] = archived_today(queue)
    assert (entry.id, entry.outcome) == (message.id, "cancelled")


HAND_WRITTEN = "## [2026-02-01 15:30:00] from:ada via:inbox\nEmpty the trash\n\n---\n"


async def test_a_hand_written_inbox_entry_is_picked_up_while_serving(
    xserver: Any, tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    settings = serve_settings(tmp_path, fake_model, monkeypatch)
    queue = MessageQueue(settings.data_dir)
    fake_model.set_default(responder())
    gateway = Gateway(
        settings, options=GatewayOptions(poll_interval_s=0.2), where=XDisplay.from_env()
    )
    run = asyncio.create_task(gateway.run())
    try:
        await until(gateway.ready.is_set)
        with queue.inbox_file.path.open("a", encoding="utf-8") as inbox:  # an editor, no lock
            inbox.write(HAND_WRITTEN)
        await until(lambda: archived_today(queue))
    finally:
        gateway.stop()
        await asyncio.wait_for(run, timeout=20)
    [entry] = archived_today(queue)
    assert (entry.sender, entry.text, entry.outcome) == ("ada", "Empty the trash", "completed")
    assert [task_of(r) for r in fake_model.requests if is_step(r)] == ["Empty the trash"]


async def test_an_update_merged_while_running_runs_the_task_again(
    xserver: Any, tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    settings = serve_settings(tmp_path, fake_model, monkeypatch)
    queue, todos = MessageQueue(settings.data_dir), TodoList(settings.data_dir)
    first = queue.append("write a letter to Bob")

    def route(request: RecordedRequest) -> Reply:
        if "sign it" in request.all_text():
            return Reply(text='{"action": "merge", "task_id": "T001", "mode": "update"}')
        return NEW_TASK

    def step(request: RecordedRequest) -> Reply:
        # the first run answers only once the update is merged into its task
        wait_until(lambda: len(todos.all()[0].message_ids) == 2, timeout=20)
        return finish(f"did: {task_of(request)}")

    fake_model.set_default(responder(step, route))
    options = GatewayOptions(poll_interval_s=0.1, settle_s=0.1)
    gateway = Gateway(settings, options=options, where=XDisplay.from_env())
    run = asyncio.create_task(gateway.run())
    await until(lambda: any(is_step(r) for r in fake_model.requests))
    second = await asyncio.to_thread(queue.append, "and sign it with my name")
    await until(lambda: len(archived_today(queue)) == 2)
    gateway.stop()
    report = await asyncio.wait_for(run, timeout=20)

    assert [r.status for r in report.runs] == ["pending", "completed"]
    [todo] = todos.all()
    assert todo.status == "completed" and todo.message_ids == [first.id, second.id]
    assert any("before the update(s)" in n for n in todo.notes)
    runs = [task_of(r) for r in fake_model.requests if is_step(r)]
    assert len(runs) == 2 and "sign it" not in runs[0] and "sign it" in runs[1]
    archive = {m.id: m for m in archived_today(queue)}
    assert "sign it" not in (archive[first.id].result or "")
    assert "sign it" in (archive[second.id].result or "")


async def test_long_term_memory_is_offered_and_compressed_when_idle(
    xserver: Any, tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    from jarvis.memory.long_term import LongTermMemory, Memory

    settings = agent_settings(tmp_path, fake_model, monkeypatch, long_term_memory=True)
    with LongTermMemory.from_settings(settings) as memory:
        kept = memory.store(Memory(type="preference", content="The user likes dark mode"))
        faded = memory.store(Memory(type="preference", content="A note", importance=0))
    MessageQueue(settings.data_dir).append("switch the editor to dark mode")
    todos, at_skill = TodoList(settings.data_dir), []

    def answer(request: RecordedRequest) -> Reply:
        if is_skill(request):  # the verdict is on disk before the skill is distilled
            at_skill.append(todos.all()[0].status)
        return responder()(request)

    fake_model.set_default(answer)
    gateway = Gateway(
        settings, options=GatewayOptions(poll_interval_s=0.1), where=XDisplay.from_env()
    )
    run = asyncio.create_task(gateway.run())
    try:
        await until(lambda: gateway.report.compressions == 1 and gateway.report.runs, 60)
    finally:
        gateway.stop()
        report = await asyncio.wait_for(run, timeout=20)
    assert [r.status for r in report.runs] == ["completed"] and at_skill == ["completed"]
    [step] = [r for r in fake_model.requests if is_step(r)]
    assert "remember" in step.tool_names and kept.content in step.all_text()  # recalled
    with LongTermMemory.from_settings(settings) as memory:
        ids = {m.id for m in memory.list()}
    assert kept.id in ids and faded.id not in ids  # forgotten by the compressor


# --- the command: SIGTERM and a second serve ------------------------------------------
def serve_env(xserver: Any, fake_model: FakeModel) -> dict[str, str]:
    return {
        **xserver.env(),
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(ROOT),
        "ANTHROPIC_API_KEY": TEST_KEY,
        "ANTHROPIC_BASE_URL": fake_model.anthropic_base_url,
        "JARVIS_MAX_RETRIES": "0",
        "JARVIS_LONG_TERM_MEMORY": "false",
        "JARVIS_API__HTTP": "127.0.0.1:0",  # the control API on a free port
        "ANONYMIZED_TELEMETRY": "False",
        "TMPDIR": tempfile.gettempdir(),  # this worker's (tests/conftest.py)
    }


def jarvis(*args: str) -> list[str]:
    return [sys.executable, "-m", "jarvis", *args]


@contextmanager
def serving(env: dict[str, str], data: Path, out: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A `jarvis serve` subprocess writing to ``out``; killed on the way out if still up."""
    with out.open("w+") as sink:
        daemon = subprocess.Popen(
            jarvis("serve", "--data-dir", str(data), "--poll", "0.2"),
            env=env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            yield daemon
        finally:
            if daemon.poll() is None:
                daemon.kill()
                daemon.wait()


def stop_serve(daemon: subprocess.Popen[bytes], out: Path) -> None:
    """SIGTERM, and the daemon stops cleanly (exit 0)."""
    daemon.send_signal(signal.SIGTERM)
    assert daemon.wait(timeout=30) == 0, out.read_text()


def test_sigterm_puts_the_task_back_and_a_second_serve_names_the_first(
    xserver: Any, tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    settings = serve_settings(tmp_path, fake_model, monkeypatch)
    queue, todos = MessageQueue(settings.data_dir), TodoList(settings.data_dir)
    message = queue.append("sort the photos")
    fake_model.set_default(responder(slow_step))
    env = serve_env(xserver, fake_model)
    data = str(settings.data_dir)
    with serving(env, settings.data_dir, tmp_path / "serve.out") as daemon:
        wait_until(lambda: any(is_step(r) for r in fake_model.requests) or daemon.poll())
        assert daemon.poll() is None, (tmp_path / "serve.out").read_text()
        second = subprocess.run(
            jarvis("serve", "--once", "--data-dir", data),
            env=env, cwd=ROOT, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert second.returncode == 1
        assert f"pid {daemon.pid} on {socket.gethostname()}" in second.stderr
        assert todos.all()[0].status == "in_progress"
        stop_serve(daemon, tmp_path / "serve.out")
    logs = [tmp_path / "serve.out", *settings.data_dir.joinpath("logs").glob("*.log")]
    assert "task T001 started" in logs[-1].read_text()
    for path in logs:
        assert TEST_KEY not in path.read_text()
    [todo] = todos.all()
    assert todo.status == "pending" and todo.completed is None
    assert any("stopped while running" in n for n in todo.notes)
    assert [m.id for m in queue.processing()] == [message.id]  # kept, nothing lost
    assert archived_today(queue) == []

    fake_model.set_default(responder())  # the next start runs it to the end
    report = once(settings)
    assert [r.status for r in report.runs] == ["completed"]
    [entry] = archived_today(queue)
    assert (entry.id, entry.outcome, entry.task_id) == (message.id, "completed", "T001")
