"""Approvals: a held call waits until a person answers through the control API.

:class:`ApprovalGate` is the one hook the tool registry calls before it runs a
validated call. It asks :class:`~jarvis.safety.rules.RuleSet` whether the call is
held; a held call is

- run without asking when the task may run unattended (``jarvis run --yes``, or every
  channel of the task has ``channels.NAME.unattended``, formerly ``safety.unattended``),
  never for a task from email;
- refused at once when nobody can answer (no control API is serving approvals), except a
  ``call_user`` the model marked as risky, which then stops the task as a plain question;
- otherwise put in the :class:`ApprovalStore` with an :class:`ApprovalRequested` event
  (the call, the reason, a screenshot) and awaited: ``allow_once`` runs it,
  ``allow_task`` runs it and every later call the same rule holds in this task,
  ``deny`` (with a note) and no answer within ``safety.approval_timeout_s`` refuse it.

A refusal is a sentence; the registry returns it to the model as -32006.
Answers come only through :meth:`ApprovalStore.resolve`, which refuses any answer that
says it came by a channel that may not approve (email, a2a and mcp always; others whose
``channels.NAME.may_approve`` is false): a task from email can never be approved from email.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from jarvis.events import (
    AgentWarning,
    ApprovalRequested,
    ApprovalResolved,
    Event,
    EventBus,
    TaskFinished,
)
from jarvis.redaction import known_secrets, redact, redact_value
from jarvis.safety.channel_policy import ChannelSettings, fold_legacy
from jarvis.safety.rules import MODEL_MARKED, Held, RuleSet
from jarvis.safety.settings import NEVER_APPROVE, NEVER_UNATTENDED, SafetySettings

if TYPE_CHECKING:
    from jarvis.tools.context import ToolContext

log = logging.getLogger(__name__)

Decision = Literal["allow_once", "allow_task", "deny"]
DECISIONS: tuple[Decision, ...] = ("allow_once", "allow_task", "deny")
NEVER_APPROVE_VIA = NEVER_APPROVE
MAX_NOTE = 2000


class ApprovalError(ValueError):
    """An answer that cannot be taken: unknown id, bad decision, or a channel that may not
    approve. The message says which."""


@dataclass
class Pending:
    """One call waiting for a person."""

    id: str
    task_id: str
    channels: tuple[str, ...]
    held: Held
    request: ApprovalRequested
    future: asyncio.Future[tuple[Decision, str]]
    answered: bool = False

    def public(self) -> dict[str, Any]:
        """What a client sees in the list of pending approvals."""
        return self.request.model_dump(mode="json")


@dataclass
class ApprovalStore:
    """Pending approvals of one daemon (or one `jarvis run`), answered from any thread."""

    bus: EventBus
    attended: bool = False
    """True once something can answer (the control API serves the approvals route)."""
    refused_via: frozenset[str] = NEVER_APPROVE
    """Channels by which no answer is taken (email, a2a, mcp, and those whose
    ``channels.NAME.may_approve`` is false)."""
    _pending: dict[str, Pending] = field(default_factory=dict)
    _task_rules: dict[str, set[str]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.bus.subscribe(self._task_ended, TaskFinished)

    def _task_ended(self, event: Event) -> None:
        if event.task_id:
            self.forget_task(event.task_id)

    def pending(self) -> list[dict[str, Any]]:
        with self._lock:
            return [p.public() for p in self._pending.values() if not p.answered]

    def allowed_for_task(self, task_id: str, rule: str) -> bool:
        with self._lock:
            return rule in self._task_rules.get(task_id, set())

    def forget_task(self, task_id: str) -> None:
        """Drop a task's "allow for this task" answers (the task ended)."""
        with self._lock:
            self._task_rules.pop(task_id, None)

    def open(self, held: Held, request: ApprovalRequested, channels: tuple[str, ...]) -> Pending:
        future: asyncio.Future[tuple[Decision, str]] = asyncio.get_running_loop().create_future()
        entry = Pending(request.approval_id, request.task_id or "", channels, held, request, future)
        with self._lock:
            self._pending[entry.id] = entry
        return entry

    def expire(self, entry: Pending) -> bool:
        """Mark ``entry`` answered by its deadline (or a cancel); False when a person's
        answer came first (then the deadline still wins, and is not announced twice)."""
        with self._lock:
            if entry.answered:
                return False
            entry.answered = True
            return True

    def close(self, entry: Pending) -> None:
        with self._lock:
            self._pending.pop(entry.id, None)

    def resolve(self, approval_id: str, decision: str, note: str = "", via: str = "api") -> None:
        """Answer a pending approval. Raises :class:`ApprovalError` (and changes nothing)
        for an unknown or answered id, a decision not in :data:`DECISIONS`, or an answer
        that came by a channel that may not approve (email, a2a, mcp, and any whose
        ``channels.NAME.may_approve`` is false)."""
        if via in self.refused_via or via in NEVER_APPROVE:
            raise ApprovalError(f"approvals cannot be given by {via}; use the TUI or web panel")
        if decision not in DECISIONS:
            raise ApprovalError(f"decision must be one of {', '.join(DECISIONS)}, not {decision!r}")
        note = str(note)[:MAX_NOTE]
        with self._lock:
            entry = self._pending.get(approval_id)
            if entry is None or entry.answered:
                raise ApprovalError(f"no pending approval {approval_id!r}")
            entry.answered = True
            if decision == "allow_task":
                self._task_rules.setdefault(entry.task_id, set()).add(entry.held.rule)
        chosen = DECISIONS[DECISIONS.index(decision)]  # the checked value, typed
        loop = entry.future.get_loop()
        loop.call_soon_threadsafe(_settle, entry.future, (chosen, note))
        self.bus.emit(
            ApprovalResolved(
                task_id=entry.task_id, approval_id=approval_id, decision=chosen, note=note, by=via
            )
        )


