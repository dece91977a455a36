"""The message router: does a new message continue an open task, or start a new one?

The model decides with ``prompts/merge.md`` and answers with one JSON object::

    {"action": "merge", "task_id": "T003", "mode": "update" | "subtask", "text": "..."}
    {"action": "new", "title": "...", "priority": "high" | "normal" | "low" | <int>}

When the model cannot help at the moment (no provider, a timeout, an error that trying
again may cure, an answer that is not such an object, a merge into a task that is not open)
the message becomes a new task, with a warning. A failure a person must fix (the provider
refuses the key, any other error that trying again does not cure) or a bug raises
:class:`RoutingError`: the gateway puts the message back into the inbox and shows the error,
rather than hiding it in a new task. Routing is idempotent: a message already named by a task
is not routed again (recovery after a crash re-routes only what was not routed). A message
addressed to a task (``answers:T003`` in its header: an answer sent through the API) is
merged into that task without asking the model, if it is still open. A message marked
``new_task`` (an A2A message: every one is its own task), and every message of another
agent's channel (a2a, mcp), becomes a new task of its own without asking.

The model is shown at most ``candidates`` open tasks (:mod:`jarvis.gateway.candidates`:
the message's thread, the most similar, the newest), and the prompt says when the list was
cut. It can merge only into a task it was shown: any other id makes the message a new task.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from jarvis import prompts
from jarvis.events import AgentWarning, EventBus
from jarvis.gateway.candidates import Candidates, Embed, Similarity, choose, everything
from jarvis.gateway.markdown import clean_line, format_priority, format_timestamp, parse_priority
from jarvis.gateway.message_format import Message
from jarvis.gateway.todos import Todo, TodoList, TodoState
from jarvis.llm.base import Provider, ProviderAuthError, ProviderError, complete
from jarvis.llm.types import LLMRequest
from jarvis.llm.types import Message as ChatMessage

log = logging.getLogger(__name__)

ANSWERS = "answers"
NEW_TASK = "new_task"
"""A message whose meta has this key becomes its own task, with no merge decision (A2A)."""
"""Header key of a message addressed to one task (``answers:T003``): it is merged into that
task without asking the model (an answer to a ``call_user`` question, from the API)."""
OWN_TASK_CHANNELS = frozenset({"a2a", "mcp", "schedule"})
"""Channels of other agents, and the schedules: each of their messages is a task of its own
(never merged into a task of another sender, which runs under another channel's policy),
made without asking the model; an answer to one of their tasks still goes to it
(``answers:``)."""
TITLE_MAX = 80
EXCERPT_MAX = 300


class RoutingError(RuntimeError):
    """A message could not be routed and must wait; the message says why in one line."""


class Backoff:
    """Messages whose routing failed, each held back for a wait that doubles from
    ``first_s`` up to ``max_s`` with every failure (a routed message is forgotten)."""

    def __init__(
        self, first_s: float, max_s: float = 300.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.first_s = first_s
        self.max_s = max_s
        self._clock = clock
        self._held: dict[str, tuple[float, float]] = {}

    def failed(self, message_id: str) -> float:
        """Hold ``message_id`` back; returns for how long."""
        last = self._held.get(message_id, (0.0, 0.0))[1]
        wait = min(self.max_s, last * 2 if last else self.first_s)
        self._held[message_id] = (self._clock() + wait, wait)
        return wait

    def routed(self, message_id: str) -> None:
        self._held.pop(message_id, None)

    def held(self) -> set[str]:
        """The messages still waiting out their backoff."""
        now = self._clock()
        return {mid for mid, (until, _) in self._held.items() if until > now}


def failure_text(exc: Exception) -> tuple[str, bool]:
    """One line on why routing failed, and whether it is a bug (not a provider's answer)."""
    if isinstance(exc, RoutingError | ProviderError):
        return str(exc), False
    return f"routing failed ({type(exc).__name__}: {exc})", True


class MergeDecision(BaseModel):
    action: Literal["merge"]
    task_id: str
    mode: Literal["update", "subtask"] = "update"
    text: str = ""


class NewDecision(BaseModel):
    action: Literal["new"]
    title: str = ""
    priority: int | str | None = None


Decision = Annotated[MergeDecision | NewDecision, Field(discriminator="action")]
_DECISION: TypeAdapter[MergeDecision | NewDecision] = TypeAdapter(Decision)


@dataclass
class Routed:
    """Where a message went. ``reason`` says why when the model's word was not followed."""

    todo: Todo
    action: Literal["new", "update", "subtask", "existing"]
    decision: MergeDecision | NewDecision | None = None
    fallback: str | None = None


def parse_decision(text: str) -> MergeDecision | NewDecision:
    """The first JSON object with an ``action`` in the model's answer (fences and prose
    around it are ignored). Raises ValueError when there is none or it does not fit."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and "action" in value:
            try:
                return _DECISION.validate_python(value)
            except ValidationError as exc:
                raise ValueError(
                    f"the routing answer does not fit: {exc.errors()[0]['msg']}"
                ) from exc
    raise ValueError("no JSON object with an action in the routing answer")


def derive_title(text: str) -> str:
    """A task title from a message: its first line, shortened."""
    first = next((line for line in text.split("\n") if line.strip()), "message")
    title = clean_line(first)
    return title if len(title) <= TITLE_MAX else title[: TITLE_MAX - 1].rstrip() + "…"


def describe_tasks(tasks: list[Todo]) -> str:
    """One line a task (its priority only when not normal), then what its description
    adds to the title, cut, and the question it asked the user."""
    if not tasks:
        return "(none)"
    lines = []
    for task in tasks:
        priority = f", priority {format_priority(task.priority)}" if task.priority else ""
        lines.append(
            f"- {task.id} ({task.status}{priority}, from {task.source or 'unknown'}): {task.title}"
        )
        excerpt = clean_line(_after_title(task))
        if excerpt:
            cut = excerpt if len(excerpt) <= EXCERPT_MAX else excerpt[:EXCERPT_MAX] + "…"
            lines.append(f"  {cut}")
        if task.status == "needs_user" and task.summary:
            lines.append(f"  asked the user: {clean_line(task.summary)}")
    return "\n".join(lines)


def _after_title(task: Todo) -> str:
    """The description without its first line when that line is the title (as for a task
    made from a message whose first line became its title)."""
    first, _, rest = task.description.partition("\n")
    return rest if clean_line(first) == task.title else task.description


def _same_task(a: str, b: str) -> bool:
    a, b = a.strip().upper(), b.strip().upper()
    if a == b:
        return True
    numbers = re.fullmatch(r"T(\d+)", a), re.fullmatch(r"T(\d+)", b)
    return bool(numbers[0] and numbers[1] and int(numbers[0][1]) == int(numbers[1][1]))


def _not_offered(task_id: str, offered: Candidates) -> str:
    """Why a merge into ``task_id`` (a task the model was not shown) is not followed."""
    if any(_same_task(open_id, task_id) for open_id in offered.open_ids):
        return (
            f"the model named {task_id}, an open task it was not shown "
            f"({len(offered.shown)} of {offered.total:,} were)"
        )
    return f"the model named {task_id}, which is not an open task"


class MessageRouter:
    """Turns each message into a task on the todo list, asking the model where it fits."""

    def __init__(
        self,
        todos: TodoList,
        provider: Provider | None,
        *,
        timeout_s: float = 60.0,
        max_tokens: int = 400,
        bus: EventBus | None = None,
        candidates: int = 20,
        embed: Embed | None = None,
    ) -> None:
        """``candidates``: the most open tasks shown to the model for one message;
        ``embed``: the embedding model that finds the most similar ones (None: none)."""
        if candidates < 1:
            raise ValueError(f"the router shows at least one task, not {candidates}")
        self.todos = todos
        self.provider = provider
        self.timeout_s = timeout_s
        self.max_tokens = max_tokens
        self.bus = bus
        self.candidates = candidates
        self.similarity = Similarity(embed)

    async def route(self, message: Message) -> Routed:
        """Put ``message`` on the todo list (merged or new) and say where it went."""
        existing = await asyncio.to_thread(self.todos.find_by_message, message.id)
        if existing is not None:
            return Routed(existing, "existing")
        if message.meta.get(ANSWERS):
            answered = await asyncio.to_thread(self._answer, message, message.meta[ANSWERS])
            if answered is not None:
                return answered
        if message.meta.get(NEW_TASK) or message.channel in OWN_TASK_CHANNELS:
            todo = await asyncio.to_thread(self._new_task, message, NewDecision(action="new"))
            return Routed(todo, "new")
        open_tasks = await asyncio.to_thread(self.todos.open_tasks)
        offered = await asyncio.to_thread(self.offer, message, open_tasks)
        decision, fallback = await self.decide(message, offered)
        return await asyncio.to_thread(self._apply, message, decision, offered, fallback)

    def offer(self, message: Message, open_tasks: list[Todo]) -> Candidates:
        """The open tasks to show the model for ``message`` (blocking: it may embed)."""
        if len(open_tasks) <= self.candidates:
            return everything(open_tasks)
        return choose(
            message,
            open_tasks,
            self.candidates,
            answers=message.meta.get(ANSWERS),
            similarity=self.similarity.scores(message, open_tasks),
        )

    def build_request(self, message: Message, offered: Candidates) -> LLMRequest:
        cut = ""
        if offered.cut:
            cut = prompts.render("merge_cut", shown=len(offered.shown), total=f"{offered.total:,}")
        prompt = prompts.render(
            "merge",
            cut=cut,
            tasks=describe_tasks(offered.shown),
            sender=message.sender,
            channel=message.channel,
            received=format_timestamp(message.timestamp),
            text=message.text,
        )
        return LLMRequest(
            system=prompts.render_text("merge_system"),
            messages=[ChatMessage.user(prompt)],
            max_tokens=self.max_tokens,
            temperature=None,
            tool_mode="native",
            cache=False,
        )

    async def decide(
        self, message: Message, offered: Candidates
    ) -> tuple[MergeDecision | NewDecision, str | None]:
        """The model's decision, or a new-task decision and the reason for falling back."""
        if self.provider is None:
            return self._fallback(message, "no model configured")
        request = self.build_request(message, offered)
        try:
            async with asyncio.timeout(self.timeout_s):
                response = await complete(self.provider, request)
        except TimeoutError:
            return self._fallback(message, f"the model did not answer within {self.timeout_s:g}s")
        except ProviderAuthError as exc:
            raise RoutingError(f"the model refused the router: {exc}") from exc
        except ProviderError as exc:
            if not exc.retryable:
                raise RoutingError(f"the model call failed: {exc}") from exc
            log.warning("routing %s without the model: %s", message.id, exc)
            return self._fallback(message, f"the model call failed: {exc}")
        try:
            return parse_decision(response.text), None
        except ValueError as exc:
            log.warning("routing answer for %s unusable (%s): %r", message.id, exc, response.text)
            return self._fallback(message, str(exc))

    def _answer(self, message: Message, todo_id: str) -> Routed | None:
        """A message addressed to a task (an answer to its question): merged into it, with
        no model call; None when that task cannot take it (then it is routed as usual)."""
        try:
            todo = self.todos.append_update(todo_id, message.text, message.id)
        except (KeyError, TodoState) as exc:
            log.warning("message %s answers %s, which cannot take it: %s", message.id, todo_id, exc)
            return None
        return Routed(todo, "update")

    def _fallback(self, message: Message, reason: str) -> tuple[NewDecision, str]:
        if self.bus is not None:
            self.bus.emit(
                AgentWarning(message=f"message {message.id} becomes a new task: {reason}")
            )
        return NewDecision(action="new"), reason

    def _apply(
        self,
        message: Message,
        decision: MergeDecision | NewDecision,
        offered: Candidates,
        fallback: str | None,
    ) -> Routed:
        if isinstance(decision, MergeDecision):
            target = next((t for t in offered.shown if _same_task(t.id, decision.task_id)), None)
            if target is None:
                fallback = _not_offered(decision.task_id, offered)
                log.warning("message %s: %s; making a new task", message.id, fallback)
            elif decision.mode == "update":
                try:
                    todo = self.todos.append_update(target.id, message.text, message.id)
                    return Routed(todo, "update", decision)
                except (KeyError, TodoState) as exc:
                    fallback = f"{target.id} cannot take the update any more: {exc}"
                    log.warning("message %s: %s; making a new task", message.id, fallback)
            else:
                todo = self.todos.add(
                    derive_title(decision.text or message.text),
                    description=message.text,
                    source=message.channel,
                    message_ids=[message.id],
                    priority=target.priority,
                    reply_to=message.reply_to,
                    parent=target.id,
                )
                return Routed(todo, "subtask", decision)
        return Routed(self._new_task(message, decision), "new", decision, fallback)

    def _new_task(self, message: Message, decision: MergeDecision | NewDecision) -> Todo:
        """A new task; the sender's own priority wins over the model's guess."""
        title = derive_title(message.text)
        priority = message.priority
        if isinstance(decision, NewDecision):
            title = derive_title(decision.title) if decision.title.strip() else title
            if priority is None and decision.priority is not None:
                try:
                    priority = parse_priority(decision.priority)
                except ValueError:
                    log.info("ignoring the model's priority %r", decision.priority)
        return self.todos.add(
            title,
            description=message.text,
            source=message.channel,
            message_ids=[message.id],
            priority=priority,
            reply_to=message.reply_to,
        )
