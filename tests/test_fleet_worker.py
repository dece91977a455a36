"""`jarvis worker` processes on their own Xvfb, a real redis-server on loopback and the
scripted model: a task dispatched by the coordinator's side (its queue, receiver and
journal, here in the test process) runs on a worker and its journal, step records and
screenshots land in the coordinator's data dir; a worker killed mid-task loses it to
another worker, which finishes it once."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from jarvis.events import EventBus
from jarvis.fleet import control, keys
from jarvis.fleet.connection import client
from jarvis.fleet.protocol import Claim
from jarvis.fleet.receiver import Outcome, Receiver
from jarvis.fleet.redis_queue import Janitor, RedisQueue, text
from jarvis.runs.journal import JournalWriter
from tests.fake_model import FakeModel, RecordedRequest, Reply, call, fake_model_fixture
from tests.redis_server import RedisServer, redis_server
from tests.test_serve import VERIFIED, is_skill, is_step, is_verify, serve_env, task_of
from tests.xserver import Xvfb, start_xvfb

__all__ = ["fake_model_fixture", "redis_server"]

TASK = "Click the middle of the screen, then move the pointer to the corner."
SUMMARY = "clicked and moved the pointer"


def acts() -> Reply:
    return Reply(
        text="Reflection: an empty screen.\nThought: click, then type.",
        tool_calls=[call("click", x=300, y=200), call("mouse_move", x=20, y=20)],
    )


def done() -> Reply:
    return Reply(text="Thought: moved.", tool_calls=[call("finished", summary=SUMMARY)])


def other(request: RecordedRequest) -> Reply | None:
    """The answers to the calls that are not steps: verification, the skill distilled."""
    if is_verify(request):
        return VERIFIED
    if is_skill(request):
        return Reply(text="1. Click, then move the pointer.")
    return None


class Fleet:
    """Worker processes, each on its own Xvfb; stopped at the end."""

    def __init__(self, tmp_path: Path, fake_model: FakeModel, url: str) -> None:
        self.tmp_path, self.fake_model, self.url = tmp_path, fake_model, url
        self.stack = ExitStack()
        self.procs: dict[str, subprocess.Popen[str]] = {}
        self.lines: dict[str, list[str]] = {}
        self.readers: list[threading.Thread] = []

    def start(self, name: str, lease_s: float = 10.0, host: str = "") -> subprocess.Popen[str]:
        screen: Xvfb = self.stack.enter_context(start_xvfb(800, 600))
        env = serve_env(screen, self.fake_model)
        display = env.pop("DISPLAY")  # given by --display, as a user would
        env["JARVIS_SETTLE_CEILING_MS"] = "300"
        url, env["JARVIS_REDIS_PASSWORD"] = without_password(self.url)  # not in argv
        args = ["worker", "--redis", url, "--display", display, "--name", name]
        args += ["--lease", str(lease_s), "--data-dir", str(self.tmp_path / name)]
        args += ["--host", host] if host else []
        proc = subprocess.Popen(
            [sys.executable, "-m", "jarvis", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.procs[name], self.lines[name] = proc, []
        reader = threading.Thread(target=self._read, args=(proc, self.lines[name]), daemon=True)
        reader.start()
        self.readers.append(reader)
        return proc

    @staticmethod
    def _read(proc: subprocess.Popen[str], into: list[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            into.append(line)

    def err(self, name: str) -> str:
        """What worker ``name`` wrote to stderr so far."""
        return "".join(self.lines[name])

    async def said(self, name: str, text: str, timeout: float = 60) -> None:
        async with asyncio.timeout(timeout):
            while text not in self.err(name):
                await asyncio.sleep(0.05)

    def finish(self, name: str, timeout: float = 30) -> str:
        """Wait for worker ``name`` to exit; its stderr."""
        self.procs[name].wait(timeout=timeout)
        for reader in self.readers:
            reader.join(timeout=5)
        return self.err(name)

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)
        for reader in self.readers:
            reader.join(timeout=5)
        for name, proc in self.procs.items():  # shown when a test fails
            print(f"--- worker {name} exit {proc.returncode}\n{self.err(name)}")
        self.stack.close()


@pytest.fixture
def fleet(tmp_path: Path, fake_model: FakeModel, redis_server: RedisServer) -> Iterator[Fleet]:
    made = Fleet(tmp_path, fake_model, redis_server.url)
    yield made
    made.stop()


class Coordinator:
    """The coordinator's side of the wire: dispatch, receive, journal."""

    def __init__(self, url: str, data_dir: Path) -> None:
        self.redis = client(url)
        self.data_dir = data_dir
        self.bus = EventBus()
        self.journal = JournalWriter(data_dir, self.bus, channel="api")
        self.outcomes: list[Outcome] = []
        self.receiver = Receiver(self.redis, data_dir, self.bus, self._outcome)
        self.queue = RedisQueue(self.redis, "coordinator")
        self.order: list[str] = []
        """What came on the stream, in order: an event's kind, an artefact's path."""
        handle = self.receiver.handle

        async def noted(entry: str, raw: dict[Any, Any]) -> None:
            kind = raw.get(b"type", b"").decode()
            if kind == "event":
                self.order.append(json.loads(raw[b"data"])["kind"])
            else:
                self.order.append(raw.get(b"path", kind.encode()).decode())
            await handle(entry, raw)

        self.receiver.handle = noted  # type: ignore[method-assign]

    async def _outcome(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)

    async def setup(self) -> None:
        await self.queue.setup()
        await self.receiver.setup()

    async def until_outcome(self, timeout: float = 90, janitor: Janitor | None = None) -> None:
        async with asyncio.timeout(timeout):
            while not self.outcomes:
                await self.receiver.read_once(wait_s=0.2)
                if janitor is not None:
                    await janitor.sweep()

    async def close(self) -> None:
        self.journal.close()
        await self.redis.aclose()


