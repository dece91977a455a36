"""The web panel's approval cards, budget line and live screen in Debian's Chromium
(Playwright) against a real `jarvis serve` gateway and API, the real agent on Xvfb and the
scripted model: a held `type` shows as a card with the exact call and its screenshot;
"Allow once" lets it run; "Deny" with a note reaches the model as -32006 with the note; an
answer that comes too late is shown as refused, not swallowed; a task with a budget shows
what it spent. Page screenshots go to tests/artifacts/."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from jarvis.tools.registry import NOT_ALLOWED
from tests.agent_harness import agent_settings, model_point
from tests.api_harness import Api, is_skill, is_verify, scripted, serving_api, until
from tests.approvals_harness import results_by_call
from tests.fake_model import FakeModel, Reply, call
from tests.test_web_panel import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS
from tests.tkdriver import TkApp

pytestmark = [pytest.mark.usefixtures("xserver"), pytest.mark.slow]
HELD = "sudo rm -rf /tmp/x"
HOSTILE = (
    "sudo rm -rf /tmp/x <img src=x onerror=\"document.title='owned'\"></pre><b>bold"
    " su\u200bdo \u202eexe.txt"  # a zero-width space and a right-to-left override
)
NOTE = "not on this machine, use the scratch VM"
WAIT = 60_000  # ms: a step of the real agent on a busy two-core machine


@asynccontextmanager
async def panel(api: Api, name: str) -> AsyncIterator[Any]:
    """Chromium on the panel, logged in with the one-time link, the stream live."""
    from playwright.async_api import async_playwright, expect

    ARTIFACTS.mkdir(exist_ok=True)
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = await browser.new_page(viewport={"width": 1500, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on(
            "console", lambda m: errors.append(m.text) if "Content Security" in m.text else None
        )
        try:
            await page.goto(api.service.login_url)
            await expect(page.locator("#conn")).to_have_attribute("data-state", "live")
            yield page
            await page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
        finally:
            await browser.close()
    assert errors == []  # no script error, no CSP violation


async def give_task(page: Any, text: str) -> None:
    await page.fill("#task-input", text)
    await page.click("#send")


def journal_of(api: Api, kind: str) -> list[dict[str, Any]]:
    return [r for r in api.journal() if r["kind"] == kind]


async def image_loaded(page: Any, selector: str) -> None:
    await page.wait_for_function(
        "(s) => { const i = document.querySelector(s); return !!i && i.naturalWidth > 0; }",
        arg=selector,
        timeout=WAIT,
    )


async def test_allow_once_from_the_card_lets_the_call_run(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch, tkapp: TkApp
) -> None:
    from playwright.async_api import expect

    settings = agent_settings(  # the once-a-second picture: no VNC view (takeover off)
        tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200, takeover={"enabled": False}
    )
    box = model_point(tkapp, "box", settings)
    steps = [Reply(tool_calls=[call("click", x=box[0], y=box[1]), call("type", text=HELD)])]
    fake_model.set_default(scripted(steps))
    async with serving_api(settings) as api, panel(api, "approval-allow") as page:
        await give_task(page, "type the cleanup command in the box")
        card = page.locator(".approval")
        await expect(card).to_have_count(1, timeout=WAIT)
        [request] = journal_of(api, "approval_requested")
        approval_id = request["approval_id"]
        await expect(card).to_have_attribute("data-id", approval_id)
        await expect(card.locator(".tool")).to_have_text("type")
        await expect(card.locator(".args")).to_have_text(json.dumps({"text": HELD}, indent=2))
        await expect(card.locator(".reason")).to_have_text(request["reason"])
        assert "sudo" in request["reason"] or "rm" in request["reason"]
        shot = card.locator(".approval-shot img")
        await expect(shot).to_have_attribute("src", f"/api/approvals/{approval_id}/screenshot")
        await image_loaded(page, ".approval-shot img")
        countdown = card.locator(".countdown")
        await expect(countdown).to_have_text(re.compile(r"^Answer within \d+:\d\d; unanswered"))
        left = int(await countdown.get_attribute("data-left") or 0)
        assert 0 < left <= settings.safety.approval_timeout_s
        await expect(countdown).not_to_have_attribute("data-left", str(left))  # it counts down

        # the live screen while the task waits; no budget line (the task has none)
        await image_loaded(page, "#live-img")
        await expect(page.locator("#live-img")).to_have_attribute("data-source", "live")
        await expect(page.locator("#live-caption")).to_contain_text("live ·")
        await expect(page.locator("#budget")).to_be_hidden()
        assert tkapp.entry_text() == ""  # nothing typed while it waits
        await page.screenshot(path=str(ARTIFACTS / "approval-card.png"), full_page=True)

        await card.locator("button[data-decision='allow_once']").click()
        await expect(card).to_have_attribute("data-state", "resolved")
        await expect(card.locator(".outcome")).to_have_text("Allowed once")
        await expect(card.locator("button")).to_have_count(0)
        await expect(page.locator(".approval")).to_have_count(0, timeout=15_000)  # then it goes
        await expect(page.locator("p.held")).to_contain_text("Allowed once")

        await until(lambda: journal_of(api, "task_finished"), 60)
        [resolved] = journal_of(api, "approval_resolved")
        assert (resolved["approval_id"], resolved["decision"]) == (approval_id, "allow_once")
        assert resolved["by"] == "web"
        typed = [r for r in journal_of(api, "tool_call_finished") if r["tool_name"] == "type"]
        assert [r["ok"] for r in typed] == [True]
        assert journal_of(api, "task_finished")[0]["status"] == "completed"
        await expect(page.locator("#live")).to_be_hidden()  # the task ended
    assert tkapp.entry_text() == HELD  # the allowed call ran


async def test_deny_with_a_note_reaches_the_model_and_a_late_answer_is_shown(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch, tkapp: TkApp
) -> None:
    from playwright.async_api import expect

    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200)
    steps = [
        Reply(text="Thought: clean up.", tool_calls=[call("type", text=HOSTILE)]),
        Reply(text="Thought: only list.", tool_calls=[call("type", text="sudo ls")]),
    ]
    fake_model.set_default(scripted(steps))
    async with serving_api(settings) as api, panel(api, "approval-deny") as page:
        await give_task(page, "clean up the temp folder")
        card = page.locator(".approval")
        await expect(card).to_have_count(1, timeout=WAIT)
        # the model's text is shown as text: the call exactly, no element made of it
        shown = json.dumps({"text": HOSTILE}, indent=2, ensure_ascii=False)
        shown = shown.replace("\u200b", "\\u{200b}").replace("\u202e", "\\u{202e}")
        await expect(card.locator(".args")).to_have_text(shown)
        await expect(card.locator("img")).to_have_count(1)  # only the screenshot
        await expect(card.locator("b")).to_have_count(0)
        await image_loaded(page, ".approval-shot img")
        await card.locator("input.note").fill(NOTE)
        await card.locator("button[data-decision='deny']").click()
        await expect(card.locator(".outcome")).to_have_text(f"Denied: {NOTE}")
        assert await page.title() == "Jarvis"

        # the next model request carries the refusal with the note
        def refusal() -> dict[str, Any] | None:
            results = results_by_call(fake_model.requests)
            return next((r for r in results.values() if not r.get("ok")), None)

        await until(lambda: refusal() is not None, 60)
        error = refusal()["error"]  # type: ignore[index]
        assert error["code"] == NOT_ALLOWED == -32006
        assert error["message"].endswith(NOTE) and "denied" in error["message"]
        # the denied call's tool card spells out what cannot be seen too
        await expect(page.locator("#message")).to_contain_text("su\\u{200b}do \\u{202e}exe.txt")

        # the second held call: a reload finds it in GET /api/approvals
        await until(lambda: len(journal_of(api, "approval_requested")) == 2, 60)
        second = journal_of(api, "approval_requested")[1]["approval_id"]
        await page.reload()
        await expect(page.locator("#conn")).to_have_attribute("data-state", "live")
        card = page.locator(f".approval[data-id='{second}']")
        await expect(card).to_be_visible()
        await expect(card.locator(".args")).to_have_text(json.dumps({"text": "sudo ls"}, indent=2))
        await expect(page.locator(".approval")).to_have_count(1)  # the denied one is gone

        # someone else answers while this page hears nothing: its answer is refused, shown
        await page.evaluate("state.source.close()")
        async with api.client() as client:
            other = await client.post(f"/api/approvals/{second}", json={"decision": "allow_once"})
            assert other.status_code == 200
        await card.locator("button[data-decision='deny']").click()
        error_line = card.locator(".approval-error")
        await expect(error_line).to_be_visible()
        await expect(error_line).to_contain_text("Already answered or expired")
        await expect(error_line).to_contain_text(second)
        await expect(card.locator("button[data-decision='allow_once']")).to_be_disabled()
        await page.screenshot(path=str(ARTIFACTS / "approval-late.png"), full_page=True)
        await page.evaluate("connect()")  # the stream catches up: the real outcome
        await expect(card.locator(".outcome")).to_have_text("Allowed once")
        await until(lambda: journal_of(api, "task_finished"), 60)
    decisions = [r["decision"] for r in journal_of(api, "approval_resolved")]
    assert decisions == ["deny", "allow_once"]


async def test_timeout_allow_for_the_task_and_cancel_end_cards(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch, tkapp: TkApp
) -> None:
    """Unanswered: the card says denied by the deadline. Allowed for the task: a later call
    held by the same rule runs without a card. A cancel of the task ends a waiting card."""
    from playwright.async_api import expect

    timeout_s = 6
    settings = agent_settings(
        tmp_path,
        fake_model,
        monkeypatch,
        settle_ceiling_ms=200,
        safety={"approval_timeout_s": timeout_s},
    )
    steps = [
        Reply(tool_calls=[call("type", text="sudo a")]),
        Reply(tool_calls=[call("type", text="sudo b")]),
        Reply(tool_calls=[call("type", text="sudo c")]),
        Reply(tool_calls=[call("hotkey", keys="alt+f4")]),
    ]
    fake_model.set_default(scripted(steps))
    async with serving_api(settings) as api, panel(api, "approval-ends") as page:
        await give_task(page, "run a few commands")
        cards = page.locator(".approval")
        first = cards.nth(0)
        await expect(first).to_be_visible(timeout=WAIT)
        await expect(first.locator(".outcome")).to_have_text(
            "Not answered in time: denied", timeout=(timeout_s + 30) * 1000
        )
        await until(lambda: len(journal_of(api, "approval_requested")) == 2, 60)
        second = journal_of(api, "approval_requested")[1]["approval_id"]
        card = page.locator(f".approval[data-id='{second}']")
        await card.locator("button[data-decision='allow_task']").click()
        await expect(card.locator(".outcome")).to_have_text("Allowed for this task")

        await until(lambda: len(journal_of(api, "approval_requested")) == 3, 60)
        third = journal_of(api, "approval_requested")[2]
        assert third["tool_name"] == "hotkey"  # "sudo c" ran without asking
        card = page.locator(f".approval[data-id='{third['approval_id']}']")
        await expect(card).to_be_visible()
        await page.click("#cancel")
        await expect(card.locator(".outcome")).to_have_text("Cancelled: the task stopped")
        await until(lambda: journal_of(api, "task_finished"), 60)
    decisions = [r["decision"] for r in journal_of(api, "approval_resolved")]
    assert decisions == ["timeout", "allow_task", "cancelled"]
    typed = [
        (r["arguments"]["text"], ok["ok"])
        for r, ok in zip(
            [r for r in journal_of(api, "tool_call_started") if r["tool_name"] == "type"],
            [r for r in journal_of(api, "tool_call_finished") if r["tool_name"] == "type"],
            strict=True,
        )
    ]
    assert typed == [("sudo a", False), ("sudo b", True), ("sudo c", True)]


async def test_budget_line_shows_what_the_task_spent(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The budget line follows budget_used; the live view falls back to the latest step's
    screenshot when the live capture answers 503 (injected in the browser's network)."""
    from playwright.async_api import expect

    settings = agent_settings(
        tmp_path,
        fake_model,
        monkeypatch,
        settle_ceiling_ms=200,
        safety={"max_cost_usd": 0.05, "max_tokens_total": 5000},
        takeover={"enabled": False},  # the once-a-second picture, not the VNC view
    )
    hold = threading.Event()
    steps = [
        Reply(
            text="Thought: moving.",
            tool_calls=[call("mouse_move", x=30, y=30)],
            input_tokens=1000,
            output_tokens=200,
        ),
        Reply(
            text="Thought: done.",
            tool_calls=[call("finished", summary="moved")],
            input_tokens=900,
            output_tokens=100,
            hold=hold,
            hold_after=2,
        ),
    ]
    fake_model.set_default(scripted(steps))
    try:
        async with serving_api(settings) as api, panel(api, "budget") as page:
            await expect(page.locator("#budget")).to_be_hidden()
            await give_task(page, "move the pointer a little")
            await until(lambda: journal_of(api, "budget_used"), 60)
            first = journal_of(api, "budget_used")[0]
            assert first["tokens"] == 1200 and first["cost_usd"] > 0
            await expect(page.locator("#budget")).to_be_visible()
            await expect(page.locator("#budget-text")).to_have_text(budget_text(first))
            bar = await page.locator("#budget-bar").evaluate("(b) => b.value")
            assert bar == pytest.approx(share(first), abs=1e-6)

            # step 2 is held (the task runs): the live view; then live fails -> latest step
            await expect(page.locator("#live-img")).to_have_attribute("data-source", "live")
            await page.route(
                "**/api/screen/live*",
                lambda route: route.fulfill(status=503, json={"detail": "no display (test)"}),
            )
            await expect(page.locator("#live-img")).to_have_attribute("data-source", "latest")
            await expect(page.locator("#live-caption")).to_contain_text("no display (test)")
            await image_loaded(page, "#live-img")
            await page.screenshot(path=str(ARTIFACTS / "budget-running.png"), full_page=True)

            hold.set()
            await until(lambda: journal_of(api, "task_finished"), 60)
            last = journal_of(api, "budget_used")[-1]
            [end] = journal_of(api, "task_finished")
            # the verification call (12 + 7 tokens; a skill call too, when one is learned)
            # counts in both lines
            after = sum(1 for r in fake_model.requests if is_verify(r) or is_skill(r))
            assert after >= 1
            assert last["tokens"] == 2200 + after * 19 == end["input_tokens"] + end["output_tokens"]
            assert last["cost_usd"] == pytest.approx(end["cost_usd"], abs=1e-6)
            await expect(page.locator("#budget-text")).to_have_text(budget_text(last))
            await expect(page.locator("#usage")).to_have_text(
                f"{last['tokens']} tokens ({end['input_tokens']} in, "
                f"{end['output_tokens']} out) · ${end['cost_usd']:.4f}"
            )
            await expect(page.locator("#live")).to_be_hidden()
            async with httpx.AsyncClient(base_url=api.base) as stranger:  # no token, no picture
                assert (await stranger.get("/api/screen/live")).status_code == 401
    finally:
        hold.set()


