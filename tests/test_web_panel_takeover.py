"""The web panel's live view and takeover in Debian's Chromium (Playwright) against a real
`jarvis serve` on Xvfb with x11vnc and the Tk test app; only the model is scripted.

The view shows the display (the canvas against a grab of the screen); a viewer's click
reaches nothing; "Take over" in the middle of a long `type` stops the agent's keys (the
app's X event log), the person's click and keys in the view reach the app, and "Hand back"
with a note resumes the task with a fresh screenshot and the note. A `call_user` question
is answered by taking over and handing back. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import asyncio
import base64
import io
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from tests.agent_harness import agent_settings
from tests.api_harness import finish, routed, serving_api
from tests.fake_model import FakeModel, RecordedRequest, Reply, call
from tests.test_web_panel import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS

pytestmark = [pytest.mark.usefixtures("xserver", "tkapp"), pytest.mark.slow]
LONG = "pack my box with five dozen liquor jugs " * 15


def typed_at_least(n: int) -> Any:
    return lambda e: (
        e["kind"] == "text" and e["widget"] == "notes" and len(e["text"]) >= n
        and LONG.startswith(e["text"])
    )  # fmt: skip


def last_image(request: RecordedRequest) -> bytes:
    images = [b for b in _blocks(request.messages) if b.get("type") == "image"]
    return base64.b64decode(images[-1]["source"]["data"])


def _blocks(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            out.append(block)
            if isinstance(block.get("content"), list):
                out.extend(block["content"])
    return out


def grab_screen() -> np.ndarray:
    import mss

    with mss.MSS() as sct:
        shot = sct.grab(sct.monitors[0])
    return np.asarray(Image.frombytes("RGB", shot.size, shot.rgb), dtype=np.int16)


async def canvas_pixels(page: Any) -> np.ndarray:
    url = await page.evaluate("document.querySelector('#vnc canvas').toDataURL('image/png')")
    data = base64.b64decode(url.split(",", 1)[1])
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=np.int16)


async def view_difference(page: Any, real: np.ndarray, timeout: float = 15.0) -> float:
    """Mean difference per channel between the view's canvas and ``real``, once the view
    has drawn it (the first updates arrive in pieces), or the last one at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        shown = await canvas_pixels(page)
        assert shown.shape == real.shape
        difference = float(np.abs(shown - real).mean())
        if difference < 2.0 or time.monotonic() > deadline:
            return difference
        await page.wait_for_timeout(100)


async def in_view(page: Any, x: int, y: int, screen: tuple[int, int]) -> tuple[float, float]:
    """Page coordinates of screen point (x, y) in the scaled VNC canvas."""
    box = await page.locator("#vnc canvas").bounding_box()
    return box["x"] + (x + 0.5) * box["width"] / screen[0], box["y"] + (y + 0.5) * box[
        "height"
    ] / screen[1]


