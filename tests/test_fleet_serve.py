"""`jarvis serve --fleet`: the gateway (its API on a free loopback port, in the test's
loop) coordinates real `jarvis worker` processes, each on its own Xvfb, through a real
redis-server; only the model is scripted. A message taken by ``POST /api/messages`` is run
by a worker and ends as a local task does (todos.md, the archive, the reply, the journal
and step files here); a worker's held call waits in ``GET /api/approvals`` here and the
answer reaches the worker; ``GET /api/workers`` lists the workers; without Redis the
message still becomes a task, which waits and runs once Redis is back."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from jarvis.config import Settings
from jarvis.events import Event, ReplyReady
from jarvis.gateway.todos import TodoList
from tests.agent_harness import agent_settings
from tests.api_harness import NEW_TASK, Api, is_router, serving_api, until
from tests.fake_model import FakeModel, RecordedRequest, Reply, call, fake_model_fixture
from tests.redis_server import RedisServer, redis_server
from tests.test_fleet_worker import SUMMARY, TASK, Fleet, acts, done, other
from tests.test_web_panel_approvals import panel

__all__ = ["fake_model_fixture", "redis_server"]

pytestmark = pytest.mark.usefixtures("xserver")


@pytest.fixture
def fleet(tmp_path: Path, fake_model: FakeModel, redis_server: RedisServer) -> Iterator[Fleet]:
    made = Fleet(tmp_path, fake_model, redis_server.url)
    yield made
    made.stop()


def coordinator_settings(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> Settings:
    return agent_settings(tmp_path, fake_model, monkeypatch, fleet={"lease_s": 3})


def todo(api: Api, task_id: str = "T001") -> Any:
    return TodoList(api.data_dir).get(task_id)


async def until_status(api: Api, status: str, task_id: str = "T001", timeout: float = 90) -> Any:
    await until(lambda: (t := todo(api, task_id)) is not None and t.status == status, timeout)
    return todo(api, task_id)


async def workers_off_duty(http: Any, timeout: float = 30) -> Any:
    """``/api/workers`` once no worker is on a task (or at the deadline, as it was then): a
    worker tells the registry it is idle a moment after the coordinator has the task's end."""
    deadline = time.monotonic() + timeout
    while True:
        listed = (await http.get("/api/workers")).json()
        if all(w["task"] is None for w in listed["workers"]) or time.monotonic() > deadline:
            return listed
        await asyncio.sleep(0.05)


def step_texts(fake_model: FakeModel) -> str:
    return "\n".join(r.all_text() for r in fake_model.requests if not is_router(r))


def route_then_play(fake_model: FakeModel, replies: list[Reply]) -> None:
    """The router makes every message a new task; the steps get ``replies`` in turn
    (after the non-step requests ``other`` answers)."""
    script = iter(replies)

    def answer(request: RecordedRequest) -> Reply:
        if is_router(request):
            return NEW_TASK
        return other(request) or next(script)

    fake_model.set_default(answer)


