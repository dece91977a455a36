"""OpenAI's pending safety checks go to the approvals: held until a person answers through
the control API, then acknowledged (allowed) or not run (denied, with the note); never
approved unattended, even with ``--yes``. The real openai SDK against the loopback model,
the real agent on Xvfb with the Tk app, answers through a real uvicorn."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from jarvis.agent.factory import build_agent
from jarvis.agent.safety_checks import approver
from jarvis.events import ApprovalRequested, EventBus, EventRecorder
from jarvis.llm.factory import make_provider
from jarvis.llm.openai_actions import SafetyCheck, deny_unattended
from jarvis.llm.openai_responses import OpenAIResponsesProvider
from jarvis.safety.approvals import ApprovalGate, ApprovalStore
from jarvis.safety.settings import SafetySettings
from jarvis.tools.context import ToolContext, current_context
from tests.agent_harness import agent_settings
from tests.approvals_harness import ApiServer, answerer
from tests.fake_model import FakeModel
from tests.test_responses_api import CHECK, TASK, script
from tests.tkdriver import TkApp


async def _run_with_person(
    settings: Any, plan: list[dict[str, Any] | None]
) -> tuple[Any, list[Any], EventRecorder, OpenAIResponsesProvider]:
    bus = EventBus()
    recorder = EventRecorder(bus)
    store = ApprovalStore(bus)
    log: list[Any] = []
    provider = make_provider(settings, bus)  # OpenAI's default approver: nobody there
    assert isinstance(provider, OpenAIResponsesProvider)
    with ApiServer(store) as api:
        person = answerer(api.url, plan, log)
        person.start()
        gate = ApprovalGate(settings.safety, store)
        async with build_agent(settings, bus, provider=provider, approvals=gate) as agent:
            assert provider.approve is not deny_unattended  # routed to the approvals
            outcome = await asyncio.wait_for(agent.run(TASK), timeout=120)
        person.join(timeout=10)
    assert provider.approve is deny_unattended  # the caller's provider is given back as it was
    await provider.aclose()
    return outcome, log, recorder, provider


@pytest.mark.usefixtures("xserver")
@pytest.mark.slow
async def test_safety_check_is_held_for_a_person_and_acknowledged(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, provider="openai", openai_model="gpt-5.4"
    )
    fake_model.script(*script(tkapp, [CHECK]))
    outcome, log, recorder, _ = await _run_with_person(settings, [{"decision": "allow_once"}])
    assert outcome.status == "finished", outcome.summary
    assert tkapp.ok_pressed() == "hello"
    [request] = [r for r in log if isinstance(r, dict)]
    assert request["tool_name"] == "computer" and request["call_id"] == "call_b"
    assert request["arguments"] == {
        "safety_check": {key: CHECK[key] for key in ("id", "code", "message")},
        "actions": ["click"],
    }
    assert "malicious_instructions" in request["reason"]
    assert request["screenshot"] and (settings.data_dir / request["screenshot"]).is_file()
    # the model saw nothing while the person decided: the request came after 2 model calls
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
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, provider="openai", openai_model="gpt-5.4"
    )
    replies = script(tkapp, [CHECK])
    fake_model.script(replies[0], replies[1])
    plan: list[dict[str, Any] | None] = [{"decision": "deny", "note": "that page is a scam"}]
    outcome, log, _, _ = await _run_with_person(settings, plan)
    assert outcome.status == "needs_user"
    assert "not approved" in outcome.summary and "that page is a scam" in outcome.summary
    assert tkapp.ok_pressed() is None  # the held click never ran
    assert log[-1] == 200


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