@pytest.mark.serial  # the agent's typing stops within 0.3 s of the takeover: not on a starved core
async def test_the_panel_views_takes_over_and_hands_back(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any, tkapp: Any
) -> None:
    from playwright.async_api import async_playwright, expect

    ARTIFACTS.mkdir(exist_ok=True)
    typing: list[RecordedRequest] = []
    asking: list[RecordedRequest] = []

    def step(request: RecordedRequest) -> Reply:
        text = request.all_text()
        if "log in for me" in text:
            asking.append(request)
            if len(asking) == 1:
                ask = call("call_user", message="Log in?")
                return Reply(text="Thought: ask.", tool_calls=[ask])
            return finish("logged in")
        typing.append(request)
        if len(typing) == 1:
            return Reply(text="Thought: type.", tool_calls=[call("type", text=LONG)])
        return finish("typed")

    fake_model.set_default(routed(step))
    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200)
    screen = tuple(tkapp.screen)
    async with serving_api(settings) as api, async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = await browser.new_page(viewport={"width": 1500, "height": 950})
        await page.goto(api.service.login_url)
        await expect(page.locator("#vnc")).to_have_attribute("data-connected", "yes")
        await expect(page.locator("#vnc-state")).to_have_text("Jarvis has the screen (view only)")

        # the view shows the display: the canvas against a grab of the screen
        tkapp.sync()
        real = await asyncio.to_thread(grab_screen)
        difference = await view_difference(page, real)
        assert difference < 2.0, difference
        # view-only: a click in the view reaches nothing (checked against the takeover's below)
        mark = tkapp.mark()
        await page.mouse.click(*await in_view(page, *tkapp.widget_center("box"), screen))
        await page.keyboard.type("viewer")

        # a task types a long text; take over in the middle of it
        tkapp.focus("notes")
        await page.fill("#task-input", "type the long text")
        await page.click("#send")
        await asyncio.to_thread(tkapp.wait_for, typed_at_least(30), 30, mark)
        asked = time.monotonic()
        await page.click("#takeover")
        await expect(page.locator("#vnc")).to_have_attribute("data-mode", "control")
        await expect(page.locator("#vnc")).to_have_attribute("data-connected", "yes")
        await expect(page.locator("#vnc-state")).to_contain_text("A person has the screen (web)")
        await page.screenshot(path=str(ARTIFACTS / "panel-takeover.png"))
        person = tkapp.mark()
        await page.mouse.click(*await in_view(page, *tkapp.widget_center("box"), screen))
        await page.keyboard.type("hello")
        await asyncio.to_thread(tkapp.wait_kind, "text", person, 10, widget="box", text="hello")
        clicks = tkapp.events("click", since=mark)
        assert [c["widget"] for c in clicks] == ["box"]  # the viewer's click never arrived
        assert tkapp.events("click", since=mark)[0]["t"] > asked
        agent_keys = [e for e in tkapp.events("key", since=mark) if e.get("widget") == "notes"]
        assert agent_keys and max(e["t"] for e in agent_keys) - asked <= 0.3
        assert len(typing) == 1  # the agent waits while the person holds the screen

        await page.fill("#handback-note", "I wrote hello in the box")
        await page.click("#handback")
        await expect(page.locator("#vnc")).to_have_attribute("data-mode", "view")
        await expect(page.locator("#summary")).to_contain_text("completed: typed", timeout=30_000)
        assert len(typing) == 2
        resumed = typing[1].all_text()
        assert "A person (web) took over the desktop" in resumed
        assert "I wrote hello in the box" in resumed
        assert last_image(typing[1]) != last_image(typing[0])  # a fresh screenshot
        kinds = [r["kind"] for r in api.journal("T001")]
        assert kinds.index("takeover_started") < kinds.index("takeover_ended")

        # a call_user question answered by taking over and handing back
        await page.fill("#task-input", "log in for me")
        await page.click("#send")
        await expect(page.locator("#answer-box")).to_be_visible(timeout=30_000)
        await expect(page.locator("#answer-takeover")).to_be_visible()
        await page.click("#answer-takeover")
        await expect(page.locator("#vnc")).to_have_attribute("data-mode", "control")
        await expect(page.locator("#vnc")).to_have_attribute("data-connected", "yes")
        person = tkapp.mark()
        await page.mouse.click(*await in_view(page, *tkapp.widget_center("box"), screen))
        await page.keyboard.type("pw")
        await asyncio.to_thread(tkapp.wait_for, lambda e: e["kind"] == "text", 10, person)
        await page.fill("#handback-note", "logged in")
        await page.click("#handback")
        summary = page.locator("#summary")
        await expect(summary).to_contain_text("completed: logged in", timeout=30_000)
        assert len(asking) == 2 and "logged in" in asking[1].all_text()
        [ended] = [r for r in api.journal("T002") if r["kind"] == "takeover_ended"]
        assert ended["note"] == "logged in" and ended["by"] == "web"
        await browser.close()
