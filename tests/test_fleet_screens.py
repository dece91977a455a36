"""The fleet workers' screens at the coordinator (DESIGN sections 10 and 11): a real
redis-server, a real `jarvis worker` process on its own Xvfb (800x600, not the coordinator's
1920x1080), the coordinator's API in the test's loop, real x11vnc and a WebSocket client
doing the RFB handshake through the relay; only the model is scripted.

A worker on this machine is watched through ``/api/vnc/worker/{name}`` (its display, served
by x11vnc on loopback), and the web panel shows its canvas while it runs the watched task;
a worker on another host has no live view (409, and no x11vnc started). "Take over" of a
fleet task pauses that worker through its control stream (the model gets no request while
held), the ticket gives input to its display, "Hand back" resumes with the note, and the
coordinator's journal records both; a takeover for a task the worker does not run is
ignored."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus

from jarvis.api.fleet_parts import screens_of
from jarvis.fleet import control, keys, registry
from jarvis.fleet.connection import client
from tests.api_harness import NEW_TASK, Api, is_router, serving_api, until
from tests.fake_model import FakeModel, RecordedRequest, Reply, fake_model_fixture
from tests.redis_server import RedisServer, redis_server
from tests.test_fleet_serve import coordinator_settings, step_texts, until_status
from tests.test_fleet_worker import SUMMARY, TASK, Fleet, acts, done, other
from tests.test_takeover_api import listening
from tests.test_web_panel_approvals import panel
from tests.vnc_client import open_session

__all__ = ["fake_model_fixture", "redis_server"]

pytestmark = [pytest.mark.usefixtures("xserver"), pytest.mark.slow]


@pytest.fixture
def fleet(tmp_path: Path, fake_model: FakeModel, redis_server: RedisServer) -> Iterator[Fleet]:
    made = Fleet(tmp_path, fake_model, redis_server.url)
    yield made
    made.stop()


def worker_url(api: Api, name: str) -> str:
    return api.base.replace("http://", "ws://") + f"/api/vnc/worker/{name}"


class Gate:
    """The scripted model's first step waits here until the test lets it answer."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.go = threading.Event()
        self.steps: list[RecordedRequest] = []

    def answer(self, first: Reply, then: Reply) -> Any:
        def reply(request: RecordedRequest) -> Reply:
            if is_router(request):
                return NEW_TASK
            if (known := other(request)) is not None:
                return known
            self.steps.append(request)
            if len(self.steps) == 1:
                self.asked.set()
                self.go.wait(120)
                return first
            return then

        return reply


async def running_on(http: Any, name: str, task_id: str = "T001") -> dict[str, Any]:
    """Worker ``name``'s listing once its heartbeat says it runs ``task_id``."""
    async with asyncio.timeout(30):
        while True:
            for w in (await http.get("/api/workers")).json()["workers"]:
                if w["name"] == name and w["task"] == task_id:
                    return dict(w)
            await asyncio.sleep(0.2)


