"""The approval card and the budget in the cockpit, with Textual's pilot, driven by a journal
recorded from a real run (tests/data/tui_approvals.jsonl, made by
``python -m tests.tui_record approvals``): a held call is allowed once, one is denied with
a note, one times out; the task has a cost and a token budget. The client's approval calls
run against the real approval routes on uvicorn."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Button, Input, Markdown
from textual.widgets._help_panel import HelpPanel

from jarvis.events import EventBus
from jarvis.tui.app import JarvisApp
from jarvis.tui.approvals import ApprovalCard, budget_text, call_text, time_left
from jarvis.tui.backend import BackendError, ReplayBackend, unanswered
from jarvis.tui.client import ApiBackend
from jarvis.tui.settings import TuiSettings
from jarvis.tui.state import Cockpit
from jarvis.tui.task_runs import Approval, Budget
from tests.tui_fixtures import SCREEN, TODOS, approval_journal, until

SIZE = (120, 40)
LINES = approval_journal()
REQUESTS = [line for line in LINES if line["kind"] == "approval_requested"]
FIRST, SECOND, THIRD = REQUESTS
ID = FIRST["approval_id"]
NOW = FIRST["expires_at"] - 65  # the cockpit's clock in these tests: 1:05 before the deadline


def before(line: dict[str, Any]) -> list[dict[str, Any]]:
    return LINES[: LINES.index(line)]


def through(line: dict[str, Any]) -> list[dict[str, Any]]:
    return LINES[: LINES.index(line) + 1]


def resolved(request: dict[str, Any]) -> dict[str, Any]:
    [line] = [
        x
        for x in LINES
        if x["kind"] == "approval_resolved" and x["approval_id"] == request["approval_id"]
    ]
    return line


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(ApprovalCard, "clock", staticmethod(lambda: NOW))
    monkeypatch.setattr(ApprovalCard, "key_guard_s", 0.0)  # test_a_key_typed_as_... has it
    yield


def approval_app(
    history: list[dict[str, Any]],
    *,
    backend: type[ReplayBackend] = ReplayBackend,
    pending: list[dict[str, Any]] | None = None,
    screenshots: dict[str, bytes] | None = None,
    **tui: Any,
) -> tuple[JarvisApp, ReplayBackend]:
    replay = backend(
        history,
        todos=TODOS,
        screen=SCREEN.read_bytes(),
        pending=pending,
        approval_screenshots=screenshots,
    )
    return JarvisApp(replay, TuiSettings(thumbnail="halfblocks", **tui)), replay


async def started(app: JarvisApp, pilot: Any) -> None:
    await app.history_loaded.wait()
    await until(lambda: app.connection == "live", pilot)
    await pilot.pause()


def card_of(app: JarvisApp, approval_id: str) -> ApprovalCard:
    for card in app.query(ApprovalCard):
        if card.approval.approval_id == approval_id:
            return card
    raise AssertionError(f"no card for {approval_id}")


def card_text(card: ApprovalCard) -> str:
    parts = card.query(".approval-title, .approval-call, .approval-time, .approval-outcome")
    return "\n".join(str(part.render()) for part in parts if part.display)


def warnings(app: JarvisApp) -> list[str]:
    return [f"{n.title}: {n.message}" for n in app._notifications if n.severity == "warning"]


def errors(app: JarvisApp) -> list[str]:
    return [f"{n.title}: {n.message}" for n in app._notifications if n.severity == "error"]


# --- the card --------------------------------------------------------------------------------


async def test_a_live_request_shows_the_exact_call_rings_and_takes_the_focus() -> None:
    app, backend = approval_app(before(FIRST))
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        assert not app.query(ApprovalCard) and not warnings(app)
        backend.push(FIRST)
        await until(lambda: app.query(ApprovalCard), pilot)
        card = card_of(app, ID)
        await until(lambda: app.focused is card, pilot)
        text = card_text(card)
        assert "Jarvis asks before this call: the text to type contains 'rm -rf'" in text
        assert 'type {"text": "sudo rm -rf /tmp/x"}' in text  # the daemon's JSON, on one line
        assert "1:05 left, then no answer counts as a denial" in text
        assert [b.id for b in card.query(Button)] == ["allow_once", "allow_task", "deny"]
        assert card.query(Input)
        [said] = warnings(app)
        assert "type: the text to type contains 'rm -rf'" in said and "T005" in said
        assert "T005 in progress · ⚠ 1 approval waiting · T005 tokens" in str(app.status.render())


async def test_allow_once_by_key_then_the_resolved_card_takes_no_more_answers() -> None:
    app, backend = approval_app(through(FIRST))
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        card = card_of(app, ID)
        await until(lambda: app.focused is card, pilot)  # a request waiting at connect
        await pilot.press("a")
        await until(lambda: backend.approvals == [(ID, "allow_once", "")], pilot)
        await until(lambda: app.focused is app.prompt, pilot)
        assert all(b.disabled for b in card.query(Button))  # sent: no second answer
        backend.push(resolved(FIRST))
        # the answers are removed as the card is marked done (Textual removes them at its
        # next turn): the card is finished once both have happened
        await until(
            lambda: card.has_class("done") and not card.query(Button) and not card.query(Input),
            pilot,
        )
        assert "✓ allowed once (via api)" in card_text(card)
        assert not card.can_focus
        assert card.has_class("allowed") and not card.has_class("-open")
        card.action_decide("allow_task")  # what a key would do: nothing now
        card.action_deny()
        await pilot.press("ctrl+g")  # no request waits: the focus stays
        await pilot.pause()
        assert backend.approvals == [(ID, "allow_once", "")]
        assert app.focused is app.prompt
        assert "approval" not in str(app.status.render())


async def test_allow_for_this_task_by_clicking_its_button() -> None:
    app, backend = approval_app(through(FIRST))
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        card = card_of(app, ID)
        await until(lambda: app.focused is card, pilot)
        await pilot.click("#allow_task")
        await until(lambda: backend.approvals == [(ID, "allow_task", "")], pilot)


async def test_deny_opens_the_note_and_enter_sends_it() -> None:
    app, backend = approval_app(through(FIRST))
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        card = card_of(app, ID)
        await until(lambda: app.focused is card, pilot)
        await pilot.press("d")
        assert app.focused is card.note
        assert str(card.query_one("#deny", Button).label) == "Send denial (Enter)"
        await pilot.press(*"not my projects", "enter")
        await until(lambda: backend.approvals == [(ID, "deny", "not my projects")], pilot)
        denial = {**resolved(FIRST), "decision": "deny", "note": "not my projects"}
        backend.push(denial)
        await until(lambda: card.has_class("done"), pilot)
        assert "✗ denied (via api): not my projects" in card_text(card)
        assert not card.has_class("allowed")


async def test_a_click_on_deny_then_on_send_denial_sends_the_note() -> None:
    app, backend = approval_app(through(FIRST))
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        card = card_of(app, ID)
        await until(lambda: app.focused is card, pilot)
        await pilot.click("#deny")
        assert app.focused is card.note
        await pilot.press(*"later")
        await pilot.click("#deny")
        await until(lambda: backend.approvals == [(ID, "deny", "later")], pilot)


async def test_while_the_user_types_the_focus_stays_and_ctrl_g_goes_to_the_card() -> None:
    app, backend = approval_app(before(FIRST))
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        await pilot.press(*"dat")  # typing: a request must not catch the next keys
        backend.push(FIRST)
        await until(lambda: warnings(app), pilot)
        assert "press ctrl+g to answer" in warnings(app)[0]
        await pilot.press(*"a to")
        await pilot.pause()
        assert app.focused is app.prompt and app.prompt.text == "data to"
        assert backend.approvals == []
        await pilot.press("ctrl+g")
        await until(lambda: app.focused is card_of(app, ID), pilot)
        await pilot.press("t")
        await until(lambda: backend.approvals == [(ID, "allow_task", "")], pilot)


async def test_requests_resolved_in_the_history_show_no_live_card() -> None:
    app, _ = approval_app(LINES)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        await until(lambda: len(app.query(ApprovalCard)) == 3, pilot)
        cards = list(app.query(ApprovalCard))
        assert [c.approval.tool_name for c in cards] == ["type", "type", "hotkey"]
        outcomes = [card_text(c).splitlines()[-1] for c in cards]
        assert outcomes == [
            "✓ allowed once (via api)",
            "✗ denied (via api): not my projects",
            "✗ not answered in time: denied",
        ]
        assert not app.query("ApprovalCard Button") and not any(c.can_focus for c in cards)
        await pilot.pause(0.2)
        assert app.focused is app.prompt and not warnings(app)
        assert "approval" not in str(app.status.render())


async def test_a_request_the_daemon_no_longer_holds_is_closed() -> None:
    app, _ = approval_app(through(FIRST), pending=[])  # the daemon restarted meanwhile
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        card = card_of(app, ID)
        await until(lambda: card.has_class("done") and not card.query(Button), pilot)
        assert "no longer pending" in card_text(card)
        assert not card.query(Button) and not warnings(app)


async def test_a_pending_request_missing_from_the_history_is_shown_once() -> None:
    pending = {k: v for k, v in FIRST.items() if k != "seq"}  # as GET /api/approvals has it
    app, backend = approval_app(before(FIRST), pending=[pending])
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        await until(lambda: app.query(ApprovalCard), pilot)
        await until(lambda: app.focused is card_of(app, ID), pilot)
        backend.push(FIRST)  # the journal line comes after: no second card
        await until(lambda: app.cockpit.last_seq == FIRST["seq"], pilot)
        await pilot.pause()
        assert len(app.query(ApprovalCard)) == 1 and len(warnings(app)) == 1


async def test_a_task_that_ends_closes_its_waiting_card() -> None:
    app, backend = approval_app(through(FIRST))
    end = {**LINES[-1], "status": "cancelled", "seq": LINES[-1]["seq"] + 1}
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        card = card_of(app, ID)
        await until(lambda: app.focused is card, pilot)
        backend.push(end)
        await until(lambda: card.has_class("done") and not card.query(Button), pilot)
        await until(lambda: app.focused is app.prompt, pilot)
        assert not card.query(Button) and "no longer pending" in card_text(card)


class RefusingBackend(ReplayBackend):
    """The daemon refuses every answer: first a server error, then 404 (answered)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.refusals = [
            BackendError("POST /api/approvals/x: 500 Internal Server Error", 500),
            BackendError(f"POST /api/approvals/x: 404 no pending approval '{ID}'", 404),
        ]

    async def approve(self, approval_id: str, decision: str, note: str) -> None:
        await super().approve(approval_id, decision, note)
        raise self.refusals.pop(0)