def journal_lines(data_dir: Path, task_id: str) -> list[dict[str, Any]]:
    day = datetime.now().strftime("%Y-%m-%d")
    path = data_dir / "runs" / day / task_id / "events.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def without_password(url: str) -> tuple[str, str]:
    """``url`` without its password, and the password (for ``JARVIS_REDIS_PASSWORD``)."""
    parts = urlsplit(url)
    host = f"{parts.hostname}:{parts.port}"
    return urlunsplit(parts._replace(netloc=host)), parts.password or ""


def jarvis_workers(url: str) -> dict[str, Any]:
    bare, password = without_password(url)
    proc = subprocess.run(
        [sys.executable, "-m", "jarvis", "workers", "--redis", bare, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={
            **os.environ,
            "PYTHONPATH": str(Path(__file__).parent.parent),
            "JARVIS_REDIS_PASSWORD": password,
        },
    )
    assert proc.returncode == 0, proc.stderr
    assert url.split("@")[0].split(":")[-1] not in proc.stdout + proc.stderr  # no password
    return json.loads(proc.stdout)


@pytest.mark.slow
async def test_a_worker_runs_a_task_and_its_record_lands_in_the_coordinators_data_dir(
    fleet: Fleet, fake_model: FakeModel, redis_server: RedisServer, tmp_path: Path
) -> None:
    steps = iter([acts(), done()])

    def answer(request: RecordedRequest) -> Reply:
        return other(request) or next(steps)

    fake_model.set_default(answer)
    home = tmp_path / "coordinator"
    coordinator = Coordinator(redis_server.url, home)
    await coordinator.setup()
    try:
        worker = fleet.start("w1")
        assert await coordinator.queue.dispatch("T001", TASK, ("api",))
        await coordinator.until_outcome()
        listed = await asyncio.to_thread(jarvis_workers, redis_server.url)
        worker.send_signal(signal.SIGTERM)
        err = await asyncio.to_thread(fleet.finish, "w1")
    finally:
        await coordinator.close()
    assert worker.returncode == 0, err
    [outcome] = coordinator.outcomes
    assert (outcome.task_id, outcome.status, outcome.summary) == ("T001", "completed", SUMMARY)
    assert (outcome.worker, outcome.attempt) == ("w1", 1)
    assert [task_of(r) for r in fake_model.requests if is_step(r)] == [TASK, TASK]
    [w1] = listed["workers"]
    assert (w1["name"], w1["size"], w1["version"]) == ("w1", "800x600", "0.1.0")
    assert w1["display"].startswith(":")
    lines = journal_lines(home, "T001")
    kinds = [line["kind"] for line in lines]
    assert kinds[0] == "task_started" and kinds[-1] == "task_finished"
    assert kinds.count("step_finished") == 2 and "tool_call_finished" in kinds
    assert lines[-1]["status"] == "completed" and lines[-1]["summary"] == SUMMARY
    run = home / "runs" / datetime.now().strftime("%Y-%m-%d") / "T001"
    assert json.loads((run / "run.json").read_text())["status"] == "completed"
    step_dirs = sorted(p for p in (run / "steps").iterdir() if p.is_dir())
    assert len(step_dirs) == 2
    assert all((d / "step.json").is_file() and (d / "before.jpg").is_file() for d in step_dirs)
    order = coordinator.order  # a step's files follow its end; all of them, the outcome
    ends = [i for i, what in enumerate(order) if what == "step_finished"]
    for step, end in zip(("0001", "0002"), ends, strict=True):
        assert min(i for i, w in enumerate(order) if f"/steps/{step}/" in w) > end
    assert order[-1] == "outcome" and order.index("task_finished") < len(order) - 1
    step_records = sorted((home / "memory" / "steps").rglob("*.json"))
    assert len(step_records) == 2
    shot = json.loads(step_records[0].read_text())["screenshot"]["path"]
    assert (home / shot).is_file()  # the screenshot a step record names is here too
    assert "waiting for tasks" in err and redis_server.password not in err
    redis = client(redis_server.url)
    try:
        assert await redis.exists(keys.worker_key("w1")) == 0  # it said goodbye
    finally:
        await redis.aclose()


@pytest.mark.slow
async def test_a_worker_killed_mid_task_loses_it_to_another_which_finishes_it_once(
    fleet: Fleet, fake_model: FakeModel, redis_server: RedisServer, tmp_path: Path
) -> None:
    stuck, first = threading.Event(), threading.Event()
    calls = {"step": 0}

    def answer(request: RecordedRequest) -> Reply:
        if (reply := other(request)) is not None:
            return reply
        calls["step"] += 1
        if calls["step"] == 1:  # the first worker's model call hangs until it is killed
            first.set()
            stuck.wait(60)
            return done()
        return done()

    fake_model.set_default(answer)
    home = tmp_path / "coordinator"
    coordinator = Coordinator(redis_server.url, home)
    await coordinator.setup()
    janitor = Janitor(coordinator.redis, lease_ms=2000)
    try:
        for name in ("w1", "w2"):
            fleet.start(name, lease_s=2)
        assert await coordinator.queue.dispatch("T001", TASK, ("api",))
        async with asyncio.timeout(60):
            while not first.is_set():
                await coordinator.receiver.read_once(wait_s=0.2)
        lease: Any = await coordinator.redis.hgetall(keys.lease_key("T001"))
        dead = text(lease[b"worker"])
        old = Claim("T001", TASK, text(lease[b"token"]), 1, ("api",), text(lease[b"entry"]))
        fleet.procs[dead].kill()  # kill -9 in the middle of its model call
        fleet.procs[dead].wait(timeout=30)
        stuck.set()
        await coordinator.until_outcome(janitor=janitor)
        late = RedisQueue(coordinator.redis, dead)
        assert not await late.complete(old, "completed", "the dead worker's late outcome")
        await coordinator.receiver.read_once(wait_s=0.2)
    finally:
        await coordinator.close()
    survivor = "w2" if dead == "w1" else "w1"
    [outcome] = coordinator.outcomes
    assert (outcome.task_id, outcome.status, outcome.worker) == ("T001", "completed", survivor)
    assert outcome.attempt == 2
    starts = [line for line in journal_lines(home, "T001") if line["kind"] == "task_started"]
    assert [line["run"] for line in starts] == [1, 2]  # both attempts are in the journal
    run = home / "runs" / datetime.now().strftime("%Y-%m-%d") / "T001"
    # the survivor's step is filed as run 2's, though it was its own first run
    assert sorted(p.name for p in (run / "steps").iterdir()) == ["r2-0001"]
    assert (run / "steps" / "r2-0001" / "step.json").is_file()


@pytest.mark.slow
async def test_control_reaches_the_worker_of_the_task_and_sigterm_gives_the_task_back(
    fleet: Fleet, fake_model: FakeModel, redis_server: RedisServer, tmp_path: Path
) -> None:
    release = threading.Event()
    asked: list[threading.Event] = [threading.Event(), threading.Event()]
    calls = {"step": 0}

    def answer(request: RecordedRequest) -> Reply:
        if (reply := other(request)) is not None:
            return reply
        asked[min(calls["step"], 1)].set()
        calls["step"] += 1
        release.wait(90)  # the model thinks until the test is over
        return done()

    fake_model.set_default(answer)
    coordinator = Coordinator(redis_server.url, tmp_path / "coordinator")
    await coordinator.setup()
    try:
        worker = fleet.start("w1")
        assert await coordinator.queue.dispatch("T001", TASK, ("api",))
        await asyncio.to_thread(asked[0].wait, 60)
        forged = control.Control(kind="cancel", task="T999", by="forger")
        await control.send(coordinator.redis, "w1", forged)
        await control.send(coordinator.redis, "w1", control.Control("cancel", "T001", by="api"))
        await coordinator.until_outcome(timeout=60)
        [cancelled] = coordinator.outcomes
        assert (cancelled.task_id, cancelled.status) == ("T001", "cancelled")
        assert cancelled.summary == "cancelled by api"  # not by the forged message

        assert await coordinator.queue.dispatch("T002", "another task", ("api",))
        entry = (await coordinator.queue.carried())["T002"]
        await asyncio.to_thread(asked[1].wait, 60)
        worker.send_signal(signal.SIGTERM)
        err = await asyncio.to_thread(fleet.finish, "w1")
        assert worker.returncode == 0, err
        assert "control cancel for task T999 ignored" in err
        assert "task T002 given back" in err
        assert (await coordinator.queue.carried())["T002"] != entry  # a fresh entry
        assert await coordinator.redis.exists(keys.lease_key("T002")) == 0
        again = await RedisQueue(coordinator.redis, "w2").claim(wait_s=1)
        assert again is not None and (again.task_id, again.attempt) == ("T002", 1)
        await coordinator.receiver.read_once(wait_s=0.2)
        assert [o.task_id for o in coordinator.outcomes] == ["T001"]  # no outcome for T002
    finally:
        release.set()
        await coordinator.close()


@pytest.mark.slow
async def test_a_worker_waits_for_redis_says_so_and_works_when_it_is_back(
    tmp_path: Path, fake_model: FakeModel
) -> None:
    steps = iter([done()])
    fake_model.set_default(lambda request: other(request) or next(steps))
    with RedisServer(appendonly=True) as server:
        fleet = Fleet(tmp_path, fake_model, server.url)
        try:
            fleet.start("w1")
            await fleet.said("w1", "waiting for tasks")
            server.stop()  # Redis goes away under an idle worker
            await fleet.said("w1", "waiting for Redis at")
            server.start()  # the same port and password, its data back from the AOF
            coordinator = Coordinator(server.url, tmp_path / "coordinator")
            await coordinator.setup()
            try:
                assert await coordinator.queue.dispatch("T001", TASK, ("api",))
                await coordinator.until_outcome(timeout=60)
            finally:
                await coordinator.close()
            fleet.procs["w1"].send_signal(signal.SIGTERM)
            err = await asyncio.to_thread(fleet.finish, "w1")
        finally:
            fleet.stop()
    [outcome] = coordinator.outcomes
    assert (outcome.task_id, outcome.status, outcome.worker) == ("T001", "completed", "w1")
    [waiting] = [line for line in err.splitlines() if "waiting for Redis at" in line]  # once
    assert f"redis://:***@127.0.0.1:{server.port}/0" in waiting and "backoff" in waiting
    assert f"Redis at redis://:***@127.0.0.1:{server.port}/0 is back" in err
    assert server.password not in err