async def test_a_local_workers_screen_is_relayed_and_a_remote_one_is_refused(
    fleet: Fleet,
    fake_model: FakeModel,
    redis_server: RedisServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gate = Gate()
    fake_model.set_default(gate.answer(done(), done()))
    settings = coordinator_settings(tmp_path, fake_model, monkeypatch)
    try:
        async with serving_api(settings, fleet_url=redis_server.url) as api, api.client() as http:
            fleet.start("w1")
            posted = await http.post("/api/messages", json={"text": TASK, "channel": "api"})
            assert posted.status_code == 201, posted.text
            await asyncio.to_thread(gate.asked.wait, 90)
            listed = await running_on(http, "w1")
            assert listed["live"] is True and listed["host"] == socket.gethostname()
            live = await http.get("/api/workers/w1/live")
            assert live.status_code == 200, live.text
            assert live.json()["display"] == listed["display"]

            # a worker on another machine: a heartbeat as its own would be
            redis = client(redis_server.url)
            far = registry.WorkerInfo("far", "another-host", ":0", "1024x768", "0", "running")
            far.task = "T999"
            await registry.beat(redis, far, 60)
            refused = await http.get("/api/workers/far/live")
            assert refused.status_code == 409
            assert "not reachable from here" in refused.json()["detail"]
            assert "another-host" in refused.json()["detail"]
            assert (await http.get("/api/workers/nobody/live")).status_code == 404
            far_listed = [w for w in (await http.get("/api/workers")).json()["workers"]]
            assert [(w["name"], w["live"]) for w in far_listed] == [("far", False), ("w1", True)]
            for name in ("far", "nobody"):
                with pytest.raises(InvalidStatus) as closed:
                    await open_session(worker_url(api, name), additional_headers=api.auth)
                assert closed.value.response.status_code == 403
            with pytest.raises(InvalidStatus):  # no token: the guard refuses it first
                await open_session(worker_url(api, "w1"))

            # the worker's own display (800x600), view-only, through the relay
            view = await open_session(worker_url(api, "w1"), additional_headers=api.auth)
            assert (view.width, view.height) == (800, 600)
            assert await view.frame() == 800 * 600 * 4
            screens = screens_of(api.service.daemon.service)  # type: ignore[union-attr]
            assert screens is not None and sorted(screens.servers) == ["w1"]  # none for far
            server = screens.servers["w1"][1]
            assert server._proc is not None
            sockets = listening(server._proc.pid)
            assert sockets and all(addr == "0100007F" for addr, _ in sockets), sockets
            with pytest.raises(InvalidStatus):  # input needs the ticket of a takeover
                await open_session(worker_url(api, "w1") + "?ticket=x", additional_headers=api.auth)

            # the web panel shows that worker's screen while it runs the watched task
            async with panel(api, "fleet-worker-screen") as page:
                from playwright.async_api import expect

                shown = page.locator('#todos li[data-id="T001"]')
                await shown.click()  # the task watched: T001, which w1 runs
                await expect(shown).to_have_class(re.compile(r"\bshown\b"))
                box = page.locator("#vnc")
                await expect(page.locator("#vnc-box")).to_be_visible(timeout=30_000)
                await expect(box).to_have_attribute("data-worker", "w1", timeout=30_000)
                await expect(box).to_have_attribute("data-connected", "yes", timeout=30_000)
                canvas = page.locator("#vnc canvas")
                await expect(canvas).to_be_visible()
                size = await canvas.evaluate("c => [c.width, c.height]")
                assert size == [800, 600]  # the worker's display, not the coordinator's
                await expect(page.locator("#vnc-state")).to_contain_text("on worker w1")
            gate.go.set()
            await view.ws.close()
            ended = await until_status(api, "completed")
            responses = live.text + refused.text + (await http.get("/api/workers")).text
            await redis.aclose()
    finally:
        gate.go.set()
    assert ended.summary == SUMMARY
    for secret in (server.full_password, server.view_password):
        assert secret not in responses
    assert not server.running  # stopped with the daemon


async def test_taking_over_a_fleet_task_pauses_its_worker_and_the_hand_back_resumes_it(
    fleet: Fleet,
    fake_model: FakeModel,
    redis_server: RedisServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gate = Gate()
    fake_model.set_default(gate.answer(acts(), done()))
    settings = coordinator_settings(tmp_path, fake_model, monkeypatch)
    try:
        async with serving_api(settings, fleet_url=redis_server.url) as api, api.client() as http:
            fleet.start("w1")
            posted = await http.post("/api/messages", json={"text": TASK, "channel": "api"})
            assert posted.status_code == 201, posted.text
            await asyncio.to_thread(gate.asked.wait, 90)  # step 1 is being decided
            await running_on(http, "w1")

            # a takeover for a task w1 does not run is ignored there
            redis = client(redis_server.url)
            await control.send(redis, "w1", control.Control("takeover", "T999", by="web"))
            await fleet.said("w1", "control takeover for task T999 ignored")
            [beat] = await registry.workers(redis)
            await redis.aclose()

            refused = await http.post("/api/takeover", json={"by": "email", "task_id": "T001"})
            assert refused.status_code == 403
            taken = await http.post("/api/takeover", json={"by": "web", "task_id": "T001"})
            assert taken.status_code == 200, taken.text
            assert (taken.json()["held"], taken.json()["by"]) == (True, "web")
            twice = await http.post("/api/takeover", json={"by": "tui", "task_id": "T001"})
            assert twice.status_code == 409
            await until(lambda: kinds(api).count("takeover_started") == 1, 60)

            # the TUI takes the web's hold over, having said so: the hold is the TUI's now
            said = {"by": "tui", "task_id": "T001", "take_over": True}
            passed = await http.post("/api/takeover", json=said)
            assert passed.status_code == 200, passed.text
            assert (passed.json()["held"], passed.json()["by"]) == (True, "tui")
            await until(lambda: kinds(api).count("takeover_started") == 2, 60)
            with pytest.raises(InvalidStatus):  # the web's ticket is void
                await open_session(
                    worker_url(api, "w1") + f"?ticket={taken.json()['ticket']}",
                    additional_headers=api.auth,
                )
            not_yours = await http.post("/api/handback", json={"by": "web"})
            assert not_yours.status_code == 409
            taken = passed
            gate.go.set()  # step 1's answer comes: decided before the takeover, not run
            await until(lambda: "step_finished" in kinds(api), 60)
            status = (await http.get("/api/takeover")).json()
            assert (status["held"], status["by"], status["task_id"]) == (True, "tui", "T001")

            # the person's input goes to w1's display through the ticket
            person = await open_session(
                worker_url(api, "w1") + f"?ticket={taken.json()['ticket']}",
                additional_headers=api.auth,
            )
            await person.pointer(700, 500)
            assert await person.frame() > 0
            async with asyncio.timeout(30):  # the pointer moved on w1's display
                while await pointer_on(beat) != (700, 500):
                    await asyncio.sleep(0.1)
            assert len(gate.steps) == 1  # held: the worker asks the model nothing more
            assert "step_started" not in kinds(api)[kinds(api).index("step_finished") :]

            back = await http.post(
                "/api/handback", json={"note": "I closed the dialog", "by": "tui"}
            )
            assert back.status_code == 200, back.text
            assert (back.json()["held"], back.json()["by"]) == (False, "tui")
            await asyncio.wait_for(person.ws.wait_closed(), 10)  # its input view ends
            ended = await until_status(api, "completed")
            assert not (await http.get("/api/takeover")).json()["held"]
            again = await http.post("/api/handback", json={})
            assert again.status_code == 409
    finally:
        gate.go.set()
    assert ended.summary == SUMMARY
    assert len(gate.steps) == 2
    second = gate.steps[1].all_text()
    assert "A person (tui) took over the desktop" in second
    assert "I closed the dialog" in second
    assert "I closed the dialog" in step_texts(fake_model)
    journal = api.journal("T001")
    order = [r["kind"] for r in journal]
    assert order.index("takeover_started") < order.index("takeover_ended")
    started = [r["by"] for r in journal if r["kind"] == "takeover_started"]
    stopped = [r for r in journal if r["kind"] == "takeover_ended"]
    assert started == ["web", "tui"]
    assert [(r["by"], r["reason"], r.get("ended_by")) for r in stopped] == [
        ("web", "taken_over", "tui"),
        ("tui", "handed_back", None),
    ]
    assert stopped[1]["note"] == "I closed the dialog"
    assert "takeover of task" not in fleet.err("w1").replace("T999", "")


async def pointer_on(beat: dict[str, Any]) -> tuple[int, int]:
    """Where the pointer is on a worker's display (xdotool, with the worker's cookie)."""
    env = {**os.environ, "DISPLAY": beat["display"], "XAUTHORITY": beat["xauthority"]}
    proc = await asyncio.create_subprocess_exec(
        "xdotool", "getmouselocation", "--shell", env=env, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    found = dict(line.split("=", 1) for line in out.decode().splitlines() if "=" in line)
    return int(found.get("X", -1)), int(found.get("Y", -1))


def kinds(api: Api) -> list[str]:
    return [r["kind"] for r in api.journal("T001")]


async def test_a_held_workers_screen_comes_back_by_itself_when_idle(
    redis_server: RedisServer,
) -> None:
    """The coordinator keeps the idle clock (the person's input passes its relay): no
    input for ``idle_end_s`` sends the worker its hand back, reason idle."""
    from jarvis.fleet.holds import FleetHolds
    from jarvis.safety.takeover import TakeoverRefused

    redis = client(redis_server.url)
    holds = FleetHolds(redis, idle_end_s=0.3, refused=frozenset({"email"}))
    ended: list[str] = []
    holds.on_end.append(ended.append)
    try:
        with pytest.raises(TakeoverRefused) as no:
            await holds.take("w1", "email", "T001")
        assert no.value.why == "not_allowed"
        holder = await holds.take("w1", "web", "T001")
        with pytest.raises(TakeoverRefused) as busy:
            await holds.take("w1", "tui", "T001")
        assert busy.value.why == "held"
        with pytest.raises(TakeoverRefused) as no:  # taking over is a take: still refused
            await holds.take("w1", "email", "T001", take_over=True)
        assert no.value.why == "not_allowed" and holds.holders["w1"] is holder
        passed = await holds.take("w1", "tui", "T002", take_over=True)
        assert (passed.by, passed.task_id) == ("tui", "T001")  # the held task's, not asked
        assert passed.ticket != holder.ticket and ended == ["w1"]  # the web's view closes
        ended.clear()
        async with asyncio.timeout(20):
            while not ended:
                await asyncio.sleep(0.05)
        entries = await redis.xrange(keys.control_key("w1"))
        sent = [{k.decode(): v.decode() for k, v in fields.items()} for _, fields in entries]
        assert [(m["kind"], m["task"], m["by"]) for m in sent] == [
            ("takeover", "T001", "web"),
            ("takeover", "T001", "tui"),
            ("handback", "T001", "tui"),
        ]
        assert "reason" not in sent[0] and sent[1]["reason"] == "taken_over"
        assert sent[2]["reason"] == "idle" and "no input for" in sent[2]["note"]
        assert ended == ["w1"] and holds.holders == {}
        assert holder.ticket not in json.dumps(sent)  # the ticket never goes to Redis
        with pytest.raises(TakeoverRefused):
            await holds.hand_back(None)
    finally:
        holds.close()
        await redis.aclose()


def test_a_workers_display_on_another_host_is_not_served_from_here() -> None:
    from jarvis.fleet.screens import why_not_here

    here = socket.gethostname()
    assert why_not_here({"name": "a", "host": here, "display": ":5"}) is None
    far = why_not_here({"name": "b", "host": "elsewhere", "display": ":5"})
    assert far is not None and "not reachable from here" in far
    assert why_not_here({"name": "c", "host": here, "display": ""}) is not None
    locked = why_not_here(
        {"name": "d", "host": here, "display": ":5", "xauthority": "/nonexistent/cookie"}
    )
    assert locked is not None and "does not let this process in" in locked