async def test_a_refused_answer_is_shown_and_the_card_answers_again() -> None:
    app, backend = approval_app(through(FIRST), backend=RefusingBackend)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        card = card_of(app, ID)
        await until(lambda: app.focused is card, pilot)
        await pilot.press("a")
        await until(lambda: errors(app), pilot)
        assert "500 Internal Server Error" in errors(app)[0] and ID in errors(app)[0]
        await until(lambda: not card.sending, pilot)
        assert not any(b.disabled for b in card.query(Button)) and card.approval.open
        card.focus()
        await pilot.press("t")  # 404: the daemon holds it no more; the card closes
        await until(lambda: len(errors(app)) == 2, pilot)
        assert "no pending approval" in errors(app)[1]
        await until(lambda: card.has_class("done"), pilot)
        assert "no longer pending" in card_text(card)
        assert [d for _, d, _ in backend.approvals] == ["allow_once", "allow_task"]


async def test_the_screenshot_of_the_request_is_on_the_card() -> None:
    shots = {ID: SCREEN.read_bytes(), SECOND["approval_id"]: b"not an image"}
    pending = [FIRST, SECOND]
    history = [line for line in LINES if line["seq"] <= SECOND["seq"] and line != resolved(FIRST)]
    app, _ = approval_app(history, pending=pending, screenshots=shots)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        first = card_of(app, ID)
        await until(lambda: first.query(".approval-shot"), pilot)
        assert first.query_one(".approval-shot").image is not None  # type: ignore[attr-defined]
        await pilot.pause(0.2)
        assert not card_of(app, SECOND["approval_id"]).query(".approval-shot")
        assert not errors(app)


