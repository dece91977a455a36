"""OpenAI's pending safety checks and Gemini's safety decisions, held for a person
through the approvals.

The Responses API's ``computer`` tool can attach ``pending_safety_checks`` to a call
(malicious instructions on the page, an irrelevant domain, a sensitive domain). The call's
actions may run only when a person acknowledged every check. :func:`approver` turns the
task's :class:`~jarvis.safety.approvals.ApprovalGate` into the provider's approver: each
check becomes an approval request (with the screenshot) in the TUI and the web panel,
answered like any held call. Unlike a held tool call it never runs unattended (``--yes``
and ``channels.NAME.unattended`` do not apply) and "allow for this task" covers only that check:
OpenAI asks a person to acknowledge each one. With nobody to ask it is denied at once.
Gemini's ``safety_decision: require_confirmation`` on a computer-use call goes the same
way (:mod:`jarvis.llm.gemini_wire`).
"""

from __future__ import annotations

from jarvis.llm.gemini import GeminiProvider
from jarvis.llm.openai_actions import Approver, SafetyCheck, deny_unattended
from jarvis.llm.openai_responses import OpenAIResponsesProvider
from jarvis.safety.approvals import ApprovalGate
from jarvis.safety.rules import Held
from jarvis.tools.context import current_context


def approver(gate: ApprovalGate) -> Approver:
    """An approver that asks a person about each check of the running task."""

    async def approve(check: SafetyCheck) -> bool | str:
        context = current_context.get()
        if context is None:  # a model call outside a task: nobody to ask about it
            return "no task is running to ask about it"
        code = check.code or "unnamed"
        vendor = check.vendor
        held = Held(f"{vendor.lower()}:{code}:{check.id}", f"{vendor}'s safety check {code}")
        arguments = {
            "safety_check": {"id": check.id, "code": check.code, "message": check.message},
            "actions": list(check.actions),
        }
        refusal = await gate.ask_person(held, "computer", arguments, context, check.call_id)
        if refusal is None:
            return True
        return refusal.removeprefix("not run: ")

    return approve


def route_safety_checks(provider: object, gate: ApprovalGate) -> bool:
    """Give ``provider`` (OpenAI's computer tool, Gemini's computer use) the gate as its
    approver when it has the default (nobody there); True when it did. An approver set by
    the caller stays."""
    vendor_tool = (OpenAIResponsesProvider, GeminiProvider)
    if isinstance(provider, vendor_tool) and provider.approve is deny_unattended:
        provider.approve = approver(gate)
        return True
    return False
