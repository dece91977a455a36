"""Long-term memory in one place: the coordinator (`jarvis serve --fleet`, in the test's
loop) recalls at dispatch and a real `jarvis worker` process puts the lines into the
model's context; what the worker learns (`remember`, the distilled skill, the history)
lands in the coordinator's chromadb store, redacted, and a later task recalls it; the
worker's data dir holds no store. A malformed memory entry is logged and acknowledged.
Real redis-server; only the model is scripted."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from jarvis.events import EventBus
from jarvis.fleet import keys
from jarvis.fleet.connection import client
from jarvis.fleet.memory import (
    RelayedMemory,
    RememberNote,
    SkillNote,
    carried_memories,
    note_fields,
    recalled_field,
)
from jarvis.fleet.receiver import Outcome, Receiver
from jarvis.fleet.redis_queue import Janitor, RedisQueue
from jarvis.gateway.todos import TodoList
from jarvis.memory.long_term import LongTermMemory, Memory
from jarvis.tools.results import ToolFailure
from tests.agent_harness import agent_settings
from tests.api_harness import NEW_TASK, is_router, serving_api, until
from tests.fake_model import FakeModel, RecordedRequest, Reply, call, fake_model_fixture
from tests.redis_server import RedisServer, redis_server
from tests.test_fleet_worker import Fleet, other

__all__ = ["fake_model_fixture", "redis_server"]

SEEDED = "The user wants every document saved as PDF in the Reports folder"
SIGNATURE = "The user signs every letter as Captain Jarvis of the good ship Tkinter"
SECRET = "sk-fleetmemory0123456789abcdef"
FIRST = "Save the quarterly report document where the user keeps documents"
SECOND = "Write a short letter to the landlord and sign it the way the user signs letters"
SKILL = "1. Open the document.\n2. Save it as PDF in Reports."


def ended(data_dir: Path, task_id: str) -> bool:
    todo = TodoList(data_dir).get(task_id)
    return todo is not None and todo.status not in ("pending", "in_progress")


def is_step(request: RecordedRequest, task: str) -> bool:
    text = request.all_text()
    return task in text and not is_router(request) and other(request) is None


@pytest.mark.slow
async def test_memories_go_out_with_a_task_and_what_a_worker_learns_comes_back(
    redis_server: RedisServer,
    fake_model: FakeModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first_steps = iter(
        [
            Reply(
                text="Thought: the user told me how they sign; keep it, and the key.",
                tool_calls=[
                    call("remember", content=SIGNATURE, type="preference", importance=8),
                    call("remember", content=f"The deploy key is {SECRET}", importance=3),
                ],
            ),
            Reply(text="Thought: done.", tool_calls=[call("finished", summary="saved it")]),
        ]
    )

    def answer(request: RecordedRequest) -> Reply:
        if is_router(request):
            return NEW_TASK
        if (reply := other(request)) is not None:
            return Reply(text=SKILL) if reply.text.startswith("1.") else reply
        if FIRST in request.all_text():
            return next(first_steps)
        return Reply(text="Thought: ask.", tool_calls=[call("call_user", message="which one?")])

    fake_model.set_default(answer)
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, long_term_memory=True, fleet={"lease_s": 3}
    )
    with LongTermMemory.from_settings(settings) as memory:  # what the coordinator knows
        memory.store(Memory(type="preference", content=SEEDED, importance=7))
    fleet = Fleet(tmp_path, fake_model, redis_server.url)
    try:
        async with (
            serving_api(settings, fleet_url=redis_server.url) as api,
            api.client() as http,
        ):
            fleet.start("w1")
            for text in (FIRST, SECOND):
                posted = await http.post("/api/messages", json={"text": text, "channel": "api"})
                assert posted.status_code == 201, posted.text
                task_id = "T001" if text == FIRST else "T002"
                await until(lambda t=task_id: ended(api.data_dir, t), 90)
            bridge = api.gateway.memory.bridge
            assert bridge is not None
            stored = await asyncio.to_thread(bridge.memory.list)
    finally:
        fleet.stop()
    first = [r.all_text() for r in fake_model.requests if is_step(r, FIRST)]
    second = [r.all_text() for r in fake_model.requests if is_step(r, SECOND)]
    offered = [r.tool_names for r in fake_model.requests if is_step(r, FIRST)]
    # the memory stored at the coordinator was in the worker's first model request
    assert SEEDED in first[0] and "[preference, importance 7]" in first[0]
    assert "remember" in offered[0]  # the worker offers it, as a local run does
    # what the worker remembered was stored here, redacted, and the next task recalled it
    by_type: dict[str, list[Memory]] = {}
    for m in stored:
        by_type.setdefault(m.type, []).append(m)
    signature = [m for m in by_type["preference"] if m.content == SIGNATURE]
    assert [(m.importance, m.task_ids) for m in signature] == [(8.0, ["T001"])]
    assert all(SECRET not in m.content for m in stored)
    assert any("The deploy key is [REDACTED]" in m.content for m in stored)
    assert [m.task_ids for m in by_type["skill"]] == [["T001"]]
    assert "Save it as PDF in Reports" in by_type["skill"][0].content
    history = {m.task_ids[0]: m.content for m in by_type["history"]}
    assert "finished after 2 step(s)" in history["T001"] and "saved it" in history["T001"]
    assert "needs_user" in history["T002"]
    assert SIGNATURE in second[0] and "[preference, importance 8]" in second[0]
    # the worker's data dir holds no long-term store
    worker_dir = tmp_path / "w1"
    assert (worker_dir / "runs").is_dir()  # (it did run there)
    assert not (worker_dir / "memory" / "long_term").exists()
    assert not list(worker_dir.rglob("chroma.sqlite3"))


async def test_a_malformed_memory_entry_is_logged_and_acknowledged(
    redis_server: RedisServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    redis = client(redis_server.url)
    kept: list[tuple[Any, str, str]] = []

    async def keep(note: Any, task_id: str, worker: str) -> None:
        kept.append((note, task_id, worker))

    async def outcome(_: Outcome) -> None:
        raise AssertionError("no outcome was sent")

    receiver = Receiver(redis, tmp_path, EventBus(), outcome, on_memory=keep)
    try:
        await receiver.setup()
        good = RememberNote(id="mem-1", type="preference", content="tea, no sugar", importance=4)
        bad_data = [
            "{not json",
            json.dumps({"kind": "remember", "id": "m", "type": "preference", "content": "x"}),
            json.dumps({"kind": "skill", "task": "t", "procedure": "p", "extra": 1}),
            json.dumps({"kind": "forget", "content": "everything"}),
        ]
        for data in bad_data:
            await redis.xadd(
                keys.EVENTS, {"type": "memory", "task": "T001", "worker": "w9", "data": data}
            )
        no_task: Any = note_fields(SkillNote(task="t", procedure="p"), "", "w9")
        await redis.xadd(keys.EVENTS, no_task)
        fields: Any = note_fields(good, "T001", "w1")
        await redis.xadd(keys.EVENTS, fields)
        with caplog.at_level(logging.WARNING, logger="jarvis.fleet.receiver"):
            handled = await receiver.read_once(wait_s=0.1)
        pending: Any = await redis.xpending(keys.EVENTS, keys.COORDINATOR_GROUP)
        left = await redis.xlen(keys.EVENTS)
    finally:
        await redis.aclose()
    assert handled == 6 and receiver.refused == 5
    assert kept == [(good, "T001", "w1")]
    refused = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(refused) == 5 and all("'w9'" in line for line in refused)
    assert pending["pending"] == 0 and left == 0  # acknowledged and deleted, all of them


async def test_the_recalled_memories_stay_with_a_task_given_back_or_queued_again(
    redis_server: RedisServer,
) -> None:
    redis = client(redis_server.url)
    lines = recalled_field(["[preference, importance 7] tea, no sugar"])
    try:
        coordinator = RedisQueue(redis, "coordinator")
        await coordinator.setup()
        assert await coordinator.dispatch("T001", "make tea", ("api",), memories=lines)
        assert await coordinator.carries("T001")
        worker = RedisQueue(redis, "w1", lease_ms=200)
        claim = await worker.claim(wait_s=1)
        assert claim is not None and claim.extra == {"memories": lines}
        assert await worker.give_back(claim, "stopping")
        again = await worker.claim(wait_s=1)
        assert again is not None and again.extra == {"memories": lines}
        janitor = Janitor(redis, lease_ms=200)  # the worker "dies": its lease runs out
        async with asyncio.timeout(10):
            while "T001" not in (await janitor.sweep()).again:
                await asyncio.sleep(0.05)
        third = await RedisQueue(redis, "w2").claim(wait_s=1)
        plain = await coordinator.dispatch("T002", "no memories kept", ())
        fourth = await RedisQueue(redis, "w3").claim(wait_s=1)
    finally:
        await redis.aclose()
    assert third is not None and (third.task_id, third.attempt) == ("T001", 2)
    assert third.extra == {"memories": lines}
    assert plain and fourth is not None and fourth.extra == {}  # no store: no field


async def test_a_workers_memory_without_a_store_at_the_coordinator_stores_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sent: list[dict[str, str]] = []

    async def send(fields: dict[str, str]) -> None:
        sent.append(fields)

    relay = RelayedMemory(send, "w1")
    relay.begin("T001", None)  # the task entry carried no memories: no store there
    with pytest.raises(ToolFailure, match="keeps no long-term memory"):
        await asyncio.to_thread(relay.remember, "tea, no sugar", "preference", 5, "T001")
    relay.record_task("make tea", "T001", "finished", "done", 2)
    await relay.flush()
    assert sent == [] and relay.recall("make tea") == []
    with caplog.at_level(logging.WARNING, logger="jarvis.fleet.memory"):
        assert carried_memories("{not json", "T002") == []
        assert carried_memories(json.dumps(["fine", 3]), "T003") == []
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["task T002", "task T003"]
    relay.begin("T004", carried_memories(json.dumps(["[preference] tea"]), "T004"))
    memory = await asyncio.to_thread(relay.remember, f"key {SECRET}", "preference", 5, "T004")
    relay.record_task("make tea", "T004", "finished", "done", 2)  # from the loop: sent later
    await relay.flush()
    assert relay.recall("anything") == ["[preference] tea"]
    assert [json.loads(f["data"])["kind"] for f in sent] == ["remember", "history"]
    assert json.loads(sent[0]["data"])["id"] == memory.id and SECRET not in sent[0]["data"]
    assert {(f["type"], f["task"], f["worker"]) for f in sent} == {("memory", "T004", "w1")}