async def test_help_and_remapped_approval_keys() -> None:
    app, backend = approval_app(through(FIRST), keys={"allow_once": "y", "focus_approval": "f8"})
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        card = card_of(app, ID)
        await until(lambda: app.focused is card, pilot)
        await pilot.press("f1")
        await until(lambda: app.screen.query(HelpPanel), pilot)
        help_md = app.screen.query_one(HelpPanel).query_one(Markdown)
        await until(lambda: "allows it once" in help_md.source, pilot)
        await pilot.press("f1")
        app.prompt.focus()
        await pilot.press("f8")
        await until(lambda: app.focused is card, pilot)
        await pilot.press("a")  # not the key any more
        await pilot.pause(0.1)
        assert backend.approvals == []
        await pilot.press("y")
        await until(lambda: backend.approvals == [(ID, "allow_once", "")], pilot)


def test_snapshot_a_waiting_request_with_its_screen_and_the_budget(
    snap_compare: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    shots = {SECOND["approval_id"]: SCREEN.read_bytes()}
    app, _ = approval_app(through(SECOND), screenshots=shots)

    async def run_before(pilot: Any) -> None:
        app.prompt.cursor_blink = False
        await started(app, pilot)
        card = card_of(app, SECOND["approval_id"])
        await until(lambda: app.focused is card and card.query(".approval-shot"), pilot)
        await until(lambda: app.side.thumb.image is not None, pilot)
        app.clear_notifications()
        await pilot.pause(0.3)
        await pilot.wait_for_scheduled_animations()

    try:
        assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)
    finally:
        monkeypatch.undo()
        time.tzset()


