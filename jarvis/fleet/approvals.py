"""Approvals of fleet tasks: a worker's held call waits in the coordinator's store.

A worker's gate sends its :class:`ApprovalRequested` (and the screenshot, as an artefact)
on ``jarvis:events``; :class:`FleetApprovals` opens it in the coordinator's
:class:`~jarvis.safety.approvals.ApprovalStore`, so the API, the web panel and the TUI
list and answer it as a local one. The person's answer goes to the worker that asked on
its control stream (``jarvis:ctl:WORKER``), where its gate is waiting. A worker holds no
token and answers nothing itself: its store takes answers only from that stream.

The worker's own :class:`ApprovalResolved` events come back too: one that carries the
coordinator's answer (``by`` fleet) is dropped, as the coordinator announced it already;
a timeout or a cancel on the worker closes the entry here.

Side: both (the coordinator and the workers).
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING

from jarvis.events import ApprovalRequested, ApprovalResolved, Event, TaskFinished
from jarvis.fleet import control
from jarvis.fleet.connection import reason
from jarvis.safety.rules import Held

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from jarvis.safety.approvals import ApprovalStore, Pending

log = logging.getLogger(__name__)
RELAYED_BY = "fleet"
"""How a worker's store names the answers it takes from its control stream."""


@dataclass
class _Held:
    entry: Pending
    worker: str
    waiter: asyncio.Task[None]


class FleetApprovals:
    def __init__(self, redis: Redis, store: ApprovalStore) -> None:
        self.redis = redis
        self.store = store
        self._held: dict[str, _Held] = {}

    def on_event(self, event: Event, worker: str) -> bool:
        """A worker's event, before the bus sees it; False when it must not be emitted."""
        if isinstance(event, ApprovalRequested):
            self._open(event, worker)
        elif isinstance(event, ApprovalResolved):
            if event.by == RELAYED_BY:
                return False  # the coordinator's own answer, announced here already
            return self._closed_there(event)
        elif isinstance(event, TaskFinished) and event.task_id:
            self.forget_task(event.task_id)
        return True

    def _open(self, request: ApprovalRequested, worker: str) -> None:
        if request.approval_id in self._held:
            return
        held = Held(f"fleet:{request.tool_name}", request.reason)
        entry = self.store.open(held, request, tuple(request.channels))
        waiter = asyncio.create_task(self._relay(entry, worker), name=f"approval-{entry.id}")
        self._held[entry.id] = _Held(entry, worker, waiter)
        log.info("approval %s of task %s (worker %s) waits", entry.id, entry.task_id, worker)

    async def _relay(self, entry: Pending, worker: str) -> None:
        """Wait for the person's answer, then send it to the worker that asked."""
        from redis.exceptions import RedisError

        decision, note = await entry.future
        message = control.Control(
            "approval", entry.task_id, approval_id=entry.id, decision=decision, note=note
        )
        try:
            await control.send(self.redis, worker, message)
        except (RedisError, OSError) as exc:
            said = reason(exc)
            log.warning("the answer to approval %s did not reach %s: %s", entry.id, worker, said)
        finally:
            self.store.close(entry)
            self._held.pop(entry.id, None)

    def _closed_there(self, event: ApprovalResolved) -> bool:
        """The worker's gate stopped waiting (timeout, cancel): close the entry here; False
        when a person's answer here came first (it counts, and was announced)."""
        held = self._held.pop(event.approval_id, None)
        if held is None:
            return True
        held.waiter.cancel()
        expired = self.store.expire(held.entry)
        self.store.close(held.entry)
        return expired

    def forget_task(self, task_id: str, why: str = "") -> None:
        """The task ended, or lost its worker (``why``): nothing of it waits any more; an
        entry still open is announced cancelled, so the panel and the TUI close it."""
        for approval_id, held in list(self._held.items()):
            if held.entry.task_id != task_id:
                continue
            held.waiter.cancel()
            if self.store.expire(held.entry):
                self.store.bus.emit(
                    ApprovalResolved(
                        task_id=task_id, approval_id=approval_id, decision="cancelled", note=why
                    )
                )
            self.store.close(held.entry)
            self._held.pop(approval_id, None)

    async def close(self) -> None:
        for held in list(self._held.values()):
            held.waiter.cancel()
            with suppress(asyncio.CancelledError):
                await held.waiter
            self.store.close(held.entry)
        self._held.clear()
