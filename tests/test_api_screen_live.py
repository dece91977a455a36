"""``GET /api/screen/live`` on a real uvicorn against real Xvfb displays: the JPEG shows what
is on the display now (a coloured window drawn by a child process, found at its place in
the scaled picture), follows it when it changes, follows the agent's desktop (as under
``serve --sandbox``), needs the token, and says so with a 503 when there is no display.

Also ``GET /api/approvals/{id}/screenshot``: only ids the gate makes, only regular files
right in ``DATA/approvals/``; escapes, links out and bad ids are 404, no token is 401."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image

from jarvis.desktop.screen import Size, fit_size
from jarvis.desktop.x11 import XDisplay
from tests.agent_harness import agent_settings
from tests.api_harness import Api, serving_api
from tests.fake_model import FakeModel
from tests.test_api_auth import raw_get
from tests.xserver import Xvfb, start_xvfb

pytestmark = pytest.mark.usefixtures("xserver")

PAINTER = r"""
import sys, tkinter as tk
x, y, w, h, colour = sys.argv[1:6]
root = tk.Tk()
root.overrideredirect(True)
root.geometry(f"{w}x{h}+{x}+{y}")
root.configure(background=colour)
def command(*_):
    line = sys.stdin.readline()
    if not line:
        root.destroy()
        return
    root.configure(background=line.strip())
    root.update()
    print("painted", line.strip(), flush=True)
root.tk.createfilehandler(sys.stdin, tk.READABLE, command)
root.wait_visibility()
root.update()
print("painted", colour, flush=True)
root.mainloop()
"""
RED, BLUE, GREEN = (208, 16, 16), (16, 64, 224), (16, 176, 48)


def hex_colour(rgb: tuple[int, int, int]) -> str:
    return "#" + "".join(f"{c:02x}" for c in rgb)


class Painter:
    """A borderless window of one colour at a place on a display (a child process)."""

    def __init__(self, box: tuple[int, int, int, int], colour: tuple[int, int, int], env: Any):
        x, y, w, h = box
        self.proc = subprocess.Popen(
            [sys.executable, "-c", PAINTER, str(x), str(y), str(w), str(h), hex_colour(colour)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self._expect(colour)

    def paint(self, colour: tuple[int, int, int]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(hex_colour(colour) + "\n")
        self.proc.stdin.flush()
        self._expect(colour)

    def _expect(self, colour: tuple[int, int, int]) -> None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.split() == ["painted", hex_colour(colour)], line

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@contextmanager
def painted(
    box: tuple[int, int, int, int], colour: tuple[int, int, int], env: Any
) -> Iterator[Painter]:
    painter = Painter(box, colour, env)
    try:
        yield painter
    finally:
        painter.close()


def near(pixel: Any, colour: tuple[int, int, int], tolerance: int = 40) -> bool:
    return all(abs(int(a) - b) <= tolerance for a, b in zip(pixel[:3], colour, strict=True))


async def live_frame(client: httpx.AsyncClient) -> Image.Image:
    response = await client.get("/api/screen/live")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "image/jpeg"
    assert response.headers["cache-control"] == "no-store"
    image = Image.open(io.BytesIO(response.content))
    assert image.format == "JPEG"
    return image.convert("RGB")


async def frame_until(client: httpx.AsyncClient, test: Any, timeout: float = 10) -> Image.Image:
    """The first live frame for which ``test(image)`` holds (each request is a new capture
    once the shared frame is older than a quarter second)."""
    deadline = time.monotonic() + timeout
    while True:
        image = await live_frame(client)
        if test(image):
            return image
        assert time.monotonic() < deadline, "the live frame never showed it"


async def test_live_screen_shows_the_display_now_and_follows_it(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch, xserver: Xvfb
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    screen = Size(xserver.width, xserver.height)
    model = fit_size(screen, settings.max_side)  # 1920x1080 -> 1280x720
    box = (300, 240, 600, 300)

    def at(x: int, y: int) -> tuple[int, int]:  # a screen pixel in the live picture
        return x * model.width // screen.width, y * model.height // screen.height

    inside, outside = at(600, 390), at(300 - 30, 240 - 30)
    async with serving_api(settings) as api, api.client() as client:
        with painted(box, RED, os.environ.copy()) as painter:
            image = await frame_until(client, lambda im: near(im.getpixel(inside), RED))
            assert image.size == (model.width, model.height)
            assert not near(image.getpixel(outside), RED)  # the window is where it was put
            painter.paint(BLUE)
            image = await frame_until(client, lambda im: near(im.getpixel(inside), BLUE))
            assert not near(image.getpixel(inside), RED)
        await frame_until(client, lambda im: not near(im.getpixel(inside), BLUE))  # closed
        async with httpx.AsyncClient(base_url=api.base) as stranger:
            refused = await stranger.get("/api/screen/live")
            assert refused.status_code == 401
            assert refused.headers["content-type"] == "application/json"


async def test_live_screen_is_the_display_of_the_agents_desktop(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As under `serve --sandbox` or a channel's private display: the daemon says the agent
    works on another (private) display, and that is what the live picture shows; without
    a display it is a 503 that says so. The process's DISPLAY is not what it follows."""
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    async with serving_api(settings) as api, api.client() as client:
        gateway = api.gateway
        now = {"where": gateway.display_now()}
        monkeypatch.setattr(gateway, "display_now", lambda: now["where"])
        with start_xvfb(800, 600) as private:
            env = {**os.environ, **private.env()}
            with painted((0, 0, 800, 600), GREEN, env):
                now["where"] = XDisplay(private.display, private.xauthority)
                image = await frame_until(client, lambda im: near(im.getpixel((400, 300)), GREEN))
                assert image.size == (800, 600)  # its own size, not the session's 1920x1080
                gone = private.display
        now["where"] = XDisplay(gone)  # that Xvfb has stopped
        await no_display(client, gone)
        now["where"] = XDisplay("")
        await no_display(client, "DISPLAY is not set")
        now["where"] = XDisplay.from_env()
        await live_frame(client)  # the session's display again