# --- budget -----------------------------------------------------------------------------------


async def test_the_status_line_shows_the_running_tasks_budget() -> None:
    budget_lines = [line for line in LINES if line["kind"] == "budget_used"]
    app, backend = approval_app(through(budget_lines[0]))
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        status = str(app.status.render())
        assert "budget $0.009/$0.1 · 2.2k/20k tokens · 11%" in status
        third = budget_lines[2]["seq"]
        backend.push(*[line for line in LINES if budget_lines[0]["seq"] < line["seq"] <= third])
        await until(lambda: "6.6k/" in str(app.status.render()), pilot)
        assert "budget $0.027/$0.1 · 6.6k/20k tokens · 33%" in str(app.status.render())
        backend.push(*[line for line in LINES if line["seq"] > third])
        await until(lambda: app.cockpit.runs["T005"].ending is not None, pilot)
        await pilot.pause()
        assert "budget" not in str(app.status.render())  # the task ended


def test_budget_text() -> None:
    assert budget_text(Budget(0.012, 900, 0.05, None)) == "$0.012/$0.05 · 24%"
    assert budget_text(Budget(0.01, 9000, None, 10000)) == "9k/10k tokens · 90%"
    assert budget_text(Budget(0.0, 0, 0.5, 1000)) == "$0.00/$0.5 · 0/1k tokens · 0%"
    assert budget_text(Budget(0.0, 1_520_000, None, 2_000_000)) == "1.5M/2M tokens · 76%"
    assert budget_text(Budget(0.2, 10, None, None)) == ""
    assert budget_text(None) == ""


def test_no_budget_without_budget_lines() -> None:
    cockpit = Cockpit()
    for line in LINES:
        if line["kind"] != "budget_used":
            cockpit.apply(line)
    assert cockpit.runs["T005"].budget is None


# --- the pieces ---------------------------------------------------------------------------


def test_the_call_shows_characters_that_do_not_show() -> None:
    sneaky = Approval("a-1", "c-1", "type", {"text": "su\u200bdo\u00a0ls\u202e"})
    assert call_text(sneaky) == 'type {"text": "su\\u{200b}do\\u{a0}ls\\u{202e}"}'
    astral = Approval("a-3", "c-3", "type", {"text": "x\U000e0001y\U0001d173"})
    assert call_text(astral) == 'type {"text": "x\\u{e0001}y\\u{1d173}"}'  # not \\ue0001
    plain = Approval("a-2", "c-2", "hotkey", {"keys": "alt+f4"})
    assert call_text(plain) == 'hotkey {"keys": "alt+f4"}'


def test_time_left() -> None:
    assert time_left(100.0, 0.0) == "1:40 left, then no answer counts as a denial"
    assert time_left(100.0, 99.5).startswith("time is up")
    assert time_left(100.0, 200.0).startswith("time is up")


def test_state_folds_requests_answers_and_ends() -> None:
    cockpit = Cockpit()
    for line in LINES:
        cockpit.apply(line)
    decisions = [a.decision for _, a in cockpit.approvals.values()]
    assert decisions == ["allow_once", "deny", "timeout"]
    assert cockpit.open_approvals() == []
    waiting = Cockpit()
    for line in through(SECOND):
        waiting.apply(line)
    assert [a.approval_id for _, a in waiting.open_approvals()] == [SECOND["approval_id"]]
    [(_, approval)] = waiting.open_approvals()
    assert approval.arguments == {"text": "rm -rf ~/projects"} and approval.call_id
    assert waiting.runs["T005"].budget == Budget(0.009, 2200, 0.1, 20000)
    assert unanswered(through(SECOND)) == [SECOND]
    assert unanswered(LINES) == []
    assert unanswered([*through(SECOND), {**LINES[-1], "status": "cancelled"}]) == []


# --- the client against the real approval routes ------------------------------------------


