"""The queue protocol's Redis engine against a real redis-server on loopback: leases and
fencing, giving back, the janitor and its attempt cap, idempotent dispatch, malformed
entries; and the markdown engine behind the same protocol."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from jarvis.fleet import keys
from jarvis.fleet.connection import client
from jarvis.fleet.protocol import MarkdownQueue
from jarvis.fleet.redis_queue import Janitor, RedisQueue, fields_of
from jarvis.gateway.todos import TodoList
from tests.redis_server import RedisServer, redis_server

__all__ = ["redis_server"]

LEASE_MS = 300


@pytest.fixture
async def redis(redis_server: RedisServer) -> AsyncIterator[Redis]:
    conn = client(redis_server.url)
    yield conn
    await conn.aclose()


async def queue(redis: Redis, name: str) -> RedisQueue:
    q = RedisQueue(redis, name, lease_ms=LEASE_MS)
    await q.setup()
    return q


async def outcomes(redis: Redis) -> list[dict[str, str]]:
    entries: Any = await redis.xrange(keys.EVENTS)
    found = [fields_of(raw) for _id, raw in entries]
    return [f for f in found if f["type"] == "outcome"]


async def lease_gone(redis: Redis, task_id: str) -> None:
    """Wait (bounded) until the task's lease expired on its own."""
    async with asyncio.timeout(5):
        while await redis.exists(keys.lease_key(task_id)):
            await asyncio.sleep(0.02)


async def test_a_stale_token_cannot_complete_and_the_current_one_can(redis: Redis) -> None:
    a, b = await queue(redis, "a"), await queue(redis, "b")
    assert await a.dispatch("T001", "open the editor", ("tui",))
    claim = await a.claim(wait_s=1)
    assert claim is not None and (claim.task_id, claim.text, claim.attempt) == (
        "T001",
        "open the editor",
        1,
    )
    assert claim.channels == ("tui",)
    assert await b.claim(wait_s=0.1) is None  # one delivery: b gets nothing
    assert await a.renew(claim)
    forged = type(claim)(**{**claim.__dict__, "token": "0" * 32})
    assert not await a.complete(forged, "completed", "forged")
    assert not await a.give_back(forged)
    assert await outcomes(redis) == []
    assert await a.complete(claim, "completed", "opened it")
    assert not await a.complete(claim, "completed", "twice")  # the lease is gone
    [outcome] = await outcomes(redis)
    assert (outcome["task"], outcome["status"], outcome["summary"]) == (
        "T001",
        "completed",
        "opened it",
    )
    assert (outcome["worker"], outcome["token"]) == ("a", claim.token)
    assert await a.carried() == {}
    pending: Any = await redis.xpending(keys.TASKS, keys.WORKERS_GROUP)
    assert pending["pending"] == 0
    assert await redis.xlen(keys.TASKS) == 0  # done entries are deleted, not kept


async def test_dispatch_is_once_per_task_and_redispatch_fills_what_no_entry_carries(
    redis: Redis,
) -> None:
    q = await queue(redis, "coordinator")
    assert await q.dispatch("T001", "one")
    assert await q.dispatch("T001", "one again") is None
    sent = await q.redispatch([("T001", "one", ()), ("T002", "two", ())])
    assert sent == ["T002"]
    assert await redis.xlen(keys.TASKS) == 2
    await redis.flushall()  # Redis lost everything: todos.md still has both pending
    await q.setup()
    assert await q.redispatch([("T001", "one", ()), ("T002", "two", ())]) == ["T001", "T002"]


async def test_a_task_given_back_is_claimed_at_once_by_another_worker(redis: Redis) -> None:
    a, b = await queue(redis, "a"), await queue(redis, "b")
    await a.dispatch("T001", "task")
    claim = await a.claim(wait_s=1)
    assert claim is not None
    assert await a.give_back(claim, "SIGTERM")
    assert not await a.renew(claim)  # the lease went with it
    again = await b.claim(wait_s=1)
    assert again is not None and (again.task_id, again.attempt) == ("T001", 1)
    assert again.token != claim.token
    assert not await a.complete(claim, "completed", "late")
    assert await b.complete(again, "completed", "done")
    assert [o["worker"] for o in await outcomes(redis)] == ["b"]


async def test_the_janitor_gives_an_expired_lease_to_another_worker_and_caps_attempts(
    redis: Redis,
) -> None:
    a, b = await queue(redis, "a"), await queue(redis, "b")
    janitor = Janitor(redis, lease_ms=LEASE_MS, max_attempts=2)
    await a.dispatch("T001", "task")
    first = await a.claim(wait_s=1)
    assert first is not None
    assert (await janitor.sweep()).again == []  # a holds it: nothing to do
    await lease_gone(redis, "T001")  # a stopped renewing (it died)
    swept = await janitor.sweep()
    assert swept.again == ["T001"]
    second = await b.claim(wait_s=1)
    assert second is not None and (second.task_id, second.attempt) == ("T001", 2)
    assert not await a.complete(first, "completed", "the dead worker's late outcome")
    await lease_gone(redis, "T001")  # b dies too: the cap (2) is reached
    swept = await janitor.sweep()
    assert (swept.again, swept.failed) == ([], ["T001"])
    assert await a.claim(wait_s=0.1) is None
    [outcome] = await outcomes(redis)
    assert (outcome["task"], outcome["status"]) == ("T001", "failed")
    assert "lost its desktop 2 time(s)" in outcome["summary"]
    assert await a.carried() == {}
    assert await redis.xlen(keys.TASKS) == 0


async def test_renewing_keeps_the_janitor_away(redis: Redis) -> None:
    a = await queue(redis, "a")
    janitor = Janitor(redis, lease_ms=LEASE_MS)
    await a.dispatch("T001", "task")
    claim = await a.claim(wait_s=1)
    assert claim is not None
    for _ in range(6):  # 6 x 100 ms: twice the lease time, renewed each time
        await asyncio.sleep(LEASE_MS / 3000)
        assert await a.renew(claim)
        swept = await janitor.sweep()
        assert swept.again == [] and swept.failed == []
    assert await a.complete(claim, "completed", "done")


async def test_a_malformed_task_entry_is_acknowledged_and_skipped(
    redis: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    a = await queue(redis, "a")
    await redis.xadd(keys.TASKS, {"nonsense": "1"})
    await a.dispatch("T002", "real")
    assert await a.claim(wait_s=1) is None  # the malformed one, skipped
    claim = await a.claim(wait_s=1)
    assert claim is not None and claim.task_id == "T002"
    assert "malformed" in caplog.text
    pending: Any = await redis.xpending(keys.TASKS, keys.WORKERS_GROUP)
    assert pending["pending"] == 1  # only the real one, held by a


async def test_the_markdown_engine_speaks_the_same_protocol(tmp_path: Path) -> None:
    todos = TodoList(tmp_path)
    todos.add("first", "do the first thing", source="tui")
    q = MarkdownQueue(todos)
    claim = await q.claim()
    assert claim is not None and claim.task_id == "T001" and claim.channels == ("tui",)
    assert todos.get("T001").status == "in_progress"  # type: ignore[union-attr]
    assert await q.claim() is None
    assert await q.give_back(claim, "stopped")
    assert todos.get("T001").status == "pending"  # type: ignore[union-attr]
    assert not await q.complete(claim, "completed", "stale")
    claim = await q.claim()
    assert claim is not None and await q.renew(claim)
    assert await q.complete(claim, "completed", "done")
    done = todos.get("T001")
    assert done is not None and (done.status, done.summary) == ("completed", "done")
