"""The queue protocol: claim, renew, complete, give back; two engines behind it.

A :class:`Claim` is one task held by one taker under a lease token. An engine's
``complete`` and ``give_back`` count only with the current token (fencing): a taker that
lost its lease (it stalled, the janitor gave the task to another) is refused.

:class:`MarkdownQueue` is the embedded default over ``todos.md`` (one process, one
desktop: the token is the process's own, the lease never expires);
:class:`jarvis.fleet.redis_queue.RedisQueue` is the fleet's.

Side: both (the coordinator and the workers).
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass, field
from typing import Protocol

from jarvis.gateway.todos import TodoList, TodoState

OUTCOME_STATUSES = ("completed", "failed", "needs_user", "cancelled")


@dataclass(frozen=True)
class Claim:
    """One task held under a lease."""

    task_id: str
    text: str
    token: str
    attempt: int = 1
    channels: tuple[str, ...] = ()
    entry: str = ""
    """The engine's handle of the delivery (a stream entry id; empty for markdown)."""
    extra: dict[str, str] = field(default_factory=dict)


class TaskQueue(Protocol):
    """What a worker needs from a queue, whichever engine carries it."""

    async def claim(self, wait_s: float = 0.0) -> Claim | None:
        """The next task, leased to the caller; None when there is none within ``wait_s``."""
        ...

    async def renew(self, claim: Claim) -> bool:
        """Extend the lease; False when it is lost (stop working on the task)."""
        ...

    async def complete(self, claim: Claim, status: str, summary: str) -> bool:
        """Record the outcome; False (and nothing recorded) for a stale token."""
        ...

    async def give_back(self, claim: Claim, note: str = "") -> bool:
        """Put the task back to be claimed again at once; False for a stale token."""
        ...


def check_status(status: str) -> str:
    if status not in OUTCOME_STATUSES:
        raise ValueError(f"an outcome is one of {', '.join(OUTCOME_STATUSES)}, not {status!r}")
    return status


class MarkdownQueue:
    """The embedded engine: ``todos.md`` is the queue (claim = mark in progress)."""

    def __init__(self, todos: TodoList) -> None:
        self.todos = todos
        self._held: dict[str, str] = {}

    async def claim(self, wait_s: float = 0.0) -> Claim | None:
        todo = await asyncio.to_thread(self.todos.next_pending)
        if todo is None:
            if wait_s:
                await asyncio.sleep(wait_s)
            return None
        try:
            started = await asyncio.to_thread(self.todos.mark_in_progress, todo.id)
        except (KeyError, TodoState):
            return None  # taken or changed meanwhile: the caller claims again
        token = secrets.token_hex(16)
        self._held[started.id] = token
        channels = (started.source,) if started.source else ()
        return Claim(started.id, started.description or started.title, token, channels=channels)

    async def renew(self, claim: Claim) -> bool:
        return self._held.get(claim.task_id) == claim.token

    async def complete(self, claim: Claim, status: str, summary: str) -> bool:
        check_status(status)
        if self._held.get(claim.task_id) != claim.token:
            return False
        await asyncio.to_thread(self.todos.finish, claim.task_id, status, summary)
        del self._held[claim.task_id]
        return True

    async def give_back(self, claim: Claim, note: str = "") -> bool:
        if self._held.get(claim.task_id) != claim.token:
            return False
        todo = await asyncio.to_thread(self.todos.get, claim.task_id)
        notes = [*todo.notes, note] if todo is not None and note else None
        fields: dict[str, object] = {"status": "pending"}
        if notes is not None:
            fields["notes"] = notes
        await asyncio.to_thread(lambda: self.todos.update(claim.task_id, **fields))
        del self._held[claim.task_id]
        return True
