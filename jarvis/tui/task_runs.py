"""A task's run as the cockpit shows it: its thought text, tool calls, verification,
notes, approval requests, budget and ending (:class:`TaskRun`), and :class:`Change`, what
one journal line changed. Plain data, folded from journal lines by
:class:`jarvis.tui.state.Cockpit`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from jarvis.text_display import shown_arguments, shown_call, visible

CLICK_TOOLS = frozenset({"click", "double_click", "right_click", "mouse_move"})

CallStatus = Literal["running", "ok", "error", "cancelled"]


@dataclass
class Thought:
    """Model text of one step; deltas are appended as they stream."""

    text: str = ""


CANCELLED_CALL = "cancelled: the task was stopped during this call"
"""A call cut short by a cancel, a stop or the kill switch: not an error."""


@dataclass
class ToolCall:
    call_id: str
    tool_name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    status: CallStatus = "running"
    error_code: int | None = None
    error_message: str | None = None
    latency_ms: float | None = None
    data: Any = None
    shown_call: str = ""
    """The call on one line as the daemon renders it (``click(x=400, y=300)``)."""
    shown_arguments: str = ""
    """The arguments as the daemon renders them (hidden characters spelled out)."""

    def take_arguments(self, line: dict[str, Any]) -> None:
        """The arguments of a ``tool_call_started`` line, with the daemon's rendering (or
        the same rendering here, for a journal written before the daemon sent it)."""
        self.arguments = dict(line.get("arguments") or {})
        self.shown_call = str(line.get("shown_call") or shown_call(self.tool_name, self.arguments))
        self.shown_arguments = str(line.get("shown_arguments") or shown_arguments(self.arguments))

    def copy_text(self) -> str:
        """The card as plain text (what "copy a card" puts on the clipboard)."""
        lines = [f"{self.tool_name} [{self.status}]", f"arguments: {_dump(self.arguments)}"]
        if self.status == "error":
            lines.append(f"error {self.error_code}: {self.error_message}")
        elif self.status == "cancelled":
            lines.append(CANCELLED_CALL)
        elif self.status == "ok":
            lines.append(f"result: {_dump(self.data)}")
        if self.latency_ms is not None:
            lines.append(f"latency: {self.latency_ms:.0f} ms")
        return "\n".join(lines)


@dataclass
class Verification:
    done: bool
    reason: str = ""


@dataclass
class Note:
    """A warning, a fallback or a retry the user should see."""

    text: str


@dataclass
class Approval:
    """A held call waiting for a person (``approval_requested``), and how it was answered
    (``approval_resolved``)."""

    approval_id: str
    call_id: str
    tool_name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    channels: list[str] = field(default_factory=list)
    screenshot: str | None = None
    """Path relative to the daemon's data dir; the image comes from the API."""
    expires_at: float = 0.0
    decision: str | None = None
    """allow_once, allow_task, deny, timeout, cancelled or auto, once it is resolved."""
    note: str = ""
    by: str = ""
    shown_arguments: str = ""
    """The arguments as the daemon renders them (hidden characters spelled out)."""
    shown_reason: str = ""
    gone: bool = False
    """The daemon no longer holds it, and no answer was journaled (it restarted, or the
    task ended): nothing can answer it any more."""

    def __post_init__(self) -> None:
        # a journal written before the daemon sent its rendering: the same rule, here
        self.shown_arguments = self.shown_arguments or shown_arguments(self.arguments)
        self.shown_reason = self.shown_reason or visible(self.reason)

    @property
    def open(self) -> bool:
        return self.decision is None and not self.gone


@dataclass
class Budget:
    """The running task's budget use (``budget_used``); a None maximum is no limit."""

    cost_usd: float
    tokens: int
    max_cost_usd: float | None = None
    max_tokens: int | None = None

    @property
    def share(self) -> float:
        """The largest share of a limit used (0 without limits)."""
        shares = [0.0]
        if self.max_cost_usd:
            shares.append(self.cost_usd / self.max_cost_usd)
        if self.max_tokens:
            shares.append(self.tokens / self.max_tokens)
        return max(shares)


@dataclass
class Ending:
    status: str
    summary: str = ""
    steps: int = 0


Item = Thought | ToolCall | Verification | Note | Approval | Ending


@dataclass
class TaskRun:
    task_id: str
    task: str = ""
    started: float = 0.0
    first_seq: int = 0
    items: list[Item] = field(default_factory=list)
    step: int = 0
    ending: Ending | None = None
    question: str | None = None
    """The ``call_user`` question while the task waits for the user."""
    answered: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    """The task's tokens and cost over all its runs."""
    run: int = 1
    """Which run of the task this is (it runs again after an answer or an update)."""
    earlier: tuple[int, int, float] = (0, 0, 0.0)
    """Input and output tokens and cost of the runs before this one."""
    budget: Budget | None = None

    @property
    def running(self) -> bool:
        return self.ending is None

    @property
    def status(self) -> str:
        """In the API's words (:mod:`jarvis.task_words`): in_progress, then its ending's."""
        return "in_progress" if self.ending is None else self.ending.status

    def call(self, call_id: str) -> ToolCall | None:
        for item in reversed(self.items):
            if isinstance(item, ToolCall) and item.call_id == call_id:
                return item
        return None


ChangeKind = Literal[
    "none", "task", "item", "item_updated", "thought", "ending", "totals", "notice"
]


@dataclass
class Change:
    """What one line changed: ``kind``, the task, and the item index in its ``items``."""

    kind: ChangeKind
    task_id: str | None = None
    index: int = -1


NONE = Change("none")


def _dump(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)
