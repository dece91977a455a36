"""Typed events and the bus that carries them.

The core emits; the CLI, TUI, logs and channels subscribe. Nothing in the core
prints or knows about a UI. Handlers are called synchronously in emit order; a
handler that raises is logged and does not stop the others or the emitter.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field

from jarvis.text_display import shown_arguments, shown_call, visible

log = logging.getLogger(__name__)


class Event(BaseModel):
    """Base of all events."""

    kind: str = "event"
    ts: float = Field(default_factory=time.time)
    task_id: str | None = None


# --- tools -----------------------------------------------------------------
class ToolCallStarted(Event):
    kind: Literal["tool_call_started"] = "tool_call_started"
    call_id: str
    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def shown_call(self) -> str:
        """The call on one line as clients show it (:mod:`jarvis.text_display`)."""
        return shown_call(self.tool_name, self.arguments)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def shown_arguments(self) -> str:
        """The arguments as indented JSON, characters that do not show spelled out."""
        return shown_arguments(self.arguments)


class ToolCallStreaming(Event):
    """The model has begun writing a tool call (its arguments are still streaming)."""

    kind: Literal["tool_call_streaming"] = "tool_call_streaming"
    call_id: str
    tool_name: str


class ToolCallFinished(Event):
    kind: Literal["tool_call_finished"] = "tool_call_finished"
    call_id: str
    tool_name: str
    ok: bool
    error_code: int | None = None
    error_message: str | None = None
    latency_ms: float = 0.0
    data: Any = None
    cancelled: bool = False
    """Cut short by a cancel, a stop or the kill switch (no result): not an error."""


# --- model -----------------------------------------------------------------
class ModelTextDelta(Event):
    kind: Literal["model_text_delta"] = "model_text_delta"
    text: str


class ToolModeFallback(Event):
    """Auto tool mode switched to text mode for this run only."""

    kind: Literal["tool_mode_fallback"] = "tool_mode_fallback"
    reason: str


class ModelServer(Event):
    """The serving stack behind an OpenAI-compatible endpoint, as it names itself."""

    kind: Literal["model_server"] = "model_server"
    server: str


class ServedCallsRead(Event):
    """A served model's calls were read from its text (``where``: the answer, or the
    reasoning when the answer had none), not from the server's ``tool_calls``."""

    kind: Literal["served_calls_read"] = "served_calls_read"
    where: Literal["text", "reasoning"]
    calls: int


class ModelRetry(Event):
    kind: Literal["model_retry"] = "model_retry"
    attempt: int
    reason: str
    delay_s: float


# --- loop ------------------------------------------------------------------
class TaskStarted(Event):
    kind: Literal["task_started"] = "task_started"
    task: str


class StepStarted(Event):
    kind: Literal["step_started"] = "step_started"
    step: int


class StepFinished(Event):
    kind: Literal["step_finished"] = "step_finished"
    step: int
    timings_ms: dict[str, float] = Field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cost_usd: float = 0.0
    screenshot: str | None = None
    """The step's screenshot, relative to the data dir (in the model's pixel space)."""


class VerificationFinished(Event):
    kind: Literal["verification_finished"] = "verification_finished"
    done: bool
    reason: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cost_usd: float = 0.0
    """Of the verification call alone (the next step's totals include it)."""
    tree_tokens: int = 0
    """The accessibility tree's part of the verification's input (``step.json``'s
    ``tree_tokens`` counts the steps' trees only)."""


class AgentWarning(Event):
    """Something the user should see (stall warning, fallback, recoverable error)."""

    kind: Literal["warning"] = "warning"
    message: str


TaskStatus = Literal["finished", "failed", "needs_user", "cancelled"]


class TaskFinished(Event):
    kind: Literal["task_finished"] = "task_finished"
    status: TaskStatus
    summary: str = ""
    steps: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cost_usd: float = 0.0
    """The whole task: steps, verification and skill calls."""
    stopped_by: str | None = None
    """Who cancelled it (hotkey, tui, web, cli, corner, signal...), for a cancelled task."""


