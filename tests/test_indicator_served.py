"""The on-screen sign (``desktop.indicator``) during served tasks: the gateway's runner
shows it while a task acts on a display like a person's (Xorg with the dummy driver, a
real RandR output, so ``auto`` turns it on), as ``jarvis run`` does. The model is asked
while the sign is on the screen; it is gone when the task ends, and within a second
when a person stops a task (``POST /api/stop``) while the model is still deciding. A fleet
worker's task shows it too."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jarvis.gateway.todos import TodoList
from tests.agent_harness import agent_settings
from tests.api_harness import NEW_TASK, finish, is_router, routed, serving_api, until
from tests.fake_model import FakeModel, RecordedRequest, Reply, fake_model_fixture
from tests.redis_server import RedisServer, redis_server
from tests.test_fleet_worker import other
from tests.test_indicator import screen_now, sign_pixels, wait_gone
from tests.xservers import DummyXorg, Head, dummy_xorg_missing

pytestmark = [
    pytest.mark.skipif(dummy_xorg_missing() is not None, reason=str(dummy_xorg_missing())),
    pytest.mark.slow,
]
__all__ = ["fake_model_fixture", "redis_server"]
HEAD = Head(1024, 768, 0, 0)
BORDER = [(0, 0, HEAD.width, 4), (0, HEAD.height - 4, HEAD.width, 4)]
"""The top and bottom edges of the monitor, where the sign's border lies."""


@pytest.fixture(scope="module")
def xorg() -> Iterator[DummyXorg]:
    with DummyXorg([HEAD]) as server:
        yield server


async def test_a_served_task_shows_the_sign_while_it_runs_and_a_stop_takes_it_away(
    xorg: DummyXorg, tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    for name, value in xorg.env().items():
        monkeypatch.setenv(name, value)  # the daemon's own display: a person's-like one
    seen: dict[str, int] = {}
    stopped = threading.Event()

    def step(request: RecordedRequest) -> Reply:
        text = request.all_text()
        task = "first" if "first task" in text else "second"
        seen.setdefault(task, sign_pixels(screen_now(xorg), BORDER))
        if task == "second":  # still deciding when the person stops it
            assert stopped.wait(30), "the task was never stopped"
        return finish(f"did the {task} task")

    fake_model.set_default(routed(step))
    settings = agent_settings(tmp_path, fake_model, monkeypatch, takeover={"enabled": False})
    assert settings.desktop.indicator == "auto"
    assert sign_pixels(screen_now(xorg), BORDER) == 0
    async with serving_api(settings) as api, api.client() as client:
        await client.post("/api/messages", json={"text": "the first task", "channel": "web"})
        await until(lambda: _finished(api, "T001"), 60)
        assert seen["first"] == 2 * 4 * HEAD.width  # the whole border, while it ran
        await asyncio.to_thread(wait_gone, xorg, BORDER, 1.0)  # the task ended: gone

        await client.post("/api/messages", json={"text": "the second task", "channel": "web"})
        await until(lambda: "second" in seen, 60)
        assert seen["second"] == 2 * 4 * HEAD.width
        stop = await client.post("/api/stop", json={"by": "web"})
        assert stop.json() == {"stopping": True, "by": "web"}
        took = await asyncio.to_thread(wait_gone, xorg, BORDER, 1.0)
        stopped.set()  # the model's answer, which the cancelled run no longer waits for
        await until(lambda: _finished(api, "T002"), 60)
        [end] = [r for r in api.journal("T002") if r["kind"] == "task_finished"]
        assert end["status"] == "cancelled" and end["stopped_by"] == "web"
    print(f"the sign went {took * 1000:.0f} ms after the stop")
    assert sign_pixels(screen_now(xorg), BORDER) == 0


def _finished(api: Any, task_id: str) -> bool:
    return any(r["kind"] == "task_finished" for r in api.journal(task_id))


async def test_a_fleet_workers_task_shows_the_sign_while_it_runs(
    xorg: DummyXorg,
    tmp_path: Path,
    fake_model: FakeModel,
    redis_server: RedisServer,
    monkeypatch: Any,
) -> None:
    """The daemon's own fleet worker (``--local-worker``, a FleetWorker like any
    ``jarvis worker``) on the person's-like display: the sign while its task runs."""
    for name, value in xorg.env().items():
        monkeypatch.setenv(name, value)
    seen: list[int] = []

    def answer(request: RecordedRequest) -> Reply:
        if is_router(request):
            return NEW_TASK
        if (reply := other(request)) is not None:
            return reply
        seen.append(sign_pixels(screen_now(xorg), BORDER))
        return finish("looked")

    fake_model.set_default(answer)
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, fleet={"lease_s": 3}, takeover={"enabled": False}
    )
    async with (
        serving_api(settings, fleet_url=redis_server.url, local_worker=True) as api,
        api.client() as http,
    ):
        posted = await http.post("/api/messages", json={"text": "look", "channel": "api"})
        assert posted.status_code == 201, posted.text
        await until(lambda: (t := TodoList(api.data_dir).get("T001")) and not t.is_open, 90)
        todo = TodoList(api.data_dir).get("T001")
        assert todo is not None and todo.status == "completed"
        assert seen == [2 * 4 * HEAD.width]  # the whole border while the worker's task ran
        await asyncio.to_thread(wait_gone, xorg, BORDER, 1.0)
