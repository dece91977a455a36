"""A person's takeover of a fleet worker's screen (shared/DESIGN.md sections 10 and 11).

At the coordinator, :class:`FleetHolds` keeps who holds which worker's screen, sends the
worker ``takeover`` and ``handback`` on its control stream, issues the ticket that opens
the full-access view of that worker's display (when it is reachable from here,
:mod:`jarvis.fleet.screens`) and keeps the takeover's idle clock: the person's input
passes through the coordinator's relay, not the worker. The worker (:func:`obey`) pauses
its agent with its own :class:`~jarvis.safety.takeover.ScreenHold`, as a local takeover
does: no input from the next tool boundary on, ``takeover_started`` and ``takeover_ended``
in the journal (sent here as its other events are), and the note for the model at its
next step.

Side: both (the coordinator and the workers).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jarvis.fleet import control
from jarvis.fleet.connection import reason
from jarvis.safety.takeover import (
    MAX_NOTE,
    Holder,
    IdleClock,
    ScreenHold,
    TakeoverRefused,
    refuse_take,
)

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from jarvis.agent.agent import Agent

log = logging.getLogger(__name__)
TAKEN_OVER = "taken_over"
"""The reason a ``takeover`` carries when it takes a screen another face holds."""


# -- the worker's side --
def _hold(agent: Agent | None) -> ScreenHold | None:
    return agent.screen_hold if agent is not None else None


def held_for(agent: Agent | None, task_id: str) -> bool:
    """Whether a person holds this worker's screen for ``task_id`` (its hand back is
    obeyed even after the task ended)."""
    hold = _hold(agent)
    return hold is not None and hold.holder is not None and hold.holder.task_id == task_id


def obey(agent: Agent | None, message: control.Control, running: set[asyncio.Task[Any]]) -> None:
    """A ``takeover`` or ``handback`` for the task this worker runs (checked by the
    caller). A takeover ends the agent's typing in a thread: it runs as a task kept in
    ``running``."""
    hold = _hold(agent)
    if hold is None:
        log.warning(
            "%s of task %s ignored: this agent has no screen hold", message.kind, message.task
        )
        return
    if message.kind == "takeover":
        task = asyncio.create_task(_take(hold, message))
        running.add(task)
        task.add_done_callback(running.discard)
        return
    try:
        hold.hand_back(message.note, message.reason or "handed_back")
    except TakeoverRefused as exc:
        log.warning("hand back of task %s ignored: %s", message.task, exc.detail)


async def _take(hold: ScreenHold, message: control.Control) -> None:
    by = message.by or "api"
    try:
        held = hold.holder
        if message.reason == TAKEN_OVER and held is not None and held.by != by:
            hold.pass_to(by, idle_clock=False)  # the other face's hold ends, this one's begins
            return
        await hold.take(by, message.task, idle_clock=False)
    except TakeoverRefused as exc:
        log.warning("takeover of task %s ignored: %s", message.task, exc.detail)


# -- the coordinator's side --
@dataclass(kw_only=True)
class FleetHolder(Holder):
    """A person holding one worker's screen."""

    worker: str
    task_id: str
    ticket: str = field(default_factory=lambda: secrets.token_urlsafe(24), repr=False)

    def status(self) -> dict[str, object]:
        return {
            "held": True,
            "by": self.by,
            "since": self.since,
            "task_id": self.task_id,
            "screen": f"worker/{self.worker}",
        }


class FleetHolds:
    """Who holds which worker's screen, at the coordinator (see the module doc)."""

    def __init__(
        self, redis: Redis, idle_end_s: float = 300.0, refused: frozenset[str] = frozenset()
    ) -> None:
        self.redis = redis
        self.idle_end_s = idle_end_s
        self.refused = refused
        self.holders: dict[str, FleetHolder] = {}
        """Per worker name."""
        self.on_end: list[Any] = []
        """Called with the worker's name when its takeover ends (closes the person's view)."""
        self._idle = IdleClock(idle_end_s, self.holders.get, self._idle_end)

    def of_task(self, task_id: str | None) -> FleetHolder | None:
        for holder in self.holders.values():
            if task_id is None or holder.task_id == task_id:
                return holder
        return None

    async def take(
        self, worker: str, by: str, task_id: str, take_over: bool = False
    ) -> FleetHolder:
        """Send ``worker`` a takeover of ``task_id``; it pauses at the next tool boundary.
        ``take_over``: another face holds it and ``by`` said to take it over: the worker
        passes the hold on (:meth:`ScreenHold.pass_to`) and the old holder's view closes."""
        old = self.holders.get(worker)
        passed = old if take_over and old is not None and old.by != by else None
        refuse_take(self.refused, by, None if passed is not None else old)
        if passed is not None:
            task_id = passed.task_id
        holder = FleetHolder(worker=worker, by=by, task_id=task_id)
        why = TAKEN_OVER if passed is not None else ""
        await self._send(worker, control.Control("takeover", task_id, by=by, reason=why))
        if passed is not None:
            self._end(worker)  # the old holder's full-access view closes; its ticket is void
            log.info("takeover: %s took worker %s's screen from %s", by, worker, passed.by)
        self.holders[worker] = holder
        self._idle.start(worker)
        log.info("takeover: %s holds the screen of worker %s (task %s)", by, worker, task_id)
        return holder

    async def hand_back(
        self, task_id: str | None, note: str = "", why: str = "handed_back"
    ) -> FleetHolder:
        """Give ``task_id``'s worker (None: the one held) its screen back, with ``note``."""
        holder = self.of_task(task_id)
        if holder is None:
            raise TakeoverRefused("not_held", "nobody holds the screen")
        note = note.strip()[:MAX_NOTE]
        message = control.Control("handback", holder.task_id, by=holder.by, note=note, reason=why)
        await self._send(holder.worker, message)
        self._end(holder.worker)
        log.info("takeover: %s handed worker %s its screen back", holder.by, holder.worker)
        return holder

    def touched(self, worker: str) -> None:
        """The person sent input to ``worker``'s display (the idle clock starts again)."""
        holder = self.holders.get(worker)
        if holder is not None:
            holder.last_input = time.monotonic()

    def close(self) -> None:
        self._idle.close()

    async def _send(self, worker: str, message: control.Control) -> None:
        from redis.exceptions import RedisError

        try:
            await control.send(self.redis, worker, message)
        except (RedisError, OSError) as exc:
            raise TakeoverRefused(
                "unreachable", f"the {message.kind} did not reach worker {worker}: {reason(exc)}"
            ) from exc

    def _end(self, worker: str) -> None:
        self.holders.pop(worker, None)
        self._idle.stop(worker)
        for callback in list(self.on_end):
            callback(worker)

    def _idle_end(self, worker: str, holder: Holder, note: str) -> None:
        task = asyncio.get_running_loop().create_task(self._hand_back_idle(worker, note))
        task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)

    async def _hand_back_idle(self, worker: str, note: str) -> None:
        holder = self.holders.get(worker)
        if holder is None:
            return
        try:
            await self.hand_back(holder.task_id, note, "idle")
        except TakeoverRefused as exc:  # Redis away: try again at the next tick of the clock
            log.warning("takeover of worker %s did not end: %s", worker, exc.detail)
            if worker in self.holders and not self._idle.running(worker):
                self._idle.start(worker)