# --- safety ----------------------------------------------------------------
class ApprovalRequested(Event):
    """A risky call waits for a person: answer with ``POST /api/approvals/{approval_id}``."""

    kind: Literal["approval_requested"] = "approval_requested"
    approval_id: str
    call_id: str
    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    reason: str
    channels: list[str] = Field(default_factory=list)
    screenshot: str | None = None
    """Path of the screen at the moment of the request, relative to the data dir."""
    expires_at: float
    """Unix time at which an unanswered request counts as denied."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def shown_call(self) -> str:
        """The held call on one line as clients show it (:mod:`jarvis.text_display`)."""
        return shown_call(self.tool_name, self.arguments)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def shown_arguments(self) -> str:
        """The arguments as indented JSON, characters that do not show spelled out."""
        return shown_arguments(self.arguments)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def shown_reason(self) -> str:
        """Why the call is held, characters that do not show spelled out."""
        return visible(self.reason)


class ApprovalResolved(Event):
    kind: Literal["approval_resolved"] = "approval_resolved"
    approval_id: str
    decision: Literal["allow_once", "allow_task", "deny", "timeout", "cancelled", "auto"]
    note: str = ""
    by: str = ""


class TakeoverStarted(Event):
    """A person took the screen: the agent sends no input until ``takeover_ended``."""

    kind: Literal["takeover_started"] = "takeover_started"
    by: str


class TakeoverEnded(Event):
    """The person handed the screen back (or it ended by itself: ``reason``)."""

    kind: Literal["takeover_ended"] = "takeover_ended"
    by: str
    note: str = ""
    reason: Literal["handed_back", "idle", "closed", "taken_over", "shutdown"] = "handed_back"
    """closed: the page that held the screen was closed (it handed back as it went);
    taken_over: another face took the hold over, having said so (``ended_by``)."""
    ended_by: str | None = None
    """Who ended the hold, when not the person who held it."""
    held_s: float = 0.0


class BudgetUsed(Event):
    """After each step of a task with a budget: how much of it is spent."""

    kind: Literal["budget_used"] = "budget_used"
    cost_usd: float
    tokens: int
    max_cost_usd: float | None = None
    max_tokens: int | None = None


Handler = Callable[[Event], None]


class EventBus:
    """Fan-out of events to subscribers; no global instance."""

    def __init__(self) -> None:
        self._handlers: list[tuple[type[Event], Handler]] = []

    def subscribe(self, handler: Handler, kind: type[Event] = Event) -> Callable[[], None]:
        """Call ``handler`` for every event of type ``kind``; returns an unsubscribe function."""
        entry = (kind, handler)
        self._handlers.append(entry)

        def unsubscribe() -> None:
            if entry in self._handlers:
                self._handlers.remove(entry)

        return unsubscribe

    def emit(self, event: Event) -> None:
        for kind, handler in list(self._handlers):
            if not isinstance(event, kind):
                continue
            try:
                handler(event)
            except Exception:  # a broken subscriber must not break the agent
                log.exception("event handler %r failed on %s", handler, event.kind)


class EventRecorder:
    """Collects events; handy for tests and for reports."""

    def __init__(self, bus: EventBus) -> None:
        self.events: list[Event] = []
        bus.subscribe(self.events.append)

    def of(self, kind: type[Event]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


# --- gateway ---------------------------------------------------------------
class MalformedEntry(Event):
    """A section of a gateway file (inbox, todos) could not be read; it stays in the file."""

    kind: Literal["malformed_entry"] = "malformed_entry"
    path: str
    line: int
    reason: str
    excerpt: str = ""


class RoutingFailed(Event):
    """A message could not be routed (the model refused the router's key, or a bug): it
    waits in the inbox and is tried again in ``retry_in_s`` seconds."""

    kind: Literal["routing_failed"] = "routing_failed"
    message_id: str
    channel: str
    error: str
    retry_in_s: float


class ReplyReady(Event):
    """A task from a channel ended (or asks something): the channel answers whoever asked.

    ``task_id`` is the todo id; ``status`` its status in todos.md (completed, failed,
    needs_user, cancelled); ``text`` the summary, or the question when it needs the user.
    """

    kind: Literal["reply_ready"] = "reply_ready"
    channel: str
    reply_to: str | None = None
    message_ids: list[str] = Field(default_factory=list)
    status: str
    text: str = ""
