"""A worker's files as the shipper sends them to a real redis-server: each new or
changed file once; after a step only the run's recent date folders are walked, before
the outcome everything; two lanes shipping at once send no file twice."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from jarvis.fleet import keys
from jarvis.fleet.connection import client
from jarvis.fleet.shipper import Shipper, since_day
from tests.redis_server import RedisServer, redis_server

__all__ = ["redis_server"]


@pytest.fixture
async def redis(redis_server: RedisServer) -> AsyncIterator[Redis]:
    conn = client(redis_server.url)
    yield conn
    await conn.aclose()


def put(data: Path, rel: str, body: bytes) -> None:
    path = data / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body)


async def shipped(redis: Redis) -> list[tuple[str, bytes]]:
    """(path, bytes) of the artefact entries on the stream so far, in order; emptied."""
    entries: Any = await redis.xrange(keys.EVENTS)
    await redis.delete(keys.EVENTS)
    return [(raw[b"path"].decode(), raw[b"data"]) for _id, raw in entries]


async def test_each_new_or_changed_file_goes_once_and_a_step_walks_only_recent_days(
    redis: Redis, tmp_path: Path
) -> None:
    data = tmp_path / "worker"
    put(data, "runs/2020-01-01/T000/steps/0001/step.json", b"from an earlier life")
    shipper = Shipper(redis, data, "w1")
    shipper.prime()
    today = datetime.now().strftime("%Y-%m-%d")
    since = since_day(datetime.now().timestamp())
    put(data, f"runs/{today}/T001/steps/0001/step.json", b"step 1")
    put(data, f"runs/{today}/T001/events.jsonl", b"the coordinator keeps its own journal")
    put(data, f"memory/steps/{today}/100000-000001.json", b"record")
    put(data, "approvals/a1.png", b"approval shot")
    put(data, "runs/2020-01-01/T000/steps/0002/step.json", b"an old run's folder, written now")

    assert await shipper.ship("T001", since) == 3  # a step's ship: not 2020's folder
    assert sorted(p for p, _ in await shipped(redis)) == [
        "approvals/a1.png",
        f"memory/steps/{today}/100000-000001.json",
        f"runs/{today}/T001/steps/0001/step.json",
    ]
    assert await shipper.ship("T001") == 1  # before the outcome: everything
    assert await shipped(redis) == [
        ("runs/2020-01-01/T000/steps/0002/step.json", b"an old run's folder, written now")
    ]
    assert await shipper.ship("T001") == 0  # nothing changed since
    step = data / f"runs/{today}/T001/steps/0001/step.json"
    step.write_bytes(b"step 1, with its after picture")
    later = step.stat().st_mtime + 1
    os.utime(step, (later, later))
    assert await shipper.ship("T001", since) == 1
    assert await shipped(redis) == [
        (f"runs/{today}/T001/steps/0001/step.json", b"step 1, with its after picture")
    ]


async def test_two_lanes_shipping_at_once_send_each_file_once(redis: Redis, tmp_path: Path) -> None:
    data = tmp_path / "worker"
    shipper = Shipper(redis, data, "w1")
    shipper.prime()
    for n in range(20):
        put(data, f"approvals/a{n:02d}.png", bytes([n]) * 5000)
    counts = await asyncio.gather(shipper.ship("T001"), shipper.ship("T001"))
    assert sorted(counts) == [0, 20]
    paths = [p for p, _ in await shipped(redis)]
    assert paths == [f"approvals/a{n:02d}.png" for n in range(20)]


def test_the_first_day_a_run_may_write_into_is_the_day_before_in_either_clock() -> None:
    now = datetime(2026, 3, 1, 0, 30, tzinfo=UTC).timestamp()
    day = since_day(now)
    local = datetime.fromtimestamp(now).strftime("%Y-%m-%d")
    assert day < local and day < "2026-03-01"
    assert day >= "2026-02-27"  # not the whole history
