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

from jarvis.llm.openai_actions import Approver, SafetyCheck
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
