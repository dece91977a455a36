"""The fleet survives its parts dying: `kill -9` of the coordinator and of redis-server
in the middle of a run, then both started again (the same data dir; Redis from its AOF):
nothing lost, nothing finished twice, and each task's journal shows its attempts as they
were. `kill -9` of a worker in the middle of a task: another worker finishes it once, the
journal shows both attempts, and the dead worker's late outcome (replayed with its old
lease token) is refused."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from jarvis.fleet import keys
from jarvis.fleet.connection import client
from jarvis.fleet.protocol import Claim
from jarvis.fleet.redis_queue import RedisQueue, text
from jarvis.gateway.queue import MessageQueue
from tests.fake_model import FakeModel, RecordedRequest, Reply, fake_model_fixture
from tests.fleet_harness import LEASE_S, Coordinator, drop, one_step, summary_of, wait_for
from tests.redis_server import RedisServer
from tests.test_fleet_worker import Fleet

__all__ = ["fake_model_fixture"]

WORKERS = ("w1", "w2", "w3")


@pytest.fixture
def aof_redis() -> Iterator[RedisServer]:
    with RedisServer(appendonly=True) as server:
        yield server


def attempts_told_honestly(coordinator: Coordinator, task_id: str) -> list[int]:
    """The runs its journal shows (1, 2, ...: each attempt once, in order), after checking
    that it ended once."""
    lines = coordinator.journal(task_id)
    runs = [line["run"] for line in lines if line["kind"] == "task_started"]
    assert runs == list(range(1, len(runs) + 1)), (task_id, runs)
    assert [line["kind"] for line in lines].count("reply_ready") == 1, task_id
    return runs


@pytest.mark.slow
def test_kill_9_of_the_coordinator_and_of_redis_mid_run_loses_nothing_and_ends_each_once(
    xserver: Any, tmp_path: Path, fake_model: FakeModel, aof_redis: RedisServer
) -> None:
    def slow_step(request: RecordedRequest) -> Reply:
        reply = one_step(request)
        if reply.tool_calls:
            threading.Event().wait(0.4)  # a model that thinks: tasks are mid-run when killed
        return reply

    fake_model.set_default(slow_step)
    data = tmp_path / "data"
    coordinator = Coordinator(xserver, fake_model, aof_redis, data, tmp_path / "serve.out")
    fleet = Fleet(tmp_path, fake_model, aof_redis.url)
    texts: set[str] = set()
    try:
        coordinator.start()
        for name in WORKERS:
            fleet.start(name, lease_s=LEASE_S)
        texts |= {drop(data, n) for n in range(12)}
        wait_for(lambda: len(coordinator.done()) >= 3, 120, "3 tasks completed")
        coordinator.kill()  # kill -9 of the coordinator while workers run the rest
        steps = len(fake_model.requests)
        texts |= {drop(data, n) for n in range(12, 16)}  # the inbox takes them meanwhile
        wait_for(lambda: len(fake_model.requests) >= steps + 4, 60, "workers going on")
        aof_redis.kill()  # and kill -9 of Redis in the middle too
        wait_for(
            lambda: any("waiting for Redis at" in fleet.err(n) for n in WORKERS), 30, "noticed"
        )
        aof_redis.start()  # the same port, password and directory: its AOF back
        coordinator.start()  # the same data dir
        wait_for(
            lambda: len(coordinator.done()) == len(texts) or not coordinator.alive(),
            240,
            "every task completed",
        )
        assert coordinator.alive(), coordinator.output()
        for name in WORKERS:
            assert fleet.procs[name].poll() is None, fleet.err(name)  # none died of it
        assert coordinator.stop() == 0, coordinator.output()
    finally:
        coordinator.stop()
        fleet.stop()
    todos = coordinator.todos()
    assert len(todos) == len(texts) == 16 and {t.description for t in todos} == texts
    for todo in todos:
        assert (todo.status, todo.summary) == ("completed", summary_of(todo.description))
        attempts_told_honestly(coordinator, todo.id)
    queue = MessageQueue(data)
    archived = queue.archived(date.today())
    assert len(archived) == len({m.id for m in archived}) == 16  # each answered once
    assert Counter(m.outcome for m in archived) == {"completed": 16}
    assert queue.pending() == [] and queue.processing() == []
    assert aof_redis.password not in coordinator.output()


@pytest.mark.slow
def test_a_worker_killed_mid_task_loses_it_to_another_and_its_late_outcome_is_refused(
    xserver: Any, tmp_path: Path, fake_model: FakeModel, aof_redis: RedisServer
) -> None:
    first, stuck = threading.Event(), threading.Event()
    second, release = threading.Event(), threading.Event()

    def answer(request: RecordedRequest) -> Reply:
        reply = one_step(request)
        if reply.tool_calls and not first.is_set():  # the first attempt hangs until killed
            first.set()
            stuck.wait(60)
        elif reply.tool_calls and not second.is_set():  # the second, until the replay is in
            second.set()
            release.wait(60)
        return reply

    fake_model.set_default(answer)
    data = tmp_path / "data"
    coordinator = Coordinator(xserver, fake_model, aof_redis, data, tmp_path / "serve.out")
    fleet = Fleet(tmp_path, fake_model, aof_redis.url)
    try:
        coordinator.start()
        for name in ("w1", "w2"):
            fleet.start(name, lease_s=LEASE_S)
        task = drop(data, 0)
        wait_for(first.is_set, 120, "the first attempt asked the model")
        old, dead = asyncio.run(_lease_of("T001", task, aof_redis.url))
        fleet.procs[dead].kill()  # kill -9 in the middle of its model call
        fleet.procs[dead].wait(timeout=30)
        stuck.set()
        wait_for(second.is_set, 120, "the second attempt asked the model")
        refused = asyncio.run(_replay_late_outcome(old, dead, aof_redis.url))
        refusal = "without the current lease's token"
        wait_for(lambda: refusal in coordinator.output(), 30, "the replayed outcome refused")
        assert [t.status for t in coordinator.todos()] == ["in_progress"]
        release.set()
        wait_for(lambda: coordinator.done() or not coordinator.alive(), 120, "T001 completed")
        assert coordinator.stop() == 0, coordinator.output()
    finally:
        stuck.set()
        release.set()
        coordinator.stop()
        fleet.stop()
    assert refused is False  # the queue's fencing refused it
    [todo] = coordinator.todos()
    assert (todo.status, todo.summary) == ("completed", summary_of(task))
    assert attempts_told_honestly(coordinator, "T001") == [1, 2]  # both attempts
    survivor = "w2" if dead == "w1" else "w1"
    day = date.today().isoformat()
    assert (tmp_path / survivor / "runs" / day / "T001").is_dir()  # the survivor ran it
    [archived] = MessageQueue(data).archived(date.today())
    assert archived.outcome == "completed"


async def _lease_of(task_id: str, body: str, url: str) -> tuple[Claim, str]:
    redis = client(url)
    try:
        lease: Any = await redis.hgetall(keys.lease_key(task_id))
    finally:
        await redis.aclose()
    claim = Claim(task_id, body, text(lease[b"token"]), 1, ("inbox",), text(lease[b"entry"]))
    return claim, text(lease[b"worker"])


async def _replay_late_outcome(old: Claim, dead: str, url: str) -> bool:
    """What the dead worker would send had it lived: through the queue (fenced there), and
    as a raw outcome entry on ``jarvis:events`` with its old token (fenced by the
    coordinator)."""
    redis = client(url)
    try:
        through_queue = await RedisQueue(redis, dead).complete(old, "failed", "late and stale")
        fields: Any = {
            "type": "outcome",
            "task": old.task_id,
            "worker": dead,
            "status": "failed",
            "summary": "late and stale",
            "attempt": "1",
            "token": old.token,
        }
        await redis.xadd(keys.EVENTS, fields)
    finally:
        await redis.aclose()
    return through_queue
