"""What workers send on ``jarvis:events``, as the coordinator's receiver reads it from a
real redis-server: events reach the bus (and the journal), artefacts land under the data
dir, forged paths and malformed entries are refused with a warning, never raised."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from jarvis.events import (
    EventBus,
    EventRecorder,
    StepFinished,
    StepStarted,
    TaskFinished,
    TaskStarted,
)
from jarvis.fleet import keys
from jarvis.fleet.connection import FleetUrlError, check_url, client, shown
from jarvis.fleet.receiver import Outcome, Receiver
from jarvis.fleet.wire import (
    ForgedEntry,
    RemoteEvent,
    artefact_fields,
    artefact_target,
    event_fields,
    parse_event,
)
from jarvis.redaction import redact
from jarvis.runs.journal import JournalWriter
from jarvis.runs.reader import find_run
from tests.redis_server import RedisServer, redis_server

__all__ = ["redis_server"]

BEFORE = "runs/2026-01-01/T001/steps/0001/before.jpg"
FORGED = [
    "../outside.txt",
    "runs/../../outside.txt",
    "/etc/passwd",
    "runs/2026-01-01/T001/../../../../outside.txt",
    "config/api_token",  # inside the data dir, but not an artefact's place
    "runs/index/runs.sqlite",  # the coordinator's own run index
    "runs/2026-01-01/T001/events.jsonl",  # its journal
    "runs",
    "runs//x",
    "runs\\..\\x",
    "~/x",
]


@pytest.fixture
async def redis(redis_server: RedisServer) -> AsyncIterator[Redis]:
    conn = client(redis_server.url)
    yield conn
    await conn.aclose()


@pytest.mark.parametrize("rel", FORGED)
def test_an_artefact_path_out_of_bounds_is_refused(tmp_path: Path, rel: str) -> None:
    with pytest.raises(ForgedEntry):
        artefact_target(tmp_path / "data", rel)


def test_a_symlink_out_of_the_data_dir_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "runs").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (data / "runs" / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ForgedEntry, match="leaves the data dir"):
        artefact_target(data, "runs/link/x.jpg")
    assert artefact_target(data, "runs/2026-01-01/T001/steps/0001/before.jpg").is_relative_to(
        data.resolve()
    )


def test_events_round_trip_typed_and_unknown_kinds_are_kept_whole() -> None:
    step = StepFinished(task_id="T001", step=2, screenshot="memory/screenshots/a.jpg")
    back = parse_event(event_fields(step, "w1")["data"])
    assert isinstance(back, StepFinished) and back == step
    other = parse_event('{"kind": "from_a_newer_worker", "task_id": "T001", "extra": 5}')
    assert isinstance(other, RemoteEvent) and other.model_dump()["extra"] == 5
    for bad in ("not json", '{"no": "kind"}', '{"kind": "step_finished", "step": "x"}'):
        with pytest.raises(ForgedEntry):
            parse_event(bad)


async def test_the_receiver_writes_artefacts_emits_events_and_refuses_forgeries(
    redis: Redis, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    bus = EventBus()
    seen = EventRecorder(bus)
    outcomes: list[Outcome] = []

    async def on_outcome(outcome: Outcome) -> None:
        outcomes.append(outcome)

    receiver = Receiver(redis, data, bus, on_outcome)
    await receiver.setup()
    started = TaskStarted(task_id="T001", task="do it")
    entries: list[Any] = [
        event_fields(started, "w1"),
        artefact_fields(BEFORE, b"\xff\xd8jpeg", "T001", "w1"),
        artefact_fields("../../escaped.txt", b"owned", "T001", "w1"),
        artefact_fields("/tmp/absolute.txt", b"owned", "T001", "w1"),
        {"type": "event", "task": "T001", "worker": "w1", "data": "{broken"},
        {"type": "who-knows"},
        {"type": "outcome", "task": "T001"},  # no status
        {"type": "outcome", "task": "T001", "status": "failed", "summary": "x", "token": "old"},
        {"type": "outcome", "task": "T001", "status": "completed", "summary": "ok", "token": "t"},
    ]
    await redis.hset(keys.ENDED, "T001", "t")  # as the COMPLETE script leaves it: token "t"
    for fields in entries:
        await redis.xadd(keys.EVENTS, fields)
    handled = await receiver.read_once(wait_s=0.1)
    assert handled == len(entries)
    assert [e.kind for e in seen.events] == ["task_started"]
    assert (data / BEFORE).read_bytes() == b"\xff\xd8jpeg"
    assert not (tmp_path / "escaped.txt").exists() and not Path("/tmp/absolute.txt").exists()
    assert receiver.refused == 6  # the outcome with a stale token too
    assert caplog.text.count("refused") >= 6 and "escaped.txt" in caplog.text
    assert "outcome of T001 without the current lease's token" in caplog.text
    assert [(o.task_id, o.status, o.summary) for o in outcomes] == [("T001", "completed", "ok")]
    assert await redis.xlen(keys.EVENTS) == 0  # read, acknowledged and deleted
    pending: Any = await redis.xpending(keys.EVENTS, keys.COORDINATOR_GROUP)
    assert pending["pending"] == 0


async def test_the_receivers_lane_handles_each_entry_as_it_comes(
    redis: Redis, tmp_path: Path
) -> None:
    bus = EventBus()
    seen = EventRecorder(bus)

    async def on_outcome(outcome: Outcome) -> None:
        raise AssertionError("no outcome was sent")

    receiver = Receiver(redis, tmp_path / "data", bus, on_outcome)
    await receiver.setup()
    # read before a restart and never handled: pending for this consumer
    await redis.xadd(keys.EVENTS, event_fields(TaskStarted(task_id="T001", task="x"), "w1"))
    await redis.xreadgroup(keys.COORDINATOR_GROUP, "coordinator", {keys.EVENTS: ">"})
    stopping = False
    # a wait far past the deadline: only XREADGROUP's hand-over can deliver in time
    lane = asyncio.create_task(receiver.run(lambda: stopping, wait_s=60))
    try:
        await until(lambda: len(seen.events) == 1)
        await redis.xadd(keys.EVENTS, event_fields(StepStarted(task_id="T001", step=1), "w1"))
        await until(lambda: len(seen.events) == 2)
    finally:
        stopping = True
        lane.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await lane
    assert [e.kind for e in seen.events] == ["task_started", "step_started"]
    assert await redis.xlen(keys.EVENTS) == 0  # acknowledged and deleted
    pending: Any = await redis.xpending(keys.EVENTS, keys.COORDINATOR_GROUP)
    assert pending["pending"] == 0


async def test_an_outcome_being_written_holds_up_no_other_tasks_events(
    redis: Redis, tmp_path: Path
) -> None:
    bus = EventBus()
    seen = EventRecorder(bus)
    written: list[str] = []
    release = asyncio.Event()

    async def on_outcome(outcome: Outcome) -> None:  # todos.md, the archive: slow
        await release.wait()
        written.append(outcome.task_id)

    receiver = Receiver(redis, tmp_path / "data", bus, on_outcome)
    await receiver.setup()
    await redis.hset(keys.ENDED, "T001", "t")
    stopping = False
    lane = asyncio.create_task(receiver.run(lambda: stopping, wait_s=0.2))
    try:
        outcome: Any = {"type": "outcome", "task": "T001", "status": "completed", "token": "t"}
        await redis.xadd(keys.EVENTS, outcome)
        await redis.xadd(keys.EVENTS, event_fields(StepStarted(task_id="T002", step=1), "w2"))
        await until(lambda: len(seen.events) == 1)  # while T001's outcome is being written
        assert written == []
        pending: Any = await redis.xpending(keys.EVENTS, keys.COORDINATOR_GROUP)
        assert pending["pending"] == 1  # the outcome: not acknowledged before it is written
        stopping = True  # stopping waits for the outcome handed over
        release.set()
        await asyncio.wait_for(lane, timeout=10)
    finally:
        lane.cancel()
    assert written == ["T001"]
    assert await redis.xlen(keys.EVENTS) == 0


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


def test_a_redis_url_is_checked_and_its_password_never_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = check_url("redis://:s3cret-pass@127.0.0.1:6390/0")
    assert "s3cret-pass" not in shown(url) and "***" in shown(url)
    assert "s3cret-pass" not in redact(f"connecting to {url} with s3cret-pass")
    assert check_url("rediss://:pw-long-enough@example.org:6380/1").startswith("rediss://")
    monkeypatch.setenv("JARVIS_REDIS_PASSWORD", "from-the-env-123")
    assert check_url("redis://127.0.0.1:6390/0") == "redis://:from-the-env-123@127.0.0.1:6390/0"
    assert "from-the-env-123" not in redact("auth from-the-env-123")
    for bad in ("http://127.0.0.1:6379", "redis://", "127.0.0.1:6379", "redis://h:notaport/0"):
        with pytest.raises(FleetUrlError):
            check_url(bad)


async def test_a_workers_steps_are_filed_under_the_journals_current_run(
    redis: Redis, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    bus = EventBus()
    journal = JournalWriter(data, bus, channel="api")

    async def on_outcome(outcome: Outcome) -> None:
        raise AssertionError("no outcome expected")

    receiver = Receiver(redis, data, bus, on_outcome)
    await receiver.setup()
    try:
        for fields in (
            event_fields(TaskStarted(task_id="T001", task="do it"), "w1"),
            event_fields(TaskFinished(task_id="T001", status="failed"), "w1"),
            event_fields(TaskStarted(task_id="T001", task="do it"), "w2"),  # attempt 2
            artefact_fields("runs/1999-01-01/T001/steps/0001/step.json", b"{}", "T001", "w2"),
            artefact_fields("runs/1999-01-01/T002/steps/0001/step.json", b"{}", "T001", "w2"),
        ):
            await redis.xadd(keys.EVENTS, fields)
        await receiver.read_once(wait_s=0.1)
    finally:
        journal.close()
    folder = find_run(data, "T001")
    assert folder is not None
    assert (folder / "steps" / "r2-0001" / "step.json").read_bytes() == b"{}"
    assert not (folder / "steps" / "0001").exists()
    # a path naming another task's folder is not moved into this one
    assert (data / "runs/1999-01-01/T002/steps/0001/step.json").is_file()
