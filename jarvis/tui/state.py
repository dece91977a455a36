"""What the cockpit knows, built only from journal lines (DESIGN.md section 5).

A journal line is ``{"seq", "ts", "kind", "task_id", ...the event's fields}``. The
:class:`Cockpit` folds lines into per-task runs (thought text, tool calls, verification,
warnings, the ending) and the totals the footer shows. It is plain data with no UI, so
the widgets render from it and tests can check it directly. Each :meth:`Cockpit.apply`
returns a :class:`Change` naming what a view has to redraw.
"""

from __future__ import annotations

import contextlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jarvis.task_words import status_word
from jarvis.tui.task_runs import (
    CLICK_TOOLS,
    NONE,
    Approval,
    Budget,
    Change,
    Ending,
    Note,
    TaskRun,
    Thought,
    ToolCall,
    Verification,
)

MODEL_ANSWERED = frozenset({"model_text_delta", "tool_call_streaming", "step_finished"})
"""Lines that show the model answers again."""


@dataclass
class Cockpit:
    runs: dict[str, TaskRun] = field(default_factory=dict)
    last_seq: int = 0
    last_click: tuple[int, int] | None = None
    gaps: int = 0
    seen: set[int] = field(default_factory=set)
    approvals: dict[str, tuple[str, Approval]] = field(default_factory=dict)
    """Every approval request seen, by id: its task and its item."""
    notices: list[str] = field(default_factory=list)
    """Errors of no task the person must see (a message that could not be routed)."""
    model_trouble: str | None = None
    """The model's last failure while it is retried (the router's or a task's), until it
    answers again: the status line shows it."""

    @property
    def running(self) -> TaskRun | None:
        """The newest task that has not ended."""
        for run in reversed(self.runs.values()):
            if run.running:
                return run
        return None

    @property
    def latest(self) -> TaskRun | None:
        """The task whose usage the status line shows: the running one, else the newest."""
        if (running := self.running) is not None:
            return running
        return max(self.runs.values(), key=lambda r: r.first_seq, default=None)

    @property
    def waiting(self) -> TaskRun | None:
        """The newest task waiting for an answer from the user."""
        for run in reversed(self.runs.values()):
            if run.question is not None and not run.answered:
                return run
        return None

    def open_approvals(self) -> list[tuple[str, Approval]]:
        """Requests still waiting for an answer, oldest first, each with its task id."""
        return [(task_id, a) for task_id, a in self.approvals.values() if a.open]

    def approval_gone(self, approval_id: str) -> Change:
        """Mark an open request as no longer answerable (the daemon does not hold it)."""
        found = self.approvals.get(approval_id)
        if found is None or not found[1].open:
            return NONE
        task_id, approval = found
        approval.gone = True
        return Change("item_updated", task_id, self.runs[task_id].items.index(approval))

    def run(self, task_id: str, ts: float = 0.0, seq: int = 0) -> TaskRun:
        found = self.runs.get(task_id)
        if found is None:
            found = self.runs[task_id] = TaskRun(task_id=task_id, started=ts, first_seq=seq)
        return found

    def apply(self, line: dict[str, Any]) -> Change:
        """Fold one journal line in; a line whose seq was seen before is skipped (a resumed
        stream, or an older run's journal opened after the live lines)."""
        seq = line.get("seq")
        if isinstance(seq, int):
            if seq in self.seen:
                return NONE
            self.seen.add(seq)
            self.last_seq = max(self.last_seq, seq)
        kind = line.get("kind")
        if kind == "model_retry":
            self.model_trouble = f"{line.get('reason')} (retry {line.get('attempt')})"
        elif kind in MODEL_ANSWERED:
            self.model_trouble = None
        if kind == "gap":
            self.gaps += 1
            return NONE
        if kind == "routing_failed":
            self.notices.append(routing_notice(line))
            return Change("notice")
        task_id = line.get("task_id")
        if not isinstance(task_id, str) or not task_id:
            return NONE
        handler = _HANDLERS.get(str(kind))
        if handler is None:
            return NONE
        ts = float(line.get("ts") or 0.0)
        return handler(self, self.run(task_id, ts, seq if isinstance(seq, int) else 0), line)


def routing_notice(line: dict[str, Any]) -> str:
    """The line a person reads when their message could not become a task."""
    return f"message {line.get('message_id')} could not be routed: {routing_problem(line)}"


