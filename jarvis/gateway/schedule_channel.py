"""The ``schedule`` channel: the daemon's clock turns due schedules into inbox messages.

Started with the other channels by ``jarvis serve`` (in a fleet, by the coordinator: its
workers run no gateway). Every minute it reads ``DATA/schedules.md``
(:mod:`jarvis.gateway.schedule_book`) and asks :class:`~jarvis.gateway.schedule_clock.Scheduler`
which runs are due; each becomes an inbox message ``via:schedule`` from the schedule's id,
marked ``new_task`` (a task of its own, never merged into an open one), run under the
``channels.schedule`` policy with approvals as for any task. Its id is the run's
(:attr:`~jarvis.gateway.schedule_clock.Fire.message_id`), so a crash between the message
and the fire time's write does not make a second task. When the task ends (or asks), its
answer goes where the schedule's ``answer_to`` says (:mod:`jarvis.gateway.schedule_answers`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from jarvis.events import AgentWarning, EventBus, ReplyReady
from jarvis.gateway.router import NEW_TASK
from jarvis.gateway.schedule_answers import deliver_answer
from jarvis.gateway.schedule_book import ScheduleBook
from jarvis.gateway.schedule_clock import Clock, Fire, Scheduler
from jarvis.gateway.schedule_rules import utc_now

if TYPE_CHECKING:
    from jarvis.config import Settings
    from jarvis.gateway.channels.base import ChannelHost
    from jarvis.gateway.message_format import Message

log = logging.getLogger(__name__)

CHANNEL = "schedule"
TICK_S = 60.0
"""The longest wait between two looks at the book (runs are whole minutes)."""
SCHEDULE_KEY, RUN_KEY = "schedule", "run"
"""Meta keys of a scheduled message: the schedule's id and the run's time (UTC)."""


class ScheduleChannel:
    """See the module doc."""

    name = CHANNEL

    def __init__(self, settings: Settings, bus: EventBus, *, clock: Clock = utc_now) -> None:
        self.settings = settings
        self.bus = bus
        self.clock = clock
        self.book = ScheduleBook(settings.data_dir)
        self.scheduler: Scheduler | None = None
        self._host: ChannelHost | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self, host: ChannelHost) -> None:
        self._host = host
        self.scheduler = Scheduler(self.book, clock=self.clock, bus=self.bus)
        self._task = asyncio.create_task(self._forever(), name="schedules")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _forever(self) -> None:
        while True:
            try:
                await self.fire_due()
            except Exception:  # the boundary: a bad tick must not end the schedules
                log.exception("schedules: the look at %s failed; trying again", self.book.path)
            await asyncio.sleep(self._wait_s())

    def _wait_s(self) -> float:
        """Until just after the next whole minute (at most :data:`TICK_S`)."""
        now = self.clock()
        return min(TICK_S, 60.0 - now.second - now.microsecond / 1e6 + 0.5)

    async def fire_due(self) -> list[Message]:
        """Put every due run into the inbox; the messages made."""
        assert self.scheduler is not None and self._host is not None
        fires = await asyncio.to_thread(self.scheduler.tick)
        made = []
        for fire in fires:
            message = await self._submit(fire)
            if message is not None:
                made.append(message)
        await asyncio.to_thread(self.scheduler.commit)
        return made

    async def _submit(self, fire: Fire) -> Message | None:
        assert self._host is not None
        schedule = fire.schedule
        meta = {
            NEW_TASK: "yes",
            SCHEDULE_KEY: schedule.id,
            RUN_KEY: fire.at.strftime("%Y-%m-%dT%H:%MZ"),
        }
        try:
            message = await self._host.submit(
                schedule.text,
                CHANNEL,
                sender=schedule.id,
                reply_to=schedule.answer_to,
                meta=meta,
                message_id=fire.message_id,
            )
        except ValueError as exc:  # refused (rate limit): said once, the run is not made
            self._warn(f"schedule {schedule.id}: the run of {fire.at:%Y-%m-%d %H:%M} UTC: {exc}")
            return None
        late = " (missed while stopped; catch_up: once)" if fire.caught_up else ""
        log.info(
            "schedule %s: run of %s UTC queued as %s%s", schedule.id, fire.at, message.id, late
        )
        return message

    async def deliver(self, reply: ReplyReady) -> None:
        """The task of a run ended or asks: its answer goes where ``answer_to`` says."""
        schedule_id = self._schedule_of(reply)
        try:
            done = await deliver_answer(self.settings, reply, schedule_id, datetime.now(UTC))
        except Exception as exc:  # the boundary: one line, the answer stays in the task
            self._warn(f"schedule {schedule_id}: the answer of task {reply.task_id}: {exc}")
            return
        log.info("schedule %s: the answer of task %s %s", schedule_id, reply.task_id, done)

    @staticmethod
    def _schedule_of(reply: ReplyReady) -> str:
        """The schedule a run's message came from (its id says: ``s-S1-...``)."""
        for message_id in reply.message_ids:
            prefix, _, rest = message_id.partition("-")
            if prefix == "s" and rest:
                return rest.partition("-")[0]
        return CHANNEL

    def _warn(self, message: str) -> None:
        log.warning("%s", message)
        self.bus.emit(AgentWarning(message=message))
