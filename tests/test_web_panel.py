"""The web panel in Debian's Chromium (Playwright, no browser download) against a real
`jarvis serve` gateway and API: a task given in the page streams its thought and shows a
tool card while the scripted model is still streaming; cancel; answer a call_user question.
Screenshots of the page are saved to tests/artifacts/ (looked at while writing this)."""

from __future__ import annotations

import math
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.agent_harness import agent_settings
from tests.api_harness import (
    NEW_TASK,
    VERIFIED,
    Api,
    is_router,
    is_skill,
    is_verify,
    serving_api,
    until,
)
from tests.fake_model import FakeModel, RecordedRequest, Reply, call

pytestmark = [pytest.mark.usefixtures("xserver", "tkapp"), pytest.mark.slow]
ARTIFACTS = Path(__file__).parent / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update",
                 "--no-first-run", "--disable-sync"]  # fmt: skip
THOUGHT = "Reflection: a desktop.\nThought: I will click the middle of the screen."


def held_after_tool_start(reply: Reply) -> int:
    """The Anthropic SSE event index right after the first tool block's start."""
    texts = math.ceil(len(reply.text) / reply.text_chunk) if reply.text else 0
    return 2 + (texts + 2 if reply.text else 0) + 1


class Model:
    """Answers by the task in the request; steps of a task are held where the test says."""

    def __init__(self) -> None:
        self.hold = threading.Event()
        self.second_hold = threading.Event()
        self.handed_out: list[threading.Event] = []
        self.first_sent = False
        self.paint_steps = 0

    def __call__(self, request: RecordedRequest) -> Reply:
        if is_router(request):
            return NEW_TASK
        if is_verify(request):
            return VERIFIED
        if is_skill(request):
            return Reply(text="1. Do it.")
        text = request.all_text()
        if "click the middle" in text and not self.first_sent:
            self.first_sent = True
            reply = Reply(text=THOUGHT, text_chunk=6, tool_calls=[call("click", x=640, y=400)])
            reply.hold, reply.hold_after = self.hold, held_after_tool_start(reply)
            self.handed_out.append(self.hold)
            return reply
        if "click the middle" in text:  # the next step: held until the test cancels it
            self.handed_out.append(self.second_hold)
            return Reply(text="Thought: waiting.", hold=self.second_hold, hold_after=3)
        if "blue" in text:
            return Reply(text="Thought: blue it is.", tool_calls=[call("finished", summary="blue")])
        self.paint_steps += 1
        if self.paint_steps == 1:
            return Reply(
                text="Thought: I try a click off the screen.",
                tool_calls=[call("mouse_move", x=100, y=120), call("click", x=-50, y=10)],
            )  # an error card, open
        return Reply(
            text="Thought: I need to ask which colour.",
            tool_calls=[call("call_user", message="Which colour?")],
        )


async def test_the_panel_streams_a_task_cancels_it_and_answers_a_question(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    from playwright.async_api import async_playwright, expect

    ARTIFACTS.mkdir(exist_ok=True)
    model = Model()
    fake_model.set_default(model)
    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200)
    try:
        async with serving_api(settings) as api, async_playwright() as p:
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = await browser.new_page(viewport={"width": 1500, "height": 950})
            await run_the_panel(api, page, model, expect)
            await browser.close()
    finally:
        model.hold.set()
        model.second_hold.set()


