"""`jarvis serve --fleet URL --local-worker`: one worker of the fleet in the daemon's own
process, on its display, through a real redis-server; and a coordinator without it
starts and dispatches on a box with no display at all. Only the model is scripted."""

from __future__ import annotations

import asyncio
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

import pytest

from jarvis.events import Event, ReplyReady
from jarvis.fleet import keys
from jarvis.fleet.serving import FleetRunner
from jarvis.gateway.todos import TodoList
from tests.agent_harness import TEST_KEY, agent_settings
from tests.api_harness import NEW_TASK, is_router, serving_api, until
from tests.fake_model import FakeModel, RecordedRequest, Reply, call, fake_model_fixture
from tests.redis_server import RedisServer, redis_server
from tests.test_fleet_worker import SUMMARY, TASK, Fleet, acts, done, other
from tests.xserver import start_xvfb

__all__ = ["fake_model_fixture", "redis_server"]

ROOT = Path(__file__).parent.parent


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    with ExitStack() as held:
        yield held


@pytest.mark.slow
async def test_the_local_worker_runs_a_task_end_to_end_and_obeys_approvals_and_a_cancel(
    fake_model: FakeModel,
    redis_server: RedisServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    stack: ExitStack,
) -> None:
    risky = Reply(text="Thought: elevate.", tool_calls=[call("type", text="sudo true")])
    steps = iter([acts(), risky, done()])
    thinking, release = threading.Event(), threading.Event()

    def answer(request: RecordedRequest) -> Reply:
        if is_router(request):
            return NEW_TASK
        if (reply := other(request)) is not None:
            return reply
        if "Wait for a cancel" in request.all_text():
            thinking.set()
            release.wait(60)  # the model thinks until the cancel stopped the run
            return done()
        return next(steps)

    fake_model.set_default(answer)
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, fleet={"lease_s": 3}, settle_ceiling_ms=300
    )
    xvfb = stack.enter_context(start_xvfb(800, 600))  # the display the daemon starts on
    for name in ("DISPLAY", "XAUTHORITY"):
        monkeypatch.setenv(name, xvfb.env()[name])
    replies: list[Event] = []
    try:
        async with (
            serving_api(settings, fleet_url=redis_server.url, local_worker=True) as api,
            api.client() as http,
        ):
            api.gateway.bus.subscribe(replies.append, ReplyReady)
            fleet = api.gateway.runner
            assert isinstance(fleet, FleetRunner) and fleet.local is not None
            posted = await http.post("/api/messages", json={"text": TASK, "channel": "api"})
            assert posted.status_code == 201, posted.text
            held: list[dict[str, Any]] = []
            async with asyncio.timeout(90):  # its held call waits here, as a remote one's
                while not held:
                    await asyncio.sleep(0.1)
                    held = (await http.get("/api/approvals")).json()["pending"]
            answered = await http.post(
                f"/api/approvals/{held[0]['approval_id']}", json={"decision": "allow_once"}
            )
            assert answered.status_code == 200, answered.text
            await until(
                lambda: (t := TodoList(api.data_dir).get("T001")) is not None and not t.is_open,
                90,
            )
            listed = (await http.get("/api/workers")).json()

            posted = await http.post(
                "/api/messages", json={"text": "Wait for a cancel, please.", "channel": "api"}
            )
            assert posted.status_code == 201, posted.text
            await asyncio.to_thread(thinking.wait, 90)
            running: list[dict[str, Any]] = []
            async with asyncio.timeout(30):  # its next heartbeat says what it runs
                while not any(w["state"] == "running" for w in running):
                    await asyncio.sleep(0.2)
                    running = (await http.get("/api/workers")).json()["workers"]
            cancelled = await http.post("/api/tasks/T002/cancel", json={"by": "web"})
            assert cancelled.status_code == 202, cancelled.text
            await until(lambda: len(replies) == 2, 60)
            local = fleet.local
            assert local.worker is not None
            scratch = local.worker.settings.data_dir
            assert scratch != api.data_dir and scratch.is_dir()
    finally:
        release.set()
    first = TodoList(api.data_dir).get("T001")
    assert first is not None and (first.status, first.summary) == ("completed", SUMMARY)
    [worker] = listed["workers"]
    assert listed["fleet"] is True and worker["name"] == local.name
    assert worker["name"].startswith("local-") and worker["display"] == xvfb.display
    assert worker["size"] == "800x600"
    assert [(h["task_id"], h["tool_name"], h["arguments"]) for h in held] == [
        ("T001", "type", {"text": "sudo true"})
    ]
    resolved = [e for e in api.journal("T001") if e["kind"] == "approval_resolved"]
    assert [(e["decision"], e["by"]) for e in resolved] == [("allow_once", "api")]
    assert [(w["name"], w["state"], w["task"]) for w in running] == [
        (local.name, "running", "T002")
    ]
    kinds = [line["kind"] for line in api.journal("T001")]
    assert kinds[0] == "task_started" and kinds[-2:] == ["task_finished", "reply_ready"]
    assert kinds.count("step_finished") == 3  # journaled here, as a remote worker's run
    day = datetime.now().strftime("%Y-%m-%d")
    steps_dir = api.data_dir / "runs" / day / "T001" / "steps"
    assert sorted(p.name for p in steps_dir.iterdir()) == ["0001", "0002", "0003"]
    second = TodoList(api.data_dir).get("T002")
    assert second is not None and second.status == "cancelled"
    assert second.summary is not None and second.summary.endswith("cancelled by web")
    finished = [e for e in api.journal("T002") if e["kind"] == "task_finished"]
    assert [(e["status"], e["stopped_by"]) for e in finished] == [("cancelled", "web")]
    assert local.worker.ran == 2
    assert not scratch.exists()  # the scratch data dir went with the worker
    from jarvis.fleet.connection import client

    redis = client(redis_server.url)
    try:  # it said goodbye: no heartbeat left behind
        assert await redis.exists(keys.worker_key(local.name)) == 0
    finally:
        await redis.aclose()


