"""A fleet worker on another host is watched and taken over from the coordinator's API
(DESIGN section 11): a real `jarvis worker` process that reports another host (so the
coordinator cannot reach its display and starts no x11vnc for it), a real redis-server,
real x11vnc on the worker's own loopback, and an RFB client through the API's relay; only
the model is scripted. The view comes through Redis: the worker opens no port of its own,
its x11vnc listens on 127.0.0.1 only, the picture is the worker's 800x600 display, the
takeover's ticket gives input to that display and the hand back ends it."""

from __future__ import annotations

import asyncio
import io
import os
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from websockets.exceptions import InvalidStatus

from jarvis.api.fleet_parts import screens_of
from jarvis.fleet import registry
from jarvis.fleet.connection import client
from tests.api_harness import serving_api
from tests.fake_model import FakeModel, fake_model_fixture
from tests.redis_server import RedisServer, redis_server
from tests.test_fleet_screens import Gate, fleet, kinds, pointer_on, running_on, worker_url
from tests.test_fleet_serve import coordinator_settings, until_status
from tests.test_fleet_worker import SUMMARY, TASK, Fleet, acts, done
from tests.test_takeover_api import listening
from tests.vnc_client import open_session

__all__ = ["fake_model_fixture", "fleet", "redis_server"]

pytestmark = [pytest.mark.usefixtures("xserver"), pytest.mark.slow]


def children(pid: int, command: str) -> list[int]:
    """The pids of ``pid``'s child processes named ``command``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        name = text[text.index("(") + 1 : text.rindex(")")]
        parent = int(text[text.rindex(")") + 2 :].split()[1])
        if parent == pid and name == command:
            found.append(int(stat.parent.name))
    return found


async def test_a_worker_on_another_host_is_watched_and_taken_over_through_redis(
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
            worker = fleet.start("w2", host="far-away")
            posted = await http.post("/api/messages", json={"text": TASK, "channel": "api"})
            assert posted.status_code == 201, posted.text
            await asyncio.to_thread(gate.asked.wait, 90)
            listed = await running_on(http, "w2")
            assert (listed["host"], listed["live"]) == ("far-away", True)
            redis = client(redis_server.url)
            [beat] = await registry.workers(redis)
            await redis.aclose()
            assert beat["frames"] is True

            await paint(beat, "#20c040")  # the live picture is the worker's display now
            live = await http.get("/api/screen/live", params={"task_id": "T001"})
            assert live.status_code == 200, live.text
            assert live.headers["x-jarvis-screen"] == "live"
            assert live.headers["x-jarvis-worker"] == "w2"
            picture = Image.open(io.BytesIO(live.content)).convert("RGB")
            assert picture.size == (800, 600)
            assert close_to(picture.getpixel((400, 300)), (0x20, 0xC0, 0x40))
            await paint(beat, "#c02080")  # and the next one shows the change
            async with asyncio.timeout(30):
                while True:
                    again = await http.get("/api/screen/live", params={"task_id": "T001"})
                    shown = Image.open(io.BytesIO(again.content)).convert("RGB")
                    if close_to(shown.getpixel((400, 300)), (0xC0, 0x20, 0x80)):
                        break
                    await asyncio.sleep(0.2)

            view = await open_session(worker_url(api, "w2"), additional_headers=api.auth)
            assert (view.width, view.height) == (800, 600)  # the worker's display
            assert await view.frame() == 800 * 600 * 4
            screens = screens_of(api.service.daemon.service)  # type: ignore[union-attr]
            assert screens is not None and screens.servers == {}  # no x11vnc here for it
            assert listening(worker.pid) == []  # the worker opens no port
            [vnc] = children(worker.pid, "x11vnc")
            sockets = listening(vnc)
            assert sockets and all(addr == "0100007F" for addr, _ in sockets), sockets
            with pytest.raises(InvalidStatus):  # input needs the ticket of a takeover
                await open_session(worker_url(api, "w2") + "?ticket=x", additional_headers=api.auth)

            taken = await http.post("/api/takeover", json={"by": "web", "task_id": "T001"})
            assert taken.status_code == 200, taken.text
            assert taken.json()["screen"] == "worker/w2"
            await until_kind(api, "takeover_started")
            person = await open_session(
                worker_url(api, "w2") + f"?ticket={taken.json()['ticket']}",
                additional_headers=api.auth,
            )
            await person.pointer(700, 500)
            assert await person.frame() > 0
            async with asyncio.timeout(30):  # the pointer moved on w2's display
                while await pointer_on(beat) != (700, 500):
                    await asyncio.sleep(0.1)
            back = await http.post("/api/handback", json={"note": "moved the pointer"})
            assert back.status_code == 200, back.text
            await asyncio.wait_for(person.ws.wait_closed(), 20)  # its input view ends
            gate.go.set()
            ended = await until_status(api, "completed")
            await view.ws.close()
    finally:
        gate.go.set()
    assert ended.summary == SUMMARY
    assert "moved the pointer" in gate.steps[1].all_text()


async def paint(beat: dict[str, Any], colour: str) -> None:
    """Fill a worker's root window with ``colour`` (xsetroot, with the worker's cookie)."""
    env = {**os.environ, "DISPLAY": beat["display"], "XAUTHORITY": beat["xauthority"]}
    proc = await asyncio.create_subprocess_exec("xsetroot", "-solid", colour, env=env)
    assert await proc.wait() == 0


def close_to(pixel: Any, want: tuple[int, int, int]) -> bool:
    """Equal within JPEG's error."""
    return all(abs(int(a) - b) <= 24 for a, b in zip(pixel, want, strict=True))


async def until_kind(api: object, kind: str) -> None:
    async with asyncio.timeout(60):
        while kind not in kinds(api):  # type: ignore[arg-type]
            await asyncio.sleep(0.1)
