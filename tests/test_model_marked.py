"""The model marks a step as risky with ``call_user(risky=true)``: it becomes an approval
request like a held call. Allowed, the tool answers "approved" and the task goes on; denied,
the model gets -32006 with the person's note; with nobody to approve, the task stops as a
plain question; run unattended (``--yes``), it goes on without asking."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from jarvis.config import load_settings
from jarvis.events import ApprovalRequested, ApprovalResolved, EventBus, EventRecorder
from jarvis.safety.approvals import ApprovalGate, ApprovalStore
from jarvis.tools.computer import build_registry
from jarvis.tools.context import ToolContext
from jarvis.tools.registry import NOT_ALLOWED
from tests.agent_harness import agent_settings
from tests.approvals_harness import run_answered, tool_results, wait_event
from tests.fake_model import FakeModel, Reply, call

TRASH = "I am about to empty the trash (12 files); they cannot be restored"
MAIL = "I am about to send the newsletter to 40 people"


def _setup(tmp_path: Path, *, attended: bool, unattended: bool = False) -> Any:
    settings = load_settings(tmp_path / "data")
    bus = EventBus()
    registry = build_registry(settings)
    registry.approvals = ApprovalGate(
        settings.safety, ApprovalStore(bus, attended=attended), unattended=unattended
    )
    context = ToolContext.for_task(settings, "t-1", bus=bus, channels=("tui",))
    return registry, context, EventRecorder(bus)


async def test_nobody_to_approve_stops_the_task_as_a_question(tmp_path: Path) -> None:
    registry, context, recorder = _setup(tmp_path, attended=False)
    args = {"message": TRASH, "risky": True}
    result = await registry.execute("call_user", args, context, call_id="c1")
    assert result.ok and result.data == {"status": "waiting_for_user"}
    control = context.take_control()
    assert control is not None and (control.kind, control.text) == ("call_user", TRASH)
    assert not recorder.of(ApprovalRequested) and context.approved == set()


async def test_a_risky_step_of_an_email_task_is_refused_when_nobody_can_approve(
    tmp_path: Path,
) -> None:
    registry, context, _ = _setup(tmp_path, attended=False)
    context.channels = ("email",)
    result = await registry.execute("call_user", {"message": TRASH, "risky": True}, context, "c1")
    assert not result.ok and result.error is not None and result.error.code == NOT_ALLOWED
    assert context.take_control() is None  # no question goes out by mail


async def test_unattended_goes_on_without_asking(tmp_path: Path) -> None:
    registry, context, recorder = _setup(tmp_path, attended=False, unattended=True)
    result = await registry.execute("call_user", {"message": TRASH, "risky": True}, context, "c1")
    assert result.ok and result.data == {"status": "approved", "message": TRASH}
    assert context.take_control() is None and context.approved == {"c1"}
    assert not recorder.of(ApprovalRequested)
    plain = await registry.execute("call_user", {"message": "which folder?"}, context, "c2")
    assert plain.ok and plain.data == {"status": "waiting_for_user"}  # a question still asks
    assert context.take_control() is not None


async def test_an_approval_for_another_call_does_not_carry_over(tmp_path: Path) -> None:
    """Only the call a person allowed goes on: a second risky call_user asks again."""
    registry, context, recorder = _setup(tmp_path, attended=True)
    first = asyncio.create_task(
        registry.execute("call_user", {"message": TRASH, "risky": True}, context, "c1")
    )
    request = await wait_event(recorder, ApprovalRequested)
    assert request.tool_name == "call_user" and request.arguments["risky"] is True
    registry.approvals.store.resolve(request.approval_id, "allow_once")
    assert (await first).data == {"status": "approved", "message": TRASH}
    second = asyncio.create_task(
        registry.execute("call_user", {"message": MAIL, "risky": True}, context, "c2")
    )
    again = await wait_event(recorder, ApprovalRequested, count=2)
    assert MAIL in again.reason
    registry.approvals.store.resolve(again.approval_id, "deny", "not today")
    denied = await second
    assert not denied.ok and denied.error is not None
    assert denied.error.code == NOT_ALLOWED and denied.error.message.endswith(": not today")
    assert context.take_control() is None  # the task goes on: the model has its answer
    assert [e.decision for e in recorder.of(ApprovalResolved)] == ["allow_once", "deny"]


@pytest.mark.usefixtures("xserver")
async def test_the_task_goes_on_after_an_approval_through_the_api(
    fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With the real agent on Xvfb and answers through the API: the allowed step comes back
    approved, the denied one as -32006 with the note, and the task finishes."""
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    fake_model.script(
        Reply(tool_calls=[call("call_user", message=TRASH, risky=True)]),
        Reply(tool_calls=[call("call_user", message=MAIL, risky=True)]),
        Reply(tool_calls=[call("finished", summary="emptied the trash; the mail was not sent")]),
        Reply(text='{"done": true, "reason": "ok"}'),
    )
    plan: list[dict[str, Any] | None] = [
        {"decision": "allow_once"},
        {"decision": "deny", "note": "not the newsletter"},
    ]
    seen = await run_answered(settings, "tidy up", plan)
    outcome, requests = seen.outcome, seen.requests
    assert outcome.status == "finished", outcome.summary
    assert [r["arguments"]["message"] for r in requests] == [TRASH, MAIL]
    assert all(
        r["screenshot"] and (settings.data_dir / r["screenshot"]).is_file() for r in requests
    )
    results = tool_results(fake_model)
    assert results[0]["ok"] is True and results[0]["data"]["status"] == "approved"
    assert results[1]["error"]["code"] == NOT_ALLOWED
    assert results[1]["error"]["message"].endswith("not the newsletter")