def test_local_worker_without_a_fleet_is_refused_in_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JARVIS_DATA_DIR": str(tmp_path / "data")}
    proc = subprocess.run(
        [sys.executable, "-m", "jarvis", "serve", "--local-worker"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 1
    [line] = proc.stderr.splitlines()
    assert line.startswith("jarvis: ") and "--fleet" in line


@pytest.mark.slow
async def test_a_coordinator_on_a_box_without_a_display_starts_and_dispatches(
    fake_model: FakeModel, redis_server: RedisServer, tmp_path: Path
) -> None:
    steps = iter([done()])

    def answer(request: RecordedRequest) -> Reply:
        if is_router(request):
            return NEW_TASK
        return other(request) or next(steps)

    fake_model.set_default(answer)
    home = tmp_path / "home"  # no ~/.Xauthority there
    home.mkdir()
    data = tmp_path / "coordinator"
    env = {
        k: v for k, v in os.environ.items() if k not in ("DISPLAY", "XAUTHORITY", "WAYLAND_DISPLAY")
    }
    env.update(
        HOME=str(home),
        PYTHONPATH=str(ROOT),
        ANTHROPIC_API_KEY=TEST_KEY,
        ANTHROPIC_BASE_URL=fake_model.anthropic_base_url,
        JARVIS_DATA_DIR=str(data),
        JARVIS_MAX_RETRIES="0",
        JARVIS_LONG_TERM_MEMORY="false",
        JARVIS_FLEET__LEASE_S="3",
        ANONYMIZED_TELEMETRY="False",
        JARVIS_REDIS_PASSWORD=redis_server.password,  # not in argv
    )
    out = tmp_path / "coordinator.log"
    fleet = Fleet(tmp_path, fake_model, redis_server.url)
    args = ["serve", "--fleet", redis_server.bare_url, "--http", "off"]
    with out.open("wb") as log:
        coordinator = subprocess.Popen(
            [sys.executable, "-m", "jarvis", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        await until(lambda: "tasks go to the fleet's workers" in out.read_text(), 60)
        assert coordinator.poll() is None, out.read_text()
        fleet.start("w1")
        drop = data / "messages" / "drop"
        drop.mkdir(parents=True, exist_ok=True)
        (drop / "task.md").write_text(TASK + "\n")
        await until(lambda: (t := TodoList(data).get("T001")) is not None and not t.is_open, 90)
        coordinator.send_signal(signal.SIGTERM)
        code = await asyncio.to_thread(coordinator.wait, 30)
    finally:
        if coordinator.poll() is None:
            coordinator.kill()
            coordinator.wait(30)
        fleet.stop()
    said = out.read_text()
    ended = TodoList(data).get("T001")
    assert ended is not None and (ended.status, ended.summary) == ("completed", SUMMARY)
    assert code == 0, said
    assert "Traceback" not in said and "Xauth" not in said and "no display" not in said
    assert "ran 1 task(s): 1 completed" in said
    assert not (home / ".Xauthority").exists()
