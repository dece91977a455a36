"""The coordinator's loop against a real redis-server, with workers speaking the queue
protocol: pending todos are dispatched once, outcomes land in todos.md, a task whose
outcome is on its way is not sent again, and after Redis lost everything every open task
is dispatched again (todos.md is the truth)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from redis.asyncio import Redis

from jarvis.events import EventBus, ReplyReady, TaskStarted
from jarvis.fleet import keys
from jarvis.fleet.connection import client
from jarvis.fleet.coordinator import FleetCoordinator
from jarvis.fleet.receiver import Outcome
from jarvis.fleet.redis_queue import RedisQueue
from jarvis.gateway.queue import MessageQueue
from jarvis.gateway.todos import TodoList
from jarvis.runs.journal import JournalWriter
from jarvis.runs.reader import run_events
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


async def test_an_ending_written_but_not_replied_before_a_crash_is_replied_once_after(
    redis: Redis, tmp_path: Path
) -> None:
    bus = EventBus()
    journal = JournalWriter(tmp_path, bus, channel="inbox")
    inbox = MessageQueue(tmp_path, bus=bus)
    message = inbox.append("open the calculator", channel="telegram", reply_to="chat-7")
    assert [m.id for m in inbox.claim()] == [message.id]
    todos = TodoList(tmp_path)
    todos.add("calc", "open the calculator", source="telegram", message_ids=[message.id])
    first = FleetCoordinator(redis, todos, tmp_path, bus, inbox=inbox)
    await first.setup()
    assert await first.tick(wait_s=0.05) == ["T001"]
    claim = await RedisQueue(redis, "w1").claim(wait_s=1)
    assert claim is not None
    bus.emit(TaskStarted(task_id="T001", task="open the calculator"))  # the worker's event
    assert await RedisQueue(redis, "w1").complete(claim, "completed", "it is open")
    replies: list[ReplyReady] = []
    bus.subscribe(lambda e: replies.append(e) if isinstance(e, ReplyReady) else None)

    # the coordinator reads the outcome and writes the books, then dies before replying
    # (and before acknowledging the outcome in Redis)
    entries = await redis.xreadgroup(
        keys.COORDINATOR_GROUP, first.receiver.consumer, {keys.EVENTS: ">"}, count=100
    )
    assert entries
    outcome = Outcome("T001", "completed", "it is open", "w1", claim.attempt, claim.token)
    assert first._record(outcome) is not None
    assert replies == [] and status(todos, "T001") == "completed"

    second = FleetCoordinator(redis, todos, tmp_path, bus, inbox=inbox)  # restarted
    await second.setup()
    await second.tick(wait_s=0.05)
    assert [(r.task_id, r.channel, r.reply_to, r.status) for r in replies] == [
        ("T001", "telegram", "chat-7", "completed")
    ]
    assert replies[0].message_ids == [message.id] and replies[0].text == "it is open"
    ended = todos.get("T001")
    assert ended is not None and second._redelivered(ended) is None  # replied: not twice
    await FleetCoordinator(redis, todos, tmp_path, bus, inbox=inbox).tick(wait_s=0.05)
    assert len(replies) == 1
    journal.close()
    lines = run_events(tmp_path, "T001")
    assert [line["kind"] for line in lines].count("reply_ready") == 1
