"""A private display per channel (``safety.sandbox.channels``): on one daemon, a task from
a sandboxed channel runs on a display of its own (its app gets every click, key and
scroll, the live screen shows it, and it is gone when the task ends) while a canary
window on the test's own display gets nothing; the next task, from another channel, runs
on the test's display again. A display that cannot start fails the task, closed."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageChops, ImageStat

from jarvis.safety.channel_display import sandboxed
from tests.agent_harness import agent_settings, model_point
from tests.api_harness import finish, routed, serving_api, until
from tests.fake_model import FakeModel, RecordedRequest, Reply, call
from tests.test_sandbox import INPUT_KINDS, TKAPP, _leftovers, _read_events, _wait_ready
from tests.tkdriver import TkApp
from tests.vnc_client import open_session

pytestmark = [pytest.mark.usefixtures("xserver"), pytest.mark.slow]

PRIVATE = "type in the box on the private display"
DESKTOP = "type in the box on my desktop"


def _finished(api: Any) -> list[dict[str, Any]]:
    return [r for r in api.journal() if r["kind"] == "task_finished"]


async def _live_size(client: Any) -> tuple[int, int]:
    frame = await client.get("/api/screen/live")
    assert frame.status_code == 200, frame.text
    with Image.open(io.BytesIO(frame.content)) as image:
        return image.size


async def test_a_sandboxed_channel_runs_on_its_own_display(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = tmp_path / "private.jsonl"
    sandbox = {
        "size": "1280x800",
        "apps": [[sys.executable, TKAPP, "--events", str(events)]],
        "channels": ["api"],
    }
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, settle_ceiling_ms=300, safety={"sandbox": sandbox}
    )
    assert sandboxed(settings, ("api",)) == ["api"] and sandboxed(settings, ("tui",)) == []
    canary_box = model_point(tkapp, "box", settings)
    held = threading.Event()
    steps: dict[str, list[Reply]] = {PRIVATE: [], DESKTOP: []}

    def answer(request: RecordedRequest) -> Reply:
        task = PRIVATE if PRIVATE in request.all_text() else DESKTOP
        done = len(steps[task])
        if task == PRIVATE and done == 0:
            widgets = _wait_ready(events)["widgets"]  # the app on the private display
            bx, by, bw, bh = widgets["box"]
            px, py, pw, ph = widgets["pad"]
            reply = Reply(
                text="Thought: the box.",
                tool_calls=[
                    call("click", x=bx + bw // 2, y=by + bh // 2),
                    call("type", text="sandboxed"),
                    call("scroll", x=px + pw // 2, y=py + ph - 40, direction="down", amount=2),
                ],
                hold=held,
                hold_after=1,
            )
        elif task == DESKTOP and done == 0:
            reply = Reply(
                tool_calls=[
                    call("click", x=canary_box[0], y=canary_box[1]),
                    call("type", text="desk"),
                ]
            )
        else:
            reply = finish(f"did: {task}")
        steps[task].append(reply)
        return reply

    fake_model.set_default(routed(answer))
    mark = tkapp.mark()
    async with serving_api(settings) as api, api.client() as client:
        desktop_size = await _live_size(client)
        posted = await client.post("/api/messages", json={"text": PRIVATE, "channel": "api"})
        assert posted.status_code == 201, posted.text
        await until(lambda: steps[PRIVATE], 60)  # the model is answering its first step
        assert await _live_size(client) == (1280, 800)  # the live screen is the private one
        held.set()
        await until(lambda: len(_finished(api)) == 1, 60)
        [first] = _finished(api)
        assert first["status"] == "completed", first
        got = _read_events(events)
        assert {"click", "key", "scroll"} <= {e["kind"] for e in got}
        assert [e["text"] for e in got if e["kind"] == "text"][-1] == "sandboxed"
        tkapp.sync()
        assert [e for e in tkapp.events(since=mark) if e["kind"] in INPUT_KINDS] == []
        await until(lambda: _leftovers(str(events)) == [], 20)  # app, wm and Xvfb are gone
        assert await _live_size(client) == desktop_size  # back on the test's display

        posted = await client.post("/api/messages", json={"text": DESKTOP, "channel": "tui"})
        assert posted.status_code == 201, posted.text
        await until(lambda: len(_finished(api)) == 2, 60)
        assert _finished(api)[1]["status"] == "completed", _finished(api)[1]
    assert tkapp.wait_for(lambda e: e["kind"] == "text" and e["text"] == "desk")
    assert len(steps[DESKTOP]) == 2


async def test_a_private_display_that_cannot_start_fails_the_task(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox = {"apps": [["/nonexistent/app"]], "channels": ["api"]}
    settings = agent_settings(tmp_path, fake_model, monkeypatch, safety={"sandbox": sandbox})
    steps: list[RecordedRequest] = []

    def answer(request: RecordedRequest) -> Reply:
        steps.append(request)
        return finish()

    fake_model.set_default(routed(answer))
    mark = tkapp.mark()
    async with serving_api(settings) as api, api.client() as client:
        await client.post("/api/messages", json={"text": PRIVATE, "channel": "api"})
        await until(lambda: len(_finished(api)) == 1, 60)
        [end] = _finished(api)
    assert end["status"] == "failed"
    assert "private display" in end["summary"] and "cannot start" in end["summary"]
    assert steps == []  # the model was never asked: nothing ran anywhere
    tkapp.sync()
    assert [e for e in tkapp.events(since=mark) if e["kind"] in INPUT_KINDS] == []


async def test_a_private_display_that_dies_mid_task_stops_it_with_the_reason(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The private display's server is killed while its task runs: the task stops,
    failed, saying so (the agent does not go on against a dead display), and the next
    task, from another channel, runs on the person's display."""
    events = tmp_path / "private.jsonl"
    sandbox = {"apps": [[sys.executable, TKAPP, "--events", str(events)]], "channels": ["api"]}
    settings = agent_settings(tmp_path, fake_model, monkeypatch, safety={"sandbox": sandbox})
    held = threading.Event()
    canary_box = model_point(tkapp, "box", settings)
    asked: list[str] = []

    def answer(request: RecordedRequest) -> Reply:
        if PRIVATE in request.all_text():
            _wait_ready(events)
            asked.append(PRIVATE)  # the task runs on the private display now
            return Reply(text="Thought: wait.", tool_calls=[call("wait", ms=100)], hold=held)
        if "Into the box" in request.all_text():
            return finish("typed on my desktop")
        box = call("click", x=canary_box[0], y=canary_box[1])
        return Reply(text="Into the box.", tool_calls=[box, call("type", text="after")])

    fake_model.set_default(routed(answer))
    try:
        async with serving_api(settings) as api, api.client() as client:
            await client.post("/api/messages", json={"text": PRIVATE, "channel": "api"})
            await until(lambda: asked and _server_of(str(events)), 60)
            os.kill(_server_of(str(events))[0], signal.SIGKILL)
            await until(lambda: len(_finished(api)) == 1, 30)
            [end] = _finished(api)
            assert end["status"] == "failed", end
            assert "stopped: the private display" in end["summary"], end
            assert "ended while the task ran" in end["summary"], end
            await until(lambda: _leftovers(str(events)) == [], 20)
            await client.post("/api/messages", json={"text": DESKTOP, "channel": "tui"})
            await until(lambda: len(_finished(api)) == 2, 60)
            assert _finished(api)[1]["status"] == "completed", _finished(api)[1]
    finally:
        held.set()
    assert tkapp.wait_for(lambda e: e["kind"] == "text" and e["text"] == "after")