async def no_display(client: httpx.AsyncClient, named: str) -> None:
    deadline = time.monotonic() + 5
    while (response := await client.get("/api/screen/live")).status_code == 200:
        assert time.monotonic() < deadline  # a frame shared from just before, then the 503
    assert response.status_code == 503
    detail = response.json()["detail"]
    assert detail.startswith("no display to capture") and named in detail, detail


# --- approval screenshots ---------------------------------------------------------------


def png(colour: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 6), colour).save(out, "PNG")
    return out.getvalue()


async def test_approval_screenshots_are_path_checked(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    async with serving_api(settings) as api, api.client() as client:
        url = "/api/approvals/a-0123456789ab/screenshot"
        assert (await client.get(url)).status_code == 404  # no approvals folder yet
        folder = api.data_dir / "approvals"
        folder.mkdir()
        shot = png(RED)
        (folder / "a-0123456789ab.png").write_bytes(shot)
        (folder / "a-00000000000f.jpg").write_bytes(b"\xff\xd8jpeg bytes")
        good = await client.get(url)
        assert good.status_code == 200 and good.content == shot
        assert good.headers["content-type"] == "image/png"
        assert good.headers["cache-control"] == "no-store"
        jpeg = await client.get("/api/approvals/a-00000000000f/screenshot")
        assert jpeg.status_code == 200 and jpeg.headers["content-type"] == "image/jpeg"

        async with httpx.AsyncClient(base_url=api.base) as stranger:
            assert (await stranger.get(url)).status_code == 401
            wrong = {"authorization": "Bearer " + "x" * 43}
            assert (await stranger.get(url, headers=wrong)).status_code == 401

        outside = tmp_path / "outside.png"
        outside.write_bytes(png(BLUE))
        (folder / "a-aaaaaaaaaaaa.png").symlink_to(outside)  # a link out
        (folder / "a-bbbbbbbbbbbb.jpg").symlink_to(api.data_dir / "config" / "api_token")
        (folder / "a-dddddddddddd.png").symlink_to(folder / "a-0123456789ab.png")  # any link
        (folder / "a-cccccccccccc.png").mkdir()  # not a file
        (folder / "a-0123456789AB.png").write_bytes(shot)  # the gate's ids are lower case
        (folder / "a-0123456789abc.png").write_bytes(shot)
        (folder / "a-0123456789ab.txt").write_bytes(b"not an image")
        refused = [
            "a-aaaaaaaaaaaa",
            "a-bbbbbbbbbbbb",
            "a-dddddddddddd",
            "a-cccccccccccc",
            "a-ffffffffffff",  # no such file
            "a-0123456789AB",
            "a-0123456789abc",
            "a-0123456789a",
            "b-0123456789ab",
            "a-0123456789ab.png",
            "a-0123456789ab%0a",
            "..",
            "..%2F..%2Fconfig%2Fapi_token",
            "a-0123456789ab%2F..%2F..%2Fconfig%2Fapi_token",
        ]
        for name in refused:
            response = await client.get(f"/api/approvals/{name}/screenshot")
            assert response.status_code == 404, name
            assert "api_token" not in response.text and str(api.data_dir) not in response.text
        await raw_targets_are_refused(api)


async def raw_targets_are_refused(api: Api) -> None:
    """Targets sent byte for byte: no client cleans up the dot segments first."""
    port = int(api.base.rsplit(":", 1)[1])
    headers = {"Host": f"127.0.0.1:{port}", **api.auth}
    for target in (
        "/api/approvals/../config/api_token/screenshot",
        "/api/approvals/..%2fconfig%2fapi_token/screenshot",
        "/api/approvals/a-0123456789ab/../../config/api_token",
        "/api/approvals/%2e%2e/screenshot",
    ):
        status, body = await raw_get(port, target, headers)
        assert status == 404, (target, status, body[:200])
        token = (api.data_dir / "config" / "api_token").read_text().strip()
        assert token.encode() not in body
    status, body = await raw_get(port, "/api/approvals/a-0123456789ab/screenshot", headers)
    assert status == 200 and body.startswith(b"\x89PNG")
