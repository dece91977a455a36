"""The web panel in Debian's Chromium (Playwright) against a real `jarvis serve`: logged out,
only the login box shows, and any 401 brings it back with a word; the model's thoughts render
as Markdown without letting its HTML in; a collapsed tool card shows its call; the screen
picture can be enlarged; the daemon's rendering of characters that do not show is what the
panel shows, also above U+FFFF. Page screenshots go to tests/artifacts/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.agent_harness import agent_settings
from tests.api_harness import scripted, serving_api
from tests.fake_model import FakeModel, Reply, call
from tests.test_web_panel import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS

pytestmark = [pytest.mark.usefixtures("xserver"), pytest.mark.slow]
WAIT = 60_000
THOUGHT = (
    "## Plan\n"
    "- **open** the `editor`\n"
    "- read [the docs](https://example.com/docs) and [this](javascript:alert(1))\n"
    "\n"
    "Then <img src=x onerror=\"document.title='owned'\"> *carefully*, with snake_case_names."
)
SNEAKY = "a\u200bb\U000e0001c\U0001d173d"  # zero-width space, a tag character, a musical one


async def launch(p: Any) -> tuple[Any, Any, list[str]]:
    browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    context = await browser.new_context(viewport={"width": 1500, "height": 1000})
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return browser, page, errors


async def test_logged_out_only_the_login_box_shows_and_a_401_brings_it_back(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playwright.async_api import async_playwright, expect

    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    fake_model.set_default(scripted([]))
    async with serving_api(settings) as api, async_playwright() as p:
        browser, page, errors = await launch(p)
        try:
            await page.goto(f"{api.base}/")
            await expect(page.locator("#login")).to_be_visible()
            await expect(page.locator("#login-why")).to_be_hidden()  # a first visit: no word
            for hidden in ("#app", "#task-form", "#send", "#screen"):
                await expect(page.locator(hidden)).to_be_hidden()
            await page.screenshot(path=str(ARTIFACTS / "panel-logged-out.png"), full_page=True)

            await page.goto(api.service.login_url)
            await expect(page.locator("#conn")).to_have_attribute("data-state", "live")
            await expect(page.locator("#login")).to_be_hidden()
            await expect(page.locator("#send")).to_be_visible()

            await page.context.clear_cookies()  # the session is gone (logout elsewhere, restart)
            await page.fill("#task-input", "this is not sent")
            await page.click("#send")
            await expect(page.locator("#login")).to_be_visible()
            await expect(page.locator("#login-why")).to_contain_text("You are logged out")
            await expect(page.locator("#app")).to_be_hidden()
            await expect(page.locator("#conn")).to_have_attribute("data-state", "closed")
            await page.screenshot(path=str(ARTIFACTS / "panel-401.png"), full_page=True)
            assert not [r for r in api.journal() if r["kind"] == "task_started"]

            # the login box works again from there
            await page.fill("#login-token", api.token)
            await page.click("#login-form button")
            await expect(page.locator("#conn")).to_have_attribute("data-state", "live")
            await expect(page.locator("#login")).to_be_hidden()
        finally:
            await browser.close()
    assert errors == []  # the 401 is handled, not an uncaught error


async def test_thoughts_as_markdown_call_lines_and_an_enlarged_screen(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playwright.async_api import async_playwright, expect

    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200)
    steps = [
        Reply(text=THOUGHT, tool_calls=[call("mouse_move", x=400, y=300)]),
        Reply(text="Thought: a word.", tool_calls=[call("type", text=SNEAKY)]),
    ]
    fake_model.set_default(scripted(steps))
    async with serving_api(settings) as api, async_playwright() as p:
        browser, page, errors = await launch(p)
        try:
            await page.goto(api.service.login_url)
            await expect(page.locator("#conn")).to_have_attribute("data-state", "live")
            await page.fill("#task-input", "move the pointer and type a word")
            await page.click("#send")
            await expect(page.locator("#summary")).to_contain_text("completed", timeout=WAIT)

            thought = page.locator(".step").first.locator(".thought")
            await expect(thought.locator("h4")).to_have_text("Plan")
            await expect(thought.locator("ul > li")).to_have_count(2)
            await expect(thought.locator("li strong")).to_have_text("open")
            await expect(thought.locator("li code")).to_have_text("editor")
            links = thought.locator("a")
            await expect(links).to_have_count(1)  # the javascript: one stays text
            assert await links.get_attribute("href") == "https://example.com/docs"
            assert await links.get_attribute("rel") == "noopener noreferrer"
            await expect(thought).to_contain_text("[this](javascript:alert(1))")
            await expect(thought.locator("img")).to_have_count(0)  # the model's HTML is text
            await expect(thought.locator("p")).to_contain_text('<img src=x onerror="')
            await expect(thought.locator("p em")).to_have_text("carefully")
            await expect(thought.locator("p")).to_contain_text("snake_case_names")
            assert await page.title() == "Jarvis"

            # collapsed cards show their call, as the daemon rendered it
            cards = page.locator(".card")
            await expect(cards.first.locator(".name")).to_have_text("mouse_move(x=400, y=300)")
            assert await cards.first.get_attribute("open") is None
            [typed] = [r for r in api.journal() if r.get("tool_name") == "type"
                       and r["kind"] == "tool_call_started"]  # fmt: skip
            shown = 'type(text="a\\u{200b}b\\u{e0001}c\\u{1d173}d")'
            assert typed["shown_call"] == shown
            await expect(cards.nth(1).locator(".name")).to_have_text(shown)
            await expect(cards.nth(1).locator("pre")).to_contain_text(
                '"text": "a\\u{200b}b\\u{e0001}c\\u{1d173}d"'
            )

            # the screen picture, enlarged and closed again with Esc
            shot = page.locator("#shot-img")
            await expect(shot).to_be_visible()
            await page.wait_for_function(
                "() => document.getElementById('shot-img').naturalWidth > 0", timeout=WAIT
            )
            await shot.click()
            zoom = page.locator("#zoom")
            await expect(zoom).to_be_visible()
            sources = "() => ['zoom-img', 'shot-img'].map((id) => document.getElementById(id).src)"
            zoomed, shown = await page.evaluate(sources)
            assert zoomed == shown and "/api/screenshots/" in shown
            small = await shot.bounding_box()
            big = await page.locator("#zoom-img").bounding_box()
            assert small and big and big["width"] > 1.5 * small["width"]
            await page.screenshot(path=str(ARTIFACTS / "panel-zoom.png"))
            await page.keyboard.press("Escape")
            await expect(zoom).to_be_hidden()
            await page.screenshot(path=str(ARTIFACTS / "panel-markdown.png"), full_page=True)
        finally:
            await browser.close()
    assert errors == []
