"""``GET /api/screen/live`` at a fleet's coordinator that has no display of its own (DISPLAY
unset): a real redis-server, a real `jarvis worker` on its own 800x600 Xvfb, the
coordinator's API in the test's loop; only the model is scripted.

While the worker runs the watched task, the live picture is that worker's display (its
size, and a window of a known colour drawn there, repainted and followed); a worker on
another host (a forged heartbeat and lease) gets the task's last step screenshot that the
worker shipped, marked ``x-jarvis-screen: last-step``, and the web panel and the TUI (its
thumbnail comes through the same route, by its API client) say under it that it is not
live; with no task running the answer is a one-line JSON 404, never the coordinator's
screen or a 500."""

from __future__ import annotations

import asyncio
import io
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image

from jarvis.fleet import keys, registry
from jarvis.fleet.connection import client
from jarvis.tui.app import JarvisApp
from jarvis.tui.client import ApiBackend
from jarvis.tui.settings import TuiSettings
from tests.api_harness import NEW_TASK, is_router, serving_api
from tests.fake_model import FakeModel, RecordedRequest, Reply, fake_model_fixture
from tests.redis_server import RedisServer, redis_server
from tests.test_api_screen_live import BLUE, RED, near, painted
from tests.test_fleet_screens import running_on
from tests.test_fleet_serve import coordinator_settings, until_status
from tests.test_fleet_worker import SUMMARY, TASK, Fleet, acts, done, other
from tests.test_web_panel_approvals import image_loaded, panel
from tests.tui_fixtures import until

__all__ = ["fake_model_fixture", "redis_server"]

pytestmark = [pytest.mark.usefixtures("xserver"), pytest.mark.slow]

BOX = (200, 150, 400, 300)  # on the worker's 800x600 display
INSIDE, OUTSIDE = (400, 300), (100, 80)


@pytest.fixture
def fleet(tmp_path: Path, fake_model: FakeModel, redis_server: RedisServer) -> Iterator[Fleet]:
    made = Fleet(tmp_path, fake_model, redis_server.url)
    yield made
    made.stop()


async def picture(http: httpx.AsyncClient, query: str = "") -> tuple[httpx.Response, Image.Image]:
    response = await http.get("/api/screen/live" + query)
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    return response, Image.open(io.BytesIO(response.content)).convert("RGB")


async def picture_until(
    http: httpx.AsyncClient, colour: tuple[int, int, int], query: str = ""
) -> tuple[httpx.Response, Image.Image]:
    """The first live picture with ``colour`` inside the window (each request is a new
    capture once the shared one is a quarter second old)."""
    deadline = time.monotonic() + 15
    while True:
        response, image = await picture(http, query)
        if near(image.getpixel(INSIDE), colour):
            return response, image
        assert time.monotonic() < deadline, "the live picture never showed it"


def nothing_to_show(response: httpx.Response, status: int, *words: str) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    detail = str(response.json()["detail"])
    assert "\n" not in detail and "Traceback" not in response.text
    for word in words:
        assert word in detail, detail
    return detail