def routing_problem(line: dict[str, Any]) -> str:
    """Why a ``routing_failed`` message could not be routed, and when it is tried again."""
    retry = _number(line.get("retry_in_s"))
    when = f"; next try in {retry:.0f} s" if retry is not None else ""
    return f"{line.get('error')} (it waits in the inbox{when})"


def _task_started(cockpit: Cockpit, run: TaskRun, line: dict[str, Any]) -> Change:
    if run.items or run.task:  # a task that runs again after an answer: a new attempt
        run.run = int(line.get("run") or run.run + 1)
        answer = str(line.get("answer") or "")
        said = f" · you answered: {answer}" if answer else ""
        run.items.append(Note(f"run {run.run} started{said}"))
        run.ending, run.question, run.answered, run.budget = None, None, False, None
        run.earlier = (run.input_tokens, run.output_tokens, run.cost_usd)
        return Change("item", run.task_id, len(run.items) - 1)
    # joined at a later run: the task is what it was before the answers were added to it
    run.task = str(line.get("task", "")).split("\n\nUpdate (")[0]
    run.run = int(line.get("run") or 1)
    return Change("task", run.task_id)


def _step_started(cockpit: Cockpit, run: TaskRun, line: dict[str, Any]) -> Change:
    run.step = int(line.get("step") or 0)
    run.items.append(Thought())
    return Change("item", run.task_id, len(run.items) - 1)


def _text_delta(cockpit: Cockpit, run: TaskRun, line: dict[str, Any]) -> Change:
    text = str(line.get("text", ""))
    last = run.items[-1] if run.items else None
    if not isinstance(last, Thought):
        run.items.append(Thought(text))
        return Change("item", run.task_id, len(run.items) - 1)
    last.text += text
    return Change("thought", run.task_id, len(run.items) - 1)


def _call_streaming(cockpit: Cockpit, run: TaskRun, line: dict[str, Any]) -> Change:
    run.items.append(ToolCall(str(line.get("call_id")), str(line.get("tool_name"))))
    return Change("item", run.task_id, len(run.items) - 1)


def _call_started(cockpit: Cockpit, run: TaskRun, line: dict[str, Any]) -> Change:
    call = run.call(str(line.get("call_id")))
    if call is not None:  # its card appeared while the model wrote it
        call.take_arguments(line)
        return Change("item_updated", run.task_id, run.items.index(call))
    call = ToolCall(str(line.get("call_id")), str(line.get("tool_name")))
    call.take_arguments(line)
    run.items.append(call)
    return Change("item", run.task_id, len(run.items) - 1)


def _call_finished(cockpit: Cockpit, run: TaskRun, line: dict[str, Any]) -> Change:
    call = run.call(str(line.get("call_id")))
    if call is None:  # joined mid-call (a gap, or the journal starts here)
        call = ToolCall(str(line.get("call_id")), str(line.get("tool_name")))
        run.items.append(call)
    call.status = "ok" if line.get("ok") else "cancelled" if line.get("cancelled") else "error"
    call.error_code = line.get("error_code")
    call.error_message = line.get("error_message")
    call.latency_ms = float(line.get("latency_ms") or 0.0)
    call.data = line.get("data")
    args = call.arguments
    if call.tool_name in CLICK_TOOLS and call.status == "ok" and {"x", "y"} <= args.keys():
        with contextlib.suppress(TypeError, ValueError):  # only a click that happened
            cockpit.last_click = (int(args["x"]), int(args["y"]))
    if call.tool_name == "call_user" and call.status == "ok":
        run.question = str(call.arguments.get("message", "")) or run.question
    return Change("item_updated", run.task_id, run.items.index(call))


def _step_finished(cockpit: Cockpit, run: TaskRun, line: dict[str, Any]) -> Change:
    """The step's own tokens; ``cost_usd`` is the run's so far (its verification included)."""
    run.input_tokens += int(line.get("input_tokens") or 0)
    run.output_tokens += int(line.get("output_tokens") or 0)
    run.cost_usd = run.earlier[2] + float(line.get("cost_usd") or 0.0)
    return Change("totals", run.task_id)


def _verification(cockpit: Cockpit, run: TaskRun, line: dict[str, Any]) -> Change:
    """The verification call's own tokens and cost count in the run's usage."""
    run.input_tokens += int(line.get("input_tokens") or 0)
    run.output_tokens += int(line.get("output_tokens") or 0)
    run.cost_usd += float(line.get("cost_usd") or 0.0)
    run.items.append(Verification(bool(line.get("done")), str(line.get("reason", ""))))
    return Change("item", run.task_id, len(run.items) - 1)