def budget_text(event: dict[str, Any]) -> str:
    return f"${event['cost_usd']:.4f} of $0.05 · {event['tokens']} of 5000 tokens"


def share(event: dict[str, Any]) -> float:
    return max(event["cost_usd"] / 0.05, event["tokens"] / 5000)


async def test_approval_screenshot_of_a_real_request_needs_the_token(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The picture a card loads is the file the gate saved, and only with the token."""
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200, safety={"approval_timeout_s": 30}
    )
    fake_model.set_default(scripted([Reply(tool_calls=[call("hotkey", keys="alt+f4")])]))
    async with serving_api(settings) as api, api.client() as client:
        posted = await client.post("/api/messages", json={"text": "close the window"})
        assert posted.status_code == 201
        await until(lambda: journal_of(api, "approval_requested"), 60)
        [request] = journal_of(api, "approval_requested")
        saved = api.data_dir / request["screenshot"]
        assert request["screenshot"] == f"approvals/{request['approval_id']}{saved.suffix}"
        url = f"/api/approvals/{request['approval_id']}/screenshot"
        async with httpx.AsyncClient(base_url=api.base) as stranger:
            assert (await stranger.get(url)).status_code == 401
        picture = await client.get(url)
        assert picture.status_code == 200 and picture.content == saved.read_bytes()
        assert picture.headers["content-type"] in ("image/jpeg", "image/png")
        denied = await client.post(
            f"/api/approvals/{request['approval_id']}", json={"decision": "deny"}
        )
        assert denied.status_code == 200
        await until(lambda: journal_of(api, "task_finished"), 60)


async def test_panel_page_keeps_its_strict_csp(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The panel's page: scripts and styles only from files of this server (no inline
    ones), and no script writes markup (the model's text goes in as text only)."""
    from jarvis.api.app import static_dir

    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    async with serving_api(settings) as api, httpx.AsyncClient(base_url=api.base) as browser:
        page = await browser.get("/")
    csp = {
        part.split()[0]: part.split()[1:]
        for part in page.headers["content-security-policy"].split(";")
        if part.strip()
    }
    assert csp["script-src"] == ["'self'"] and csp["style-src"] == ["'self'"]
    assert csp["default-src"] == ["'none'"] and csp["img-src"] == ["'self'", "blob:", "data:"]
    html = page.text
    scripts = re.findall(r"<script\b[^>]*>", html)
    assert scripts and all('src="/static/' in tag for tag in scripts)  # none inline
    assert "<style" not in html and " style=" not in html
    assert re.search(r"<[^>]*\son\w+\s*=", html) is None  # no inline event handlers
    for script in static_dir().glob("*.js"):
        code = script.read_text(encoding="utf-8")
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert sink not in code, (script.name, sink)


async def test_a_card_the_daemon_no_longer_holds_is_closed(
    tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch, tkapp: TkApp
) -> None:
    """After a reconnect the panel asks what still waits: a card whose request the daemon
    forgot (a restart) says so instead of offering buttons that can only fail; the real
    outcome, when the journal brings one, replaces that guess."""
    from playwright.async_api import expect

    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200, safety={"approval_timeout_s": 4}
    )
    fake_model.set_default(scripted([Reply(tool_calls=[call("type", text=HELD)])]))
    async with serving_api(settings) as api, panel(api, "approval-gone") as page:
        await give_task(page, "type the cleanup command")
        card = page.locator(".approval")
        await expect(card).to_have_count(1, timeout=WAIT)
        await page.evaluate("state.source.close()")
        with api.gateway.approvals._lock:  # what a restarted daemon knows: nothing pending
            forgotten = dict(api.gateway.approvals._pending)
            api.gateway.approvals._pending.clear()
        await page.evaluate("connect()")
        await expect(card.locator(".outcome")).to_contain_text("No longer waiting")
        await expect(card.locator("button")).to_have_count(0)
        with api.gateway.approvals._lock:
            api.gateway.approvals._pending.update(forgotten)
        # the held call times out meanwhile: that outcome comes from the journal and wins
        await expect(card.locator(".outcome")).to_have_text(
            "Not answered in time: denied", timeout=WAIT
        )
        await until(lambda: journal_of(api, "task_finished"), 60)