def thumb_shows(app: JarvisApp, colour: tuple[int, int, int]) -> bool:
    """The TUI's thumbnail has ``colour`` where the window is on the worker's display."""
    image = app.side.thumb.image
    if not isinstance(image, Image.Image):
        return False
    x, y = (INSIDE[0] * image.width // 800, INSIDE[1] * image.height // 600)
    return image.height * 800 == image.width * 600 and near(image.getpixel((x, y)), colour)


def caption_of(app: JarvisApp) -> str:
    return str(app.side.caption.render())


async def workers_beat(url: str, name: str) -> dict[str, Any]:
    redis = client(url)
    try:
        async with asyncio.timeout(60):
            while True:
                for beat in await registry.workers(redis):
                    if beat["name"] == name:
                        return beat
                await asyncio.sleep(0.1)
    finally:
        await redis.aclose()


class SecondStepGate:
    """Step 1 acts (its screenshot is shipped with it), step 2 waits for the test."""

    def __init__(self) -> None:
        self.held = threading.Event()
        self.go = threading.Event()
        self.steps = 0

    def reply(self, request: RecordedRequest) -> Reply:
        if is_router(request):
            return NEW_TASK
        if (known := other(request)) is not None:
            return known
        self.steps += 1
        if self.steps == 1:
            return acts()
        if self.steps == 2:
            self.held.set()
            self.go.wait(120)
        return done()


async def forge_remote(url: str, task_id: str) -> None:
    """A worker on another host that runs ``task_id``, as its heartbeat and the task's
    lease (its token kept) say."""
    redis = client(url)
    try:
        far = registry.WorkerInfo("far", "another-host", ":0", "1024x768", "0", "running")
        far.task = task_id
        await registry.beat(redis, far, 60)
        await redis.hset(keys.lease_key(task_id), "worker", "far")
    finally:
        await redis.aclose()


async def test_the_live_picture_is_the_workers_screen_or_its_last_step(
    fleet: Fleet,
    fake_model: FakeModel,
    redis_server: RedisServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from playwright.async_api import expect

    gate = SecondStepGate()
    fake_model.set_default(gate.reply)
    settings = coordinator_settings(tmp_path, fake_model, monkeypatch)
    monkeypatch.delenv("DISPLAY")  # the coordinator has no display of its own
    try:
        async with serving_api(settings, fleet_url=redis_server.url) as api, api.client() as http:
            assert api.gateway.display_now().name == ""
            idle = await http.get("/api/screen/live")
            nothing_to_show(idle, 404, "no task is running", "no display")

            fleet.start("w1")
            beat = await workers_beat(redis_server.url, "w1")
            env = {**os.environ, "DISPLAY": beat["display"], "XAUTHORITY": beat["xauthority"]}
            with painted(BOX, RED, env) as painter:  # before the task: step 1 shows it
                posted = await http.post("/api/messages", json={"text": TASK, "channel": "api"})
                assert posted.status_code == 201, posted.text
                await asyncio.to_thread(gate.held.wait, 90)  # step 2 is being decided
                await running_on(http, "w1")

                # the watched task's worker: its own display, captured now
                painter.paint(BLUE)
                response, image = await picture_until(http, BLUE)
                assert image.size == (800, 600)  # the worker's, not a 1920x1080 one
                assert not near(image.getpixel(OUTSIDE), BLUE)  # the window where it was put
                assert response.headers["content-type"] == "image/jpeg"
                assert response.headers["x-jarvis-screen"] == "live"
                assert response.headers["x-jarvis-worker"] == "w1"
                assert response.headers["x-jarvis-task"] == "T001"
                response, image = await picture_until(http, BLUE, "?task_id=T001")
                assert response.headers["x-jarvis-screen"] == "live"

                # the TUI's thumbnail: the same route through its API client, live
                tui = ApiBackend(api.base, api.token, label="fleet")
                app = JarvisApp(tui, TuiSettings(thumbnail="halfblocks", live_screen_s=0.2))
                async with app.run_test(size=(160, 40)) as pilot:
                    await until(lambda: thumb_shows(app, BLUE), pilot, 30)
                    assert tui.screen_note == ""
                    assert "not live" not in caption_of(app)
                # the task's worker is on another host (as a forged heartbeat and lease
                # say): the last step's screenshot that arrived here, marked as not live
                steps = [r for r in api.journal("T001") if r["kind"] == "step_finished"]
                assert [r["step"] for r in steps] == [1]
                shot = api.data_dir / steps[0]["screenshot"]
                async with asyncio.timeout(30):  # shipped with the step
                    while not shot.is_file():
                        await asyncio.sleep(0.05)
                await forge_remote(redis_server.url, "T001")
                response, image = await picture(http)
                assert response.headers["x-jarvis-screen"] == "last-step"
                assert response.headers["x-jarvis-worker"] == "far"
                assert response.headers["x-jarvis-task"] == "T001"
                assert response.headers["x-jarvis-step"] == "1"
                assert response.content == shot.read_bytes()
                assert image.size == (800, 600)
                assert near(image.getpixel(INSIDE), RED)  # step 1's, not the screen now
                assert not near(image.getpixel(INSIDE), BLUE)

                # the panel says so under the picture
                async with panel(api, "fleet-last-step") as page:
                    shown_task = page.locator('#todos li[data-id="T001"]')
                    await shown_task.click()
                    img = page.locator("#live-img")
                    await expect(img).to_have_attribute("data-source", "last-step", timeout=30_000)
                    caption = page.locator("#live-caption")
                    await expect(caption).to_contain_text("last step's picture (step 1")
                    await expect(caption).to_contain_text("on worker far")
                    await expect(caption).to_contain_text("not live")
                    await image_loaded(page, "#live-img")

                # and the TUI's thumbnail, with the same words under it (the app closes
                # its backend when it ends: a new one)
                tui = ApiBackend(api.base, api.token, label="fleet")
                app = JarvisApp(tui, TuiSettings(thumbnail="halfblocks", live_screen_s=0.2))
                async with app.run_test(size=(160, 40)) as pilot:
                    await until(lambda: "not live" in caption_of(app), pilot, 30)
                    assert caption_of(app).startswith("last step's picture (step 1 on worker far)")
                    assert thumb_shows(app, RED)

                redis = client(redis_server.url)  # w1 again, and go on
                await redis.hset(keys.lease_key("T001"), "worker", "w1")
                await registry.forget(redis, "far")
                await redis.aclose()
                gate.go.set()
                ended = await until_status(api, "completed")
            assert ended.summary == SUMMARY

            # no task runs now: nothing to show, and not the coordinator's screen
            async with asyncio.timeout(30):
                while api.gateway.journal.current is not None:
                    await asyncio.sleep(0.05)
            after = await http.get("/api/screen/live")
            nothing_to_show(after, 404, "no task is running")

            # a remote worker's task with no step picture yet: a clear 409
            await forge_remote(redis_server.url, "T999")
            none_yet = await http.get("/api/screen/live?task_id=T999")
            nothing_to_show(none_yet, 409, "another-host", "no picture of a step")
            unknown = await http.get("/api/screen/live?task_id=T404")
            nothing_to_show(unknown, 404, "T404 runs on no worker")
            bad = await http.get("/api/screen/live?task_id=%0a")
            assert bad.status_code == 422
    finally:
        gate.go.set()