@pytest.mark.slow
async def test_a_message_to_the_fleet_runs_on_a_worker_and_ends_as_a_local_task(
    fleet: Fleet,
    fake_model: FakeModel,
    redis_server: RedisServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    route_then_play(fake_model, [acts(), done()])
    settings = coordinator_settings(tmp_path, fake_model, monkeypatch)
    replies: list[Event] = []
    async with serving_api(settings, fleet_url=redis_server.url) as api, api.client() as http:
        api.gateway.bus.subscribe(replies.append, ReplyReady)
        for name in ("w1", "w2"):
            fleet.start(name)
        for name in ("w1", "w2"):
            await fleet.said(name, "waiting for tasks")
        posted = await http.post("/api/messages", json={"text": TASK, "channel": "api"})
        assert posted.status_code == 201, posted.text
        message_id = posted.json()["message_id"]
        done_todo = await until_status(api, "completed")
        await until(lambda: bool(replies))
        listed = await workers_off_duty(http)
        health = (await http.get("/api/health")).json()
        async with panel(api, "fleet-workers") as page:  # the web panel lists them too
            from playwright.async_api import expect

            await expect(page.locator("#workers-box")).to_be_visible()
            rows = page.locator("#workers li")
            await expect(rows).to_have_count(2)
            await expect(rows.nth(0)).to_have_attribute("data-worker", "w1")
            await expect(rows.nth(1)).to_contain_text("w2")
    assert done_todo.summary == SUMMARY and done_todo.message_ids == [message_id]
    [reply] = replies
    assert isinstance(reply, ReplyReady)
    assert (reply.task_id, reply.channel, reply.status, reply.text) == (
        "T001",
        "api",
        "completed",
        SUMMARY,
    )
    assert reply.message_ids == [message_id]
    day = datetime.now().strftime("%Y-%m-%d")
    archive = (api.data_dir / "messages" / "archive" / f"{day}.md").read_text()
    assert message_id in archive and SUMMARY in archive
    assert message_id not in (api.data_dir / "messages" / "processing.md").read_text()
    kinds = [line["kind"] for line in api.journal("T001")]
    assert kinds[0] == "task_started"
    assert kinds[-2:] == ["task_finished", "reply_ready"]  # as a local task's journal ends
    assert kinds.count("step_finished") == 2
    steps_dir = api.data_dir / "runs" / day / "T001" / "steps"
    assert sorted(p.name for p in steps_dir.iterdir()) == ["0001", "0002"]
    assert (steps_dir / "0001" / "step.json").is_file()
    assert listed["fleet"] is True
    assert [w["name"] for w in listed["workers"]] == ["w1", "w2"]
    for w in listed["workers"]:
        assert (w["size"], w["state"], w["task"]) == ("800x600", "idle", None)
        assert w["display"].startswith(":") and w["version"] == health["version"]
        datetime.fromisoformat(w["last_heartbeat"])  # a time, as the schema says
    assert redis_server.password not in fleet.err("w1") + fleet.err("w2")


@pytest.mark.slow
async def test_a_workers_held_call_is_approved_and_denied_at_the_coordinator(
    fleet: Fleet,
    fake_model: FakeModel,
    redis_server: RedisServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    risky = Reply(text="Thought: elevate.", tool_calls=[call("type", text="sudo true")])
    allowed = Reply(tool_calls=[call("finished", summary="typed it")])
    denied = Reply(tool_calls=[call("finished", summary="did without it")])
    route_then_play(fake_model, [risky, allowed, risky, denied])
    settings = coordinator_settings(tmp_path, fake_model, monkeypatch)
    async with serving_api(settings, fleet_url=redis_server.url) as api, api.client() as http:
        fleet.start("w1")
        await fleet.said("w1", "waiting for tasks")
        decisions = {"T001": "allow_once", "T002": "deny"}
        for task_id, decision in decisions.items():
            text = f"type sudo true ({task_id})"
            posted = await http.post("/api/messages", json={"text": text, "channel": "api"})
            assert posted.status_code == 201, posted.text
            pending: list[dict[str, Any]] = []
            async with asyncio.timeout(90):
                while not pending:
                    await asyncio.sleep(0.1)
                    pending = (await http.get("/api/approvals")).json()["pending"]
            [request] = pending
            assert (request["task_id"], request["tool_name"]) == (task_id, "type")
            assert request["arguments"] == {"text": "sudo true"}
            shot = await http.get(f"/api/approvals/{request['approval_id']}/screenshot")
            assert shot.status_code == 200 and shot.headers["content-type"].startswith("image/")
            assert len(shot.content) > 100  # the worker's screen, shipped here
            answered = await http.post(
                f"/api/approvals/{request['approval_id']}",
                json={"decision": decision, "note": "not on this desk"},
            )
            assert answered.status_code == 200, answered.text
            ended = await until_status(api, "completed", task_id)
            assert (await http.get("/api/approvals")).json()["pending"] == []
            resolved = [e for e in api.journal(task_id) if e["kind"] == "approval_resolved"]
            assert [(e["decision"], e["by"]) for e in resolved] == [(decision, "api")]  # once
            if decision == "allow_once":
                assert ended.summary == "typed it"
            else:
                assert ended.summary == "did without it"
    texts = step_texts(fake_model)
    assert texts.count("the user denied it") >= 1 and "not on this desk" in texts
    assert "approval answer ignored" not in fleet.err("w1")


@pytest.mark.slow
async def test_without_redis_a_message_waits_as_a_task_and_runs_when_redis_is_back(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    route_then_play(fake_model, [done()])
    settings = coordinator_settings(tmp_path, fake_model, monkeypatch)
    with RedisServer(appendonly=True) as server:
        server.stop()  # the coordinator starts with its Redis away
        fleet = Fleet(tmp_path, fake_model, server.url)
        try:
            async with (
                serving_api(settings, fleet_url=server.url) as api,
                api.client() as http,
            ):
                posted = await http.post("/api/messages", json={"text": TASK, "channel": "api"})
                assert posted.status_code == 201, posted.text
                waiting = await until_status(api, "pending", timeout=30)
                assert waiting.message_ids == [posted.json()["message_id"]]
                assert (await http.get("/api/workers")).json() == {"fleet": True, "workers": []}
                server.start()
                fleet.start("w1")
                ended = await until_status(api, "completed")
        finally:
            fleet.stop()
    assert ended.summary == SUMMARY
    run = json.loads(
        (
            api.data_dir / "runs" / datetime.now().strftime("%Y-%m-%d") / "T001" / "run.json"
        ).read_text()
    )
    assert run["status"] == "completed"


@pytest.mark.slow
@pytest.mark.parametrize("route", ["/api/tasks/T001/cancel", "/api/stop"])
async def test_a_cancel_or_stop_from_the_api_reaches_the_worker_that_runs_the_task(
    route: str,
    fleet: Fleet,
    fake_model: FakeModel,
    redis_server: RedisServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    thinking, release = threading.Event(), threading.Event()

    def answer(request: RecordedRequest) -> Reply:
        if is_router(request):
            return NEW_TASK
        if (reply := other(request)) is not None:
            return reply
        thinking.set()
        release.wait(60)  # the model thinks until the cancel stopped the run
        return done()

    fake_model.set_default(answer)
    settings = coordinator_settings(tmp_path, fake_model, monkeypatch)
    replies: list[Event] = []
    try:
        async with serving_api(settings, fleet_url=redis_server.url) as api, api.client() as http:
            api.gateway.bus.subscribe(replies.append, ReplyReady)
            fleet.start("w1")
            posted = await http.post("/api/messages", json={"text": TASK, "channel": "api"})
            assert posted.status_code == 201, posted.text
            await asyncio.to_thread(thinking.wait, 90)
            running: list[dict[str, Any]] = []
            async with asyncio.timeout(30):  # its next heartbeat says what it runs
                while not any(w["state"] == "running" for w in running):
                    await asyncio.sleep(0.2)
                    running = (await http.get("/api/workers")).json()["workers"]
            cancelled = await http.post(route, json={"by": "web"})
            assert cancelled.status_code == 202, cancelled.text
            if route == "/api/stop":
                assert cancelled.json() == {"stopping": True, "by": "web"}
            await until(lambda: bool(replies), 60)
    finally:
        release.set()
    assert [(w["name"], w["state"], w["task"]) for w in running] == [("w1", "running", "T001")]
    ended = todo(api)
    assert ended.status == "cancelled" and ended.summary.endswith("cancelled by web")
    [reply] = replies
    assert isinstance(reply, ReplyReady) and reply.status == "cancelled"
    finished = [e for e in api.journal("T001") if e["kind"] == "task_finished"]
    assert [(e["status"], e["stopped_by"]) for e in finished] == [("cancelled", "web")]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--fleet", "http://127.0.0.1:6379"], "not a Redis URL"),
        (["--fleet", "redis://127.0.0.1:6379/0", "--once"], "--once runs tasks here"),
    ],
)
def test_serve_fleet_refuses_a_bad_url_and_once_in_one_line(
    tmp_path: Path, args: list[str], said: str
) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}
    env["JARVIS_DATA_DIR"] = str(tmp_path / "data")
    proc = subprocess.run(
        [sys.executable, "-m", "jarvis", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 1
    [line] = proc.stderr.splitlines()
    assert line.startswith("jarvis: ") and said in line


@pytest.mark.slow
async def test_an_approval_of_a_worker_killed_while_it_waits_is_closed_and_asked_again(
    fleet: Fleet,
    fake_model: FakeModel,
    redis_server: RedisServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    risky = Reply(text="Thought: elevate.", tool_calls=[call("type", text="sudo true")])

    def answer(request: RecordedRequest) -> Reply:
        if is_router(request):
            return NEW_TASK
        return other(request) or risky  # each attempt asks again

    fake_model.set_default(answer)
    settings = coordinator_settings(tmp_path, fake_model, monkeypatch)
    async with serving_api(settings, fleet_url=redis_server.url) as api, api.client() as http:

        async def pending() -> list[dict[str, Any]]:
            return list((await http.get("/api/approvals")).json()["pending"])

        worker = fleet.start("w1", lease_s=2)
        posted = await http.post("/api/messages", json={"text": "type sudo", "channel": "api"})
        assert posted.status_code == 201, posted.text
        first: list[dict[str, Any]] = []
        async with asyncio.timeout(90):
            while not first:
                await asyncio.sleep(0.1)
                first = await pending()
        worker.kill()  # kill -9 while its gate waits for the person
        fleet.start("w2", lease_s=2)
        again: list[dict[str, Any]] = []
        async with asyncio.timeout(90):  # the lease expires, the task runs on w2, which asks
            while not again or again == first:
                await asyncio.sleep(0.2)
                again = await pending()
        [asked] = again  # the dead worker's request is gone, the new one waits
        assert asked["task_id"] == "T001" and asked["approval_id"] != first[0]["approval_id"]
        gone = [
            e
            for e in api.journal("T001")
            if e["kind"] == "approval_resolved" and e["approval_id"] == first[0]["approval_id"]
        ]
        assert [(e["decision"], e["note"]) for e in gone] == [
            ("cancelled", "the worker that asked is gone")
        ]
        stale = await http.post(
            f"/api/approvals/{first[0]['approval_id']}", json={"decision": "allow_once"}
        )
        assert stale.status_code == 404
