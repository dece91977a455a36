"""The coordinator's loop against a real redis-server, with workers speaking the queue
protocol: pending todos are dispatched once, outcomes land in todos.md, a task whose
outcome is on its way is not sent again, and after Redis lost everything every open task
is dispatched again (todos.md is the truth)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from redis.asyncio import Redis

from jarvis.events import EventBus
from jarvis.fleet.connection import client
from jarvis.fleet.coordinator import FleetCoordinator
from jarvis.fleet.redis_queue import RedisQueue
from jarvis.gateway.todos import TodoList
from tests.redis_server import RedisServer, redis_server

__all__ = ["redis_server"]


@pytest.fixture
async def redis(redis_server: RedisServer) -> AsyncIterator[Redis]:
    conn = client(redis_server.url)
    yield conn
    await conn.aclose()


def status(todos: TodoList, task_id: str) -> str:
    todo = todos.get(task_id)
    assert todo is not None
    return todo.status


async def test_dispatch_once_outcomes_into_todos_and_redispatch_after_redis_lost_all(
    redis: Redis, tmp_path: Path
) -> None:
    todos = TodoList(tmp_path)
    todos.add("first", "do the first thing", source="inbox")
    todos.add("second", "do the second thing")
    coordinator = FleetCoordinator(redis, todos, tmp_path, EventBus(), lease_ms=500)
    await coordinator.setup()
    worker = RedisQueue(redis, "w1", lease_ms=500)
    assert await coordinator.tick(wait_s=0.05) == ["T001", "T002"]
    assert [status(todos, t) for t in ("T001", "T002")] == ["in_progress", "in_progress"]
    assert await coordinator.tick(wait_s=0.05) == []  # carried already: not sent twice

    first = await worker.claim(wait_s=1)
    assert first is not None and (first.task_id, first.channels) == ("T001", ("inbox",))
    assert await worker.complete(first, "completed", "did the first thing")
    assert await coordinator.dispatch() == []  # its outcome is on its way: not sent again
    await coordinator.tick(wait_s=0.05)
    done = todos.get("T001")
    assert done is not None and (done.status, done.summary) == ("completed", "did the first thing")

    await redis.flushall()  # Redis restarted empty: T002 is in progress, carried by nothing
    await coordinator.setup()
    assert await coordinator.tick(wait_s=0.05) == ["T002"]
    second = await worker.claim(wait_s=1)
    assert second is not None and second.task_id == "T002"
    assert await worker.claim(wait_s=0.1) is None  # once
    assert await worker.complete(second, "failed", "the app would not open")
    await coordinator.tick(wait_s=0.05)
    assert status(todos, "T002") == "failed"
    assert [o.task_id for o in coordinator.recorded] == ["T001", "T002"]


async def test_an_outcome_for_a_task_no_longer_in_progress_is_not_written(
    redis: Redis, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    todos = TodoList(tmp_path)
    todos.add("first", "do it")
    coordinator = FleetCoordinator(redis, todos, tmp_path, EventBus())
    await coordinator.setup()
    await coordinator.tick(wait_s=0.05)
    claim = await RedisQueue(redis, "w1").claim(wait_s=1)
    assert claim is not None
    todos.finish("T001", "failed", "a person gave up on it")
    assert await RedisQueue(redis, "w1").complete(claim, "completed", "done anyway")
    await coordinator.tick(wait_s=0.05)
    todo = todos.get("T001")
    assert todo is not None
    assert (todo.status, todo.summary) == ("failed", "a person gave up on it")
    assert "not written" in caplog.text
