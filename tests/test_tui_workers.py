"""The TUI's side panel lists the fleet's workers (name, display, state, task) from
``GET /api/workers`` through its API client, against a coordinator (``serve --fleet``)
on a real redis-server whose workers' heartbeats the test writes; the list follows the
heartbeats, and stays hidden for a daemon that runs its tasks itself."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from jarvis.fleet import registry
from jarvis.fleet.connection import client
from jarvis.tui.app import JarvisApp
from jarvis.tui.client import ApiBackend
from jarvis.tui.settings import TuiSettings
from tests.api_harness import serving_api
from tests.fake_model import FakeModel, fake_model_fixture
from tests.redis_server import RedisServer, redis_server
from tests.test_fleet_serve import coordinator_settings
from tests.tui_fixtures import replay_app, until

__all__ = ["fake_model_fixture", "redis_server"]

SIZE = (160, 40)


def listed(app: JarvisApp) -> str:
    return str(app.side.fleet_list.render()) if app.side.fleet_list.display else ""


@pytest.mark.slow
@pytest.mark.usefixtures("xserver")
async def test_the_side_panel_lists_the_fleets_workers_from_the_api(
    redis_server: RedisServer,
    fake_model: FakeModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = coordinator_settings(tmp_path, fake_model, monkeypatch)
    redis = client(redis_server.url)
    here = registry.WorkerInfo("w1", socket.gethostname(), ":7", "800x600", "1", "running")
    here.task = "T003"
    far = registry.WorkerInfo("w2", "rack-2", ":0", "1024x768", "1")
    try:
        async with serving_api(settings, fleet_url=redis_server.url) as api:
            await registry.beat(redis, here, 60)
            await registry.beat(redis, far, 60)
            backend = ApiBackend(api.base, api.token, label="fleet")
            app = JarvisApp(backend, TuiSettings(thumbnail="halfblocks"))
            async with app.run_test(size=SIZE) as pilot:
                await until(lambda: "w2" in listed(app), pilot, 30)
                lines = listed(app).splitlines()
                assert lines == ["● w1 :7 · runs T003", "○ w2 rack-2 :0 · idle"]
                assert app.side.workers_title.display
                await registry.forget(redis, "w1")  # its heartbeat is gone: so is its line
                await until(lambda: "w1" not in listed(app), pilot, 30)
                assert listed(app).splitlines() == ["○ w2 rack-2 :0 · idle"]
    finally:
        await redis.aclose()


async def test_the_workers_list_is_hidden_without_a_fleet_and_shown_with_one() -> None:
    app, _backend = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.history_loaded.wait()
        await pilot.pause(0.1)
        assert not app.side.fleet_list.display and not app.side.workers_title.display
    workers: list[dict[str, Any]] = [
        {"name": "w1", "host": "h", "display": ":3", "state": "idle", "task": None, "live": True}
    ]
    app, backend = replay_app()
    backend.fleet_workers = workers
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: bool(listed(app)), pilot)
        assert listed(app) == "○ w1 :3 · idle"
        backend.fleet_workers = []
        await until(lambda: "no worker" in listed(app), pilot, 15)