async def test_api_backend_lists_answers_and_reports_refusals(tmp_path: Path) -> None:
    from jarvis.config import load_settings
    from jarvis.safety.approvals import ApprovalGate, ApprovalStore
    from jarvis.safety.settings import SafetySettings
    from jarvis.tools.context import ToolContext
    from tests.test_approvals import ApiServer

    bus = EventBus()
    store = ApprovalStore(bus, attended=True)
    gate = ApprovalGate(SafetySettings(), store)
    context = ToolContext.for_task(load_settings(tmp_path / "data"), "T1", bus=bus)
    with ApiServer(store, token="tok-0123456789") as api:
        client = ApiBackend(api.url, "tok-0123456789")
        try:
            assert await client.pending_approvals() == []
            check = asyncio.create_task(gate.check("type", {"text": "sudo ls"}, context, "c1"))
            deadline = time.monotonic() + 10
            while not (pending := await client.pending_approvals()):
                assert time.monotonic() < deadline, "no pending approval"
                await asyncio.sleep(0.02)
            [request] = pending
            assert request["kind"] == "approval_requested" and request["task_id"] == "T1"
            assert request["arguments"] == {"text": "sudo ls"}
            assert await client.approval_screenshot(request["approval_id"]) is None  # none
            await client.approve(request["approval_id"], "deny", "not today")
            refusal = await asyncio.wait_for(check, 10)
            assert refusal is not None and refusal.endswith(": not today")
            with pytest.raises(BackendError) as refused:
                await client.approve(request["approval_id"], "allow_once", "")
            assert refused.value.status == 404
            assert f"no pending approval '{request['approval_id']}'" in str(refused.value)
            assert "tok-0123456789" not in str(refused.value)
            assert await client.pending_approvals() == []
        finally:
            await client.aclose()


async def test_the_screen_is_live_while_a_task_runs() -> None:
    """While a task runs the side panel asks for the display as it is now, about every
    ``live_screen_s``; once no task runs it does not."""
    running = before(FIRST)
    app, replay = approval_app(running, live_screen_s=0.05)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        assert app.cockpit.running is not None
        await until(lambda: replay.screen_requests.count(True) >= 2, pilot)
        [end] = [line for line in LINES if line["kind"] == "task_finished"]
        replay.push(end)
        await until(lambda: app.cockpit.running is None, pilot)
        live = replay.screen_requests.count(True)
        app._live_screen()  # what the timer does
        await pilot.pause()
        assert replay.screen_requests.count(True) == live  # (the ending loads the last step's)


async def test_no_live_screen_when_it_is_off_or_the_panel_is_hidden() -> None:
    app, replay = approval_app(before(FIRST), live_screen_s=0)
    async with app.run_test(size=SIZE) as pilot:
        await started(app, pilot)
        await until(lambda: bool(replay.screen_requests), pilot)  # the first, after history
        assert True not in replay.screen_requests
        app.side.display = False
        app._live_screen()
        await pilot.pause()
        assert True not in replay.screen_requests


async def test_markup_in_a_request_is_shown_as_text() -> None:
    """The reason comes from the model (a risky step's message, the matched text): square
    brackets in it are text, never Textual markup (which could crash the app or carry
    actions), on the card and in the notice."""
    hostile = "[/] [@click=app.quit]quit[/] [b]bold"
    request = {**FIRST, "reason": f"the model asks to approve a risky step: {hostile}"}
    app, backend = approval_app(before(FIRST))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await started(app, pilot)
        backend.push(request)
        await until(lambda: app.query(ApprovalCard), pilot)
        await pilot.pause()
        assert app.is_running
        assert hostile in card_text(card_of(app, ID))
        [said] = warnings(app)
        assert hostile in said


async def test_a_key_typed_as_the_card_takes_the_focus_does_not_allow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Someone typing to the prompt as a request appears: their next "a" lands on the card
    that just took the focus, and must not allow the call; pressed again, it does."""
    monkeypatch.setattr(ApprovalCard, "key_guard_s", 60.0)
    app, backend = approval_app(before(FIRST))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await started(app, pilot)
        backend.push(FIRST)
        await until(lambda: app.query(ApprovalCard), pilot)
        card = card_of(app, ID)
        await until(lambda: app.focused is card, pilot)
        await pilot.press("a")
        await pilot.pause()
        assert backend.approvals == [] and card.approval.open
        assert any("press the key again" in n.message for n in app._notifications)
        await pilot.press("a")
        await until(lambda: backend.approvals, pilot)
        assert backend.approvals == [(ID, "allow_once", "")]
