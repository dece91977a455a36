"""OpenAI's pending safety checks go to the approvals: held until a person answers through
the control API, then acknowledged (allowed) or not run (denied, with the note); never
approved unattended, even with ``--yes``. The real openai SDK against the loopback model,
the real agent on Xvfb with the Tk app, answers through a real uvicorn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jarvis.agent.safety_checks import approver
from jarvis.events import ApprovalRequested, EventBus, EventRecorder
from jarvis.llm.factory import make_provider
from jarvis.llm.openai_actions import SafetyCheck, deny_unattended
from jarvis.llm.openai_responses import OpenAIResponsesProvider
from jarvis.safety.approvals import ApprovalGate, ApprovalStore
from jarvis.safety.settings import SafetySettings
from jarvis.tools.context import ToolContext, current_context
from tests.agent_harness import agent_settings
from tests.approvals_harness import Answered, run_answered
from tests.fake_model import FakeModel
from tests.test_responses_api import CHECK, TASK, script
from tests.tkdriver import TkApp


def _settings(tmp_path: Path, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch) -> Any:
    return agent_settings(
        tmp_path, fake_model, monkeypatch, provider="openai", openai_model="gpt-5.4"
    )


async def _run_with_person(settings: Any, plan: list[dict[str, Any] | None]) -> Answered:
    made: list[OpenAIResponsesProvider] = []

    def with_approver(gate: ApprovalGate) -> OpenAIResponsesProvider:
        """The caller's provider, made with the run's gate as its approver."""
        provider = make_provider(settings, approve=approver(gate))
        assert isinstance(provider, OpenAIResponsesProvider)
        made.append(provider)
        return provider

    def kept(agent: Any) -> None:
        assert made[0].approve is not deny_unattended  # wired through its constructor

    return await run_answered(settings, TASK, plan, provider=with_approver, during=kept)


@pytest.mark.usefixtures("xserver")
@pytest.mark.slow
async def test_safety_check_is_held_for_a_person_and_acknowledged(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _settings(tmp_path, fake_model, monkeypatch)
    fake_model.script(*script(tkapp, [CHECK]))
    seen = await _run_with_person(settings, [{"decision": "allow_once"}])
    outcome, recorder = seen.outcome, seen.recorder
    assert outcome.status == "finished", outcome.summary
    assert tkapp.ok_pressed() == "hello"
    [request] = seen.requests
    assert request["tool_name"] == "computer" and request["call_id"] == "call_b"
    assert request["arguments"] == {
        "safety_check": {key: CHECK[key] for key in ("id", "code", "message")},
        "actions": ["click"],
    }
    assert "malicious_instructions" in request["reason"]
    assert request["screenshot"] and (settings.data_dir / request["screenshot"]).is_file()
    # the third request (after the OK click) carries the acknowledged check
    [event] = recorder.of(ApprovalRequested)
    after = fake_model.requests[2]
    outputs = [i for i in after.body["input"] if i.get("type") == "computer_call_output"]
    assert outputs[1]["call_id"] == "call_b" and outputs[1]["acknowledged_safety_checks"] == [CHECK]
    assert event.approval_id == request["approval_id"]


@pytest.mark.usefixtures("xserver")
@pytest.mark.slow
async def test_a_denied_safety_check_does_not_run_and_says_why(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _settings(tmp_path, fake_model, monkeypatch)
    replies = script(tkapp, [CHECK])
    fake_model.script(replies[0], replies[1])
    plan: list[dict[str, Any] | None] = [{"decision": "deny", "note": "that page is a scam"}]
    seen = await _run_with_person(settings, plan)
    outcome = seen.outcome
    assert outcome.status == "needs_user"
    assert "not approved" in outcome.summary and "that page is a scam" in outcome.summary
    assert tkapp.ok_pressed() is None  # the held click never ran
    assert seen.statuses == [200]


async def test_safety_checks_are_never_approved_unattended(tmp_path: Path) -> None:
    """`--yes` and unattended channels allow held tool calls, not OpenAI's checks; with
    nobody serving approvals the check is refused at once, and outside a task too."""
    from jarvis.config import load_settings

    bus = EventBus()
    recorder = EventRecorder(bus)
    safety = SafetySettings.model_validate({"unattended": ["api"]})
    gate = ApprovalGate(safety, ApprovalStore(bus, attended=False), unattended=True)
    approve = approver(gate)
    check = SafetyCheck("sc1", "sensitive_domain", "a bank", "call_1", ("type",))
    assert await approve(check) == "no task is running to ask about it"
    context = ToolContext.for_task(load_settings(tmp_path / "d"), "t-1", bus=bus, channels=("api",))
    token = current_context.set(context)
    try:
        verdict = await approve(check)
    finally:
        current_context.reset(token)
    assert isinstance(verdict, str) and "no one can approve it here" in verdict
    assert not recorder.of(ApprovalRequested)


async def test_an_approver_given_at_construction_is_kept() -> None:
    """A provider's approver comes with its constructor and stays; without one nobody is
    there and every check is denied (nothing sets it afterwards)."""
    gate = ApprovalGate(SafetySettings(), ApprovalStore(EventBus()))
    approve = approver(gate)
    provider = OpenAIResponsesProvider(
        "gpt-5.4", approve=approve, api_key="k", base_url="http://127.0.0.1:9/v1"
    )
    bare = OpenAIResponsesProvider("gpt-5.4", api_key="k", base_url="http://127.0.0.1:9/v1")
    try:
        assert provider.approve is approve
        assert bare.approve is deny_unattended
    finally:
        await provider.aclose()
        await bare.aclose()