async def test_a_failed_move_back_never_leaves_the_agent_on_the_stopped_display(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The desktop cannot move back from a private display (twice): the private display
    is stopped all the same, the next task fails closed (not run, saying why) instead of
    acting on the dead display, and once the move back works the one after runs on the
    person's display."""
    from jarvis.desktop.desktop import Desktop
    from jarvis.desktop.x11 import X11Error

    events = tmp_path / "private.jsonl"
    sandbox = {"apps": [[sys.executable, TKAPP, "--events", str(events)]], "channels": ["api"]}
    settings = agent_settings(tmp_path, fake_model, monkeypatch, safety={"sandbox": sandbox})
    canary_box = model_point(tkapp, "box", settings)
    move_to = Desktop.move_to
    refused: list[str] = []

    def sticky(desktop: Desktop, where: Any) -> None:
        if where == desktop.home and len(refused) < 2:
            refused.append(where.name)
            raise X11Error(f"cannot open display {where.name}")
        move_to(desktop, where)

    def answer(request: RecordedRequest) -> Reply:
        text = request.all_text()
        if "Into the box" in text or PRIVATE in text:
            return finish("done")
        box = call("click", x=canary_box[0], y=canary_box[1])
        return Reply(text="Into the box.", tool_calls=[box, call("type", text="home")])

    fake_model.set_default(routed(answer))
    monkeypatch.setattr(Desktop, "move_to", sticky)
    async with serving_api(settings) as api, api.client() as client:
        await client.post("/api/messages", json={"text": PRIVATE, "channel": "api"})
        await until(lambda: len(_finished(api)) == 1, 60)
        await until(lambda: _leftovers(str(events)) == [], 20)  # stopped all the same
        await client.post("/api/messages", json={"text": DESKTOP, "channel": "tui"})
        await until(lambda: len(_finished(api)) == 2, 60)
        stuck = _finished(api)[1]
        assert stuck["status"] == "failed", stuck["summary"]
        assert "not run: the desktop could not come back to" in stuck["summary"], stuck
        await client.post("/api/messages", json={"text": DESKTOP + " again", "channel": "tui"})
        await until(lambda: len(_finished(api)) == 3, 60)
        assert _finished(api)[2]["status"] == "completed", _finished(api)[2]["summary"]
    assert len(refused) == 2
    assert tkapp.wait_for(lambda e: e["kind"] == "text" and e["text"] == "home")


def _server_of(app_marker: str) -> list[int]:
    """The pid of the Xvfb of the sandbox whose app writes to ``app_marker``."""
    for pid in (int(p) for p in _leftovers(app_marker)):
        if Path(f"/proc/{pid}/comm").read_text().strip() == "Xvfb":
            return [pid]
    return []


async def test_a_stop_during_a_sandboxed_task_stops_its_display(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`jarvis stop` (POST /api/stop, which cancels more than once) while the task waits
    for the model on its private display: the task is cancelled by the CLI, and the
    display, its window manager and its app are gone."""
    events = tmp_path / "private.jsonl"
    sandbox = {"apps": [[sys.executable, TKAPP, "--events", str(events)]], "channels": ["api"]}
    settings = agent_settings(tmp_path, fake_model, monkeypatch, safety={"sandbox": sandbox})
    held = threading.Event()
    asked: list[RecordedRequest] = []

    def answer(request: RecordedRequest) -> Reply:
        asked.append(request)
        _wait_ready(events)
        return Reply(text="Thought: waiting.", tool_calls=[call("wait", ms=10)], hold=held)

    fake_model.set_default(routed(answer))
    try:
        async with serving_api(settings) as api, api.client() as client:
            desktop_size = await _live_size(client)
            await client.post("/api/messages", json={"text": PRIVATE, "channel": "api"})
            await until(lambda: asked, 60)
            assert _leftovers(str(events)) != []  # the private display is up
            stop = await client.post("/api/stop", json={"by": "cli"})
            assert stop.status_code == 202 and stop.json()["stopping"] is True
            await until(lambda: _finished(api), 30)
            [end] = _finished(api)
            assert end["status"] == "cancelled" and end["stopped_by"] == "cli", end
            await until(lambda: _leftovers(str(events)) == [], 20)
            assert await _live_size(client) == desktop_size
    finally:
        held.set()  # the fake model's reply thread is not left waiting


async def test_a_task_on_a_private_display_is_watched_and_taken_over_on_that_display(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The live view and the takeover follow the task to its private display: the screen
    is ``private/N``, its view shows that display's pixels (not the person's desktop),
    the person's click reaches the app only it has, and the hand back resumes the task;
    when the task ends the view closes and its x11vnc is gone with the display."""
    events = tmp_path / "private.jsonl"
    sandbox = {
        "size": "1280x800",
        "apps": [[sys.executable, TKAPP, "--events", str(events)]],
        "channels": ["api"],
    }
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, settle_ceiling_ms=300, safety={"sandbox": sandbox}
    )
    held = threading.Event()
    steps: list[RecordedRequest] = []

    def answer(request: RecordedRequest) -> Reply:
        steps.append(request)
        if len(steps) == 1:
            _wait_ready(events)
            return Reply(text="Thought: wait.", tool_calls=[call("wait", ms=100)], hold=held)
        return finish("the person clicked the box")

    fake_model.set_default(routed(answer))
    mark = tkapp.mark()
    async with serving_api(settings) as api, api.client() as client:
        posted = await client.post("/api/messages", json={"text": PRIVATE, "channel": "api"})
        assert posted.status_code == 201, posted.text
        await until(lambda: steps, 60)
        status = (await client.get("/api/takeover")).json()
        screen = status["screen"]
        assert screen.startswith("private/") and {"main", screen} <= set(status["displays"])
        url = api.base.replace("http://", "ws://") + f"/api/vnc/{screen}"
        view = await open_session(url, additional_headers=api.auth)
        assert (view.width, view.height) == (1280, 800)  # not the 1920x1080 desktop
        seen = await view.picture()
        live = (await client.get("/api/screen/live")).content
        with Image.open(io.BytesIO(live)) as agent_sees:
            difference = ImageChops.difference(seen, agent_sees.convert("RGB"))
            assert max(ImageStat.Stat(difference).mean) < 8  # the same picture (JPEG aside)

        taken = await client.post("/api/takeover", json={"by": "web"})
        assert taken.status_code == 200, taken.text
        assert taken.json()["screen"] == screen
        person = await open_session(
            url + f"?ticket={taken.json()['ticket']}", additional_headers=api.auth
        )
        bx, by, bw, bh = _wait_ready(events)["widgets"]["box"]
        await person.click(bx + bw // 2, by + bh // 2)
        await until(lambda: [e for e in _read_events(events) if e["kind"] == "click"], 20)
        back = await client.post("/api/handback", json={"note": "clicked the box"})
        assert back.status_code == 200, back.text
        held.set()
        await until(lambda: len(_finished(api)) == 1, 60)
        assert _finished(api)[0]["status"] == "completed", _finished(api)[0]
        assert (await client.get("/api/takeover")).json()["screen"] == "main"
        await asyncio.wait_for(view.ws.wait_closed(), 20)  # its view closed with the task
        await until(lambda: _leftovers(str(events)) == [], 20)  # x11vnc, app, Xvfb: gone
    assert "clicked the box" in steps[1].all_text()
    tkapp.sync()
    assert [e for e in tkapp.events(since=mark) if e["kind"] in INPUT_KINDS] == []


PAINT = (  # a magenta window over the test app, on the private display only
    "import tkinter as t; r = t.Tk(); r.overrideredirect(True); r.configure(bg='#c0309f')\n"
    "r.geometry('300x200+900+520')\n"
    "def up(): r.lift(); r.after(300, up)\n"
    "up(); r.mainloop()"
)
MAGENTA = (0xC0, 0x30, 0x9F)


async def test_the_panel_takes_over_a_task_on_a_private_display(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the web panel (Chromium): a task from the web channel, which runs on a private
    display, is shown live from that display (a magenta window only it has), shown large
    while a person holds it, the person's click and keys reach its app, and the hand back
    lets the task finish; the person's desktop gets nothing."""
    from playwright.async_api import async_playwright, expect

    from tests.test_web_panel import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS
    from tests.test_web_panel_takeover import canvas_pixels, in_view

    events = tmp_path / "private.jsonl"
    sandbox = {
        "size": "1280x800",
        "apps": [[sys.executable, TKAPP, "--events", str(events)], [sys.executable, "-c", PAINT]],
        "channels": ["web"],
    }
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, settle_ceiling_ms=300, safety={"sandbox": sandbox}
    )
    held = threading.Event()
    steps: list[RecordedRequest] = []

    def answer(request: RecordedRequest) -> Reply:
        steps.append(request)
        if len(steps) == 1:
            _wait_ready(events)
            return Reply(text="Thought: wait.", tool_calls=[call("wait", ms=100)], hold=held)
        return finish("the person typed in the box")

    fake_model.set_default(routed(answer))
    mark = tkapp.mark()
    ARTIFACTS.mkdir(exist_ok=True)
    async with serving_api(settings) as api, async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = await browser.new_page(viewport={"width": 1500, "height": 950})
        await page.goto(api.service.login_url)
        await page.fill("#task-input", PRIVATE)
        await page.click("#send")
        await until(lambda: steps, 60)
        canvas = page.locator("#vnc canvas")
        await expect(canvas).to_have_attribute("width", "1280", timeout=20_000)
        await expect(page.locator("#vnc")).to_have_attribute("data-connected", "yes")

        async def magenta_shown() -> bool:
            pixels = await canvas_pixels(page)
            return bool((abs(pixels[620, 1050] - MAGENTA) < 12).all())

        await until_async(magenta_shown, 20)
        assert not await page.evaluate("document.body.dataset.holding === 'yes'")
        small = (await page.locator("#screen").bounding_box())["width"]

        await page.click("#takeover")
        await expect(page.locator("#vnc")).to_have_attribute("data-mode", "control")
        await expect(page.locator("#vnc")).to_have_attribute("data-connected", "yes")
        await expect(page.locator("body")).to_have_attribute("data-holding", "yes")
        large = (await page.locator("#screen").bounding_box())["width"]
        assert large > 2 * small and large > 1400  # the panel's width, not the side column
        await until_async(magenta_shown, 20)  # the full-access view shows that display too
        await page.screenshot(path=str(ARTIFACTS / "panel-takeover-private.png"))
        bx, by, bw, bh = _wait_ready(events)["widgets"]["box"]
        await page.mouse.click(*await in_view(page, bx + bw // 2, by + bh // 2, (1280, 800)))
        await page.keyboard.type("hi")
        await until(lambda: [e for e in _read_events(events) if e.get("text") == "hi"], 20)
        await page.fill("#handback-note", "typed hi")
        await page.click("#handback")
        await expect(page.locator("body")).to_have_attribute("data-holding", "no")
        held.set()
        await expect(page.locator("#summary")).to_contain_text("completed", timeout=60_000)
        await browser.close()
    assert "typed hi" in steps[1].all_text()
    tkapp.sync()
    assert [e for e in tkapp.events(since=mark) if e["kind"] in INPUT_KINDS] == []


async def until_async(check: Any, timeout: float) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, f"not within {timeout} s"
        await asyncio.sleep(0.1)