async def run_the_panel(api: Api, page: Any, model: Model, expect: Any) -> None:
    failed: list[str] = []  # a first visit and the login log no 401 and no favicon 404
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else 0)
    await page.goto(f"{api.base}/")  # no cookie yet: the login form
    await expect(page.locator("#login")).to_be_visible()
    await page.goto(api.service.login_url)  # the one-time link printed by serve
    await expect(page.locator("#app")).to_be_visible()
    await expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    assert failed == [], failed
    icon = await page.request.get(f"{api.base}/favicon.ico")  # what a desktop browser asks
    assert icon.status == 200 and icon.headers["content-type"] == "image/svg+xml"

    # give a task; the thought streams in and a card appears while the model still streams
    await page.fill("#task-input", "click the middle of the screen")
    await page.click("#send")
    await expect(page.locator(".thought").first).to_contain_text("click the middle of the screen")
    card = page.locator(".card").first
    await expect(card).to_have_attribute("data-state", "streaming")
    await expect(card.locator(".name")).to_have_text("click")
    assert not model.hold.is_set()  # the model's answer is still being streamed
    await expect(page.locator("#todos li[data-id='T001']")).to_contain_text("in progress")
    await page.screenshot(path=str(ARTIFACTS / "panel-1-streaming.png"))

    model.hold.set()  # the rest of the answer: the call runs and its card fills in
    await expect(card).to_have_attribute("data-state", "ok")
    assert await card.get_attribute("open") is None  # collapsed by default
    await expect(card.locator(".latency")).to_contain_text("ms")
    await expect(page.locator("#click-marker")).to_be_visible()
    await expect(page.locator("#usage")).to_contain_text("tokens")

    # step 2 is held: cancel it from the page
    await until(lambda: model.second_hold in model.handed_out, 30)
    await expect(page.locator("#cancel")).to_be_visible()
    await page.click("#cancel")
    await expect(page.locator("#summary")).to_contain_text("cancelled")
    await expect(page.locator("#todos li[data-id='T001']")).to_contain_text("cancelled")
    assert not model.second_hold.is_set()
    [end] = [r for r in api.journal("T001") if r["kind"] == "task_finished"]
    assert end["stopped_by"] == "web"  # the brake is named
    await page.screenshot(path=str(ARTIFACTS / "panel-2-cancelled.png"))

    # a task that asks: the answer field, then the answer finishes it
    await page.fill("#task-input", "paint the wall")
    await page.click("#send")
    await expect(page.locator("#answer-box")).to_be_visible(timeout=30_000)
    await expect(page.locator("#question")).to_have_text("Which colour?")
    # the status words of every face (jarvis.task_words): needs_user reads "waiting for you"
    await expect(page.locator("#todos li[data-id='T002'] .status")).to_have_text("waiting for you")
    await expect(page.locator("#task-status")).to_have_text("waiting for you")
    await expect(page.locator("#summary")).to_contain_text("waiting for you: Which colour?")
    error_card = page.locator(".card[data-state='error']")
    await expect(error_card).to_have_count(1)
    assert await error_card.get_attribute("open") is not None  # errors open
    await expect(error_card).to_contain_text("-32602")
    await expect(page.locator("#click-marker")).to_be_visible()  # the last click so far
    await page.screenshot(path=str(ARTIFACTS / "panel-3-question.png"))
    # the stream drops; the task goes on and ends meanwhile; the page catches up on reconnect
    await page.evaluate("state.source.close()")
    await page.fill("#answer-input", "blue")
    await page.click("#answer-send")
    await until(lambda: api.journal("T002")[-1]["kind"] == "reply_ready", 30)
    assert "run 2" not in await page.locator("#message").inner_text()  # nothing live
    await page.evaluate("connect()")
    await expect(page.locator("#summary")).to_contain_text("completed: blue", timeout=30_000)
    await expect(page.locator("#verification")).to_contain_text("Passed: looks done")
    await expect(page.locator("#todos li[data-id='T002']")).to_contain_text("completed")
    # the thread shows the answer that started run 2; the title and the totals are the task's
    await expect(page.locator("#message .rerun")).to_have_text("run 2")
    await expect(page.locator("#message .answer")).to_have_text("You answered: blue")
    await expect(page.locator("#task-title")).to_have_text("paint the wall")
    [end] = [r for r in api.journal("T002") if r["kind"] == "task_finished"][-1:]
    total = end["task_tokens"]["input_tokens"] + end["task_tokens"]["output_tokens"]
    assert total > end["input_tokens"] + end["output_tokens"]  # both runs, not the last
    await expect(page.locator("#usage")).to_contain_text(f"{total} tokens")
    await expect(page.locator("#usage")).to_contain_text(f"${end['task_cost_usd']:.4f} · run 2:")
    await page.screenshot(path=str(ARTIFACTS / "panel-4-answered.png"), full_page=True)

    # a reload rebuilds the same message from the journal
    thought_before = await page.locator("#message").inner_text()
    await page.reload()
    await expect(page.locator("#summary")).to_contain_text("completed: blue")
    assert await page.locator("#message").inner_text() == thought_before