def _settle(future: asyncio.Future[tuple[Decision, str]], value: tuple[Decision, str]) -> None:
    if not future.done():
        future.set_result(value)


class ApprovalGate:
    """The registry's hook: ``await gate.check(name, arguments, context, call_id)`` returns
    None when the call may run, else why not."""

    def __init__(
        self,
        settings: SafetySettings,
        store: ApprovalStore,
        *,
        unattended: bool = False,
        channels: Mapping[str, ChannelSettings] | None = None,
        clock: Any = time.time,
    ) -> None:
        self.settings = settings
        self.rules = RuleSet(settings.approve)
        blocks = fold_legacy(
            channels or {},
            approve_per_channel=settings.approve_per_channel,
            unattended=settings.unattended,
        )
        self.channel_rules = {
            name: RuleSet(block.approve)
            for name, block in blocks.items()
            if block.approve != block.approve.__class__()
        }
        """More rules for the tasks of some channels (they narrow, never widen)."""
        self.unattended_channels = frozenset(n for n, b in blocks.items() if b.unattended)
        """Channels whose held calls run without asking (``channels.NAME.unattended``)."""
        self.store = store
        self.unattended = unattended
        """``jarvis run --yes``: held calls of tasks not from email run without asking."""
        self._clock = clock

    def runs_unattended(self, channels: tuple[str, ...]) -> bool:
        """Whether held calls of a task from ``channels`` run without a person."""
        if set(channels) & NEVER_UNATTENDED:
            return False
        if self.unattended:
            return True
        return bool(channels) and all(c in self.unattended_channels for c in channels)

    async def check(
        self, name: str, arguments: Any, context: ToolContext, call_id: str | None
    ) -> str | None:
        channels = tuple(context.channels)
        held = self.held(name, arguments, channels)
        if held is None:
            return None
        call_id = call_id or ""
        if self.store.allowed_for_task(context.task_id, held.rule):
            refusal = None
        elif self.runs_unattended(channels):
            why = "--yes" if self.unattended else self._unattended_key(channels)
            said = f"allowed without asking ({why}): {held.reason}"
            log.info("task %s: %s", context.task_id, said)
            secrets = known_secrets(context.settings)
            context.bus.emit(AgentWarning(task_id=context.task_id, message=redact(said, secrets)))
            refusal = None
        elif not self.store.attended:
            by_mail = sorted(set(channels) & NEVER_APPROVE_VIA)
            if by_mail:  # and a question by mail would be an approval by mail
                return (
                    f"not run: {held.reason}, and no one can approve it here; a task from "
                    f"{by_mail[0]} is never approved by {by_mail[0]}. Do it another way, or "
                    "finish with what can be done without it."
                )
            if held.rule == MODEL_MARKED:
                return None  # asked as a plain question: the task waits for the user
            return (
                f"not run: {held.reason}, and no one can approve it here. Ask the user with "
                "`call_user`, or do it another way. (`jarvis run --yes` allows such calls.)"
            )
        else:
            refusal = await self._ask(held, name, arguments, context, call_id, channels)
        if refusal is None:
            context.approved.add(call_id)
        return refusal

    def _unattended_key(self, channels: tuple[str, ...]) -> str:
        """The settings key that lets these channels' held calls run (the old one, while
        settings still use it)."""
        if all(c in self.settings.unattended for c in channels):
            return f"safety.unattended: {', '.join(channels)}"
        return ", ".join(f"channels.{c}.unattended" for c in channels)

    def held(self, name: str, arguments: Any, channels: tuple[str, ...]) -> Held | None:
        """Whether the call waits: the rules of ``safety.approve``, then those of each of
        the task's channels in ``channels.NAME.approve``."""
        held = self.rules.held(name, arguments)
        if held is not None:
            return held
        for channel in channels:
            rules = self.channel_rules.get(channel)
            found = rules.held(name, arguments) if rules is not None else None
            if found is not None:
                return Held(f"{channel}:{found.rule}", f"{found.reason} for tasks from {channel}")
        return None

    async def ask_person(
        self, held: Held, name: str, arguments: Any, context: ToolContext, call_id: str
    ) -> str | None:
        """Ask a person about something that is not a tool call (OpenAI's safety checks):
        None when they allowed it, else why not. Never unattended and never remembered for
        the task: each one is asked, and refused at once when nobody can answer."""
        if not self.store.attended:
            return f"not run: {held.reason}, and no one can approve it here"
        return await self._ask(held, name, arguments, context, call_id, tuple(context.channels))

    async def _ask(
        self,
        held: Held,
        name: str,
        arguments: Any,
        context: ToolContext,
        call_id: str,
        channels: tuple[str, ...],
    ) -> str | None:
        approval_id = f"a-{uuid.uuid4().hex[:12]}"
        timeout = self.settings.approval_timeout_s
        secrets = known_secrets(context.settings)
        request = ApprovalRequested(
            task_id=context.task_id,
            approval_id=approval_id,
            call_id=call_id,
            tool_name=name,
            arguments=_shown(arguments, secrets),
            reason=redact(held.reason, secrets),
            channels=list(channels),
            screenshot=await _screenshot(context, approval_id),
            expires_at=self._clock() + timeout,
        )
        entry = self.store.open(held, request, channels)
        context.bus.emit(request)
        try:
            decision, note = await asyncio.wait_for(asyncio.shield(entry.future), timeout)
        except TimeoutError:
            if self._expire(entry, "timeout", context):
                return f"not run: {held.reason}, and no one approved it within {timeout:g}s"
            decision, note = await entry.future  # a person answered at the deadline: theirs
        except asyncio.CancelledError:
            self._expire(entry, "cancelled", context)
            raise
        finally:
            self.store.close(entry)
        if decision == "deny":
            said = f": {note}" if note.strip() else ""
            return f"not run: the user denied it ({held.reason}){said}"
        return None

    def _expire(
        self, entry: Pending, decision: Literal["timeout", "cancelled"], ctx: ToolContext
    ) -> bool:
        """Close ``entry`` as ``decision``; False when a person's answer came first (it is
        on its way to the future, and counts)."""
        if not self.store.expire(entry):
            return False
        ctx.bus.emit(ApprovalResolved(task_id=ctx.task_id, approval_id=entry.id, decision=decision))
        return True


def _shown(arguments: Any, secrets: set[str]) -> dict[str, Any]:
    """The exact call for the person, with known secret values replaced."""
    clean = redact_value(arguments, secrets)
    return clean if isinstance(clean, dict) else {"_raw": redact(repr(arguments)[:500], secrets)}


async def _screenshot(context: ToolContext, approval_id: str) -> str | None:
    """The screen as the person should see it with the request; None if it cannot be taken."""
    screen = context.screen
    capture = getattr(screen, "capture", None)
    if capture is None:
        return None
    try:
        observation = await asyncio.to_thread(capture)
        suffix = ".png" if observation.media_type == "image/png" else ".jpg"
        relative = Path("approvals") / f"{approval_id}{suffix}"
        path = context.data_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(path.write_bytes, observation.data)
    except Exception as exc:  # the request goes out without a picture rather than not at all
        log.warning("approval %s: no screenshot: %s", approval_id, exc)
        return None
    return relative.as_posix()