def _note(text: str) -> Any:
    def handler(cockpit: Cockpit, run: TaskRun, line: dict[str, Any]) -> Change:
        run.items.append(Note(text.format_map(defaultdict(str, line))))
        return Change("item", run.task_id, len(run.items) - 1)

    return handler


def _approval_requested(cockpit: Cockpit, run: TaskRun, line: dict[str, Any]) -> Change:
    approval_id = str(line.get("approval_id") or "")
    if not approval_id or approval_id in cockpit.approvals:  # from the pending list first
        return NONE
    approval = Approval(
        approval_id=approval_id,
        call_id=str(line.get("call_id") or ""),
        tool_name=str(line.get("tool_name") or ""),
        arguments=dict(line.get("arguments") or {}),
        reason=str(line.get("reason") or ""),
        shown_arguments=str(line.get("shown_arguments") or ""),
        shown_reason=str(line.get("shown_reason") or ""),
        channels=[str(c) for c in line.get("channels") or []],
        screenshot=line.get("screenshot") or None,
        expires_at=float(line.get("expires_at") or 0.0),
    )
    cockpit.approvals[approval_id] = (run.task_id, approval)
    run.items.append(approval)
    return Change("item", run.task_id, len(run.items) - 1)


def _approval_resolved(cockpit: Cockpit, run: TaskRun, line: dict[str, Any]) -> Change:
    found = cockpit.approvals.get(str(line.get("approval_id")))
    if found is None:  # its request is not in what the cockpit has seen
        return NONE
    task_id, approval = found
    approval.decision = str(line.get("decision") or "deny")
    approval.note = str(line.get("note") or "")
    approval.by = str(line.get("by") or "")
    return Change("item_updated", task_id, cockpit.runs[task_id].items.index(approval))


def _budget_used(cockpit: Cockpit, run: TaskRun, line: dict[str, Any]) -> Change:
    max_tokens = _number(line.get("max_tokens"))
    run.budget = Budget(
        cost_usd=float(line.get("cost_usd") or 0.0),
        tokens=int(line.get("tokens") or 0),
        max_cost_usd=_number(line.get("max_cost_usd")),
        max_tokens=None if max_tokens is None else int(max_tokens),
    )
    return Change("totals", run.task_id)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and value > 0 else None


def _task_finished(cockpit: Cockpit, run: TaskRun, line: dict[str, Any]) -> Change:
    status = status_word(str(line.get("status", "failed")))  # a recorded journal's too
    for item in run.items:  # a request its task outlived can no longer be answered
        if isinstance(item, Approval) and item.open:
            item.gone = True
    run.ending = Ending(status, str(line.get("summary", "")), int(line.get("steps") or 0))
    if status == "needs_user":
        run.question = run.ending.summary or run.question or ""
        run.answered = False
    tokens = line.get("task_tokens")
    if isinstance(tokens, dict):  # the task's totals over all its runs
        run.input_tokens = int(tokens.get("input_tokens") or 0)
        run.output_tokens = int(tokens.get("output_tokens") or 0)
        run.cost_usd = float(line.get("task_cost_usd") or 0.0)
    elif "input_tokens" in line:  # the run's own totals count verification and skill calls
        run.input_tokens = run.earlier[0] + int(line.get("input_tokens") or 0)
        run.output_tokens = run.earlier[1] + int(line.get("output_tokens") or 0)
        run.cost_usd = run.earlier[2] + float(line.get("cost_usd") or 0.0)
    return Change("ending", run.task_id)


_HANDLERS = {
    "task_started": _task_started,
    "step_started": _step_started,
    "model_text_delta": _text_delta,
    "tool_call_streaming": _call_streaming,
    "tool_call_started": _call_started,
    "tool_call_finished": _call_finished,
    "step_finished": _step_finished,
    "verification_finished": _verification,
    "warning": _note("{message}"),
    "tool_mode_fallback": _note("switched to text tool mode: {reason}"),
    "model_retry": _note("model retry {attempt}: {reason}"),
    "approval_requested": _approval_requested,
    "approval_resolved": _approval_resolved,
    "budget_used": _budget_used,
    "task_finished": _task_finished,
}


def read_journal(path: Path) -> list[dict[str, Any]]:
    """The lines of a journal file; a line that is not a JSON object is skipped."""
    lines: list[dict[str, Any]] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            lines.append(value)
    return lines
