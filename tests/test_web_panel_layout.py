"""The web panel as people open it (issue 41 point 1), in Debian's Chromium at 1920x1080,
1280x720 and 390x844 against a real `jarvis serve` on Xvfb with x11vnc and the Tk test
app; only the model is scripted. At every size: no horizontal scroll; "Take over" shows
the view large (at least 80 % of the main column's width), a click on a known pixel of
the desktop lands within 2 px through it, the stream shows the takeover as cards and the
badge says paused; the stream follows the running step; and closing the page while it
holds the screen hands the screen back at once. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from tests.agent_harness import agent_settings
from tests.api_harness import finish, routed, serving_api, until
from tests.fake_model import FakeModel, RecordedRequest, Reply, call
from tests.test_web_panel import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS
from tests.test_web_panel_takeover import in_view

pytestmark = [pytest.mark.usefixtures("xserver", "tkapp"), pytest.mark.slow]
SIZES = [(1920, 1080), (1280, 720), (390, 844)]


async def no_horizontal_scroll(page: Any) -> None:
    wide = await page.evaluate("document.documentElement.scrollWidth")
    assert wide <= await page.evaluate("window.innerWidth"), f"page is {wide} px wide"


async def take_over_and_click(page: Any, expect: Any, tkapp: Any, size: tuple[int, int]) -> None:
    await page.set_viewport_size({"width": size[0], "height": size[1]})
    await no_horizontal_scroll(page)
    cards = page.locator(".takeover-card[data-kind='takeover_started']")
    before = await cards.count()
    await page.click("#takeover")
    vnc = page.locator("#vnc")
    await expect(vnc).to_have_attribute("data-mode", "control")
    await expect(vnc).to_have_attribute("data-connected", "yes")
    await expect(page.locator("#task-status")).to_have_text("paused: a person has the screen")
    await expect(cards).to_have_count(before + 1)
    await no_horizontal_scroll(page)
    canvas = await page.locator("#vnc canvas").bounding_box()
    column = await page.locator("#task").bounding_box()
    assert canvas["width"] >= 0.8 * column["width"], (canvas, column, size)
    await page.screenshot(path=str(ARTIFACTS / f"panel-takeover-{size[0]}.png"))
    screen = tuple(tkapp.screen)
    target = tkapp.widget_center("box")
    mark = tkapp.mark()
    if await page.locator("#vnc").get_attribute("data-fit") == "pan":  # 1:1, not panned yet
        assert canvas["width"] < screen[0] and target[0] < canvas["width"]
        where = (canvas["x"] + target[0] + 0.5, canvas["y"] + target[1] + 0.5)
    else:
        where = await in_view(page, *target, screen)
    await page.mouse.click(*where)
    clicked = tkapp.wait_kind("click", mark, 10)
    assert abs(clicked["x"] - target[0]) <= 2 and abs(clicked["y"] - target[1]) <= 2, clicked
    await page.fill("#handback-note", f"looked at {size[0]} px")
    await page.click("#handback")
    ended = page.locator(".takeover-card[data-kind='takeover_ended']")
    await expect(ended.last).to_contain_text(f"looked at {size[0]} px")
    await expect(vnc).to_have_attribute("data-mode", "view")


async def test_the_panel_takeover_at_three_sizes_and_a_closed_tab(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any, tkapp: Any
) -> None:
    from playwright.async_api import async_playwright, expect

    ARTIFACTS.mkdir(exist_ok=True)
    done = threading.Event()

    waits: list[int] = []

    def step(request: RecordedRequest) -> Reply:
        if done.is_set():
            return finish("waited")
        waits.append(700 + len(waits))  # never the same call twice (that ends as stuck)
        return Reply(text="Thought: wait a little more.", tool_calls=[call("wait", ms=waits[-1])])

    fake_model.set_default(routed(step))
    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200)
    async with serving_api(settings) as api, async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = await browser.new_context(viewport={"width": 1920, "height": 1080})
        page = await context.new_page()
        await page.goto(api.service.login_url)
        await expect(page.locator("#vnc")).to_have_attribute("data-connected", "yes")
        await expect(page.locator("#takeover")).to_be_hidden()  # no task runs yet
        await page.fill("#task-input", "keep waiting")
        await page.click("#send")
        await expect(page.locator("#takeover")).to_be_visible(timeout=30_000)
        for size in SIZES:
            await take_over_and_click(page, expect, tkapp, size)

        # the stream follows the running step on the narrow page, once the person is back
        # at its end (scrolling up to read stops the following)
        await page.locator("#message > :last-child").scroll_into_view_if_needed()
        steps = page.locator("#message .step")
        shown = await steps.count()
        await expect(steps).to_have_count(shown + 2, timeout=30_000)
        await expect(page.locator("#message > :last-child")).to_be_in_viewport()

        # a second tab takes the screen and is closed: asked first, then handed back
        other = await context.new_page()
        await other.goto(api.base + "/")
        await expect(other.locator("#takeover")).to_be_visible(timeout=30_000)
        await other.click("#takeover")
        await expect(other.locator("#vnc")).to_have_attribute("data-mode", "control")
        asked: list[str] = []

        async def accept(dialog: Any) -> None:
            asked.append(dialog.type)
            await dialog.accept()

        other.on("dialog", accept)
        await other.close(run_before_unload=True)
        ended = lambda: [  # noqa: E731
            r for r in api.journal("T001") if r["kind"] == "takeover_ended"
        ]
        await until(lambda: len(ended()) == len(SIZES) + 1, 10)
        assert asked == ["beforeunload"]
        assert ended()[-1]["reason"] == "closed" and ended()[-1]["by"] == "web"
        await expect(
            page.locator(".takeover-card[data-kind='takeover_ended']").last
        ).to_contain_text("closed the panel")

        # the TUI holds the screen: the panel takes it over only after asking
        async with api.client() as client:
            tui = await client.post("/api/takeover", json={"by": "tui"})
            assert tui.status_code == 200
        button = page.locator("#takeover")
        await expect(button).to_have_text("Take it over from tui", timeout=10_000)
        page.once("dialog", accept)
        await button.click()
        await expect(page.locator("#vnc")).to_have_attribute("data-mode", "control")
        assert asked == ["beforeunload", "confirm"]
        [*_, passed] = ended()
        assert (passed["by"], passed["reason"], passed["ended_by"]) == ("tui", "taken_over", "web")
        await expect(
            page.locator(".takeover-card[data-kind='takeover_ended']").last
        ).to_contain_text("had it taken over by web")
        await page.click("#handback")
        done.set()
        await expect(page.locator("#summary")).to_contain_text("waited", timeout=30_000)
        await browser.close()
