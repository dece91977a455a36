"""The coordinator's fleet loop: ``todos.md`` is the truth, Redis the delivery.

Each :meth:`FleetCoordinator.tick`: handle what workers sent (events onto the bus, so the
journal records them as if the task ran here; artefacts into the data dir; outcomes
through the same ending as a local run's, :func:`jarvis.gateway.endings.record_ending`:
``todos.md``, the archive of the messages it answered, the replies), let the janitor
reassign tasks whose lease expired, then dispatch: every pending task (marked in
progress), and every in-progress task (read from the tasks that changed since the last
round, so a round costs the same with ten thousand ended tasks as with none) that no
stream entry carries (Redis restarted empty, or the coordinator died between marking and
sending). Dispatch is idempotent by task id, and refuses a task whose outcome is on its
way. With long-term memory, each task entry carries the memories recalled for the task,
and what workers learnt is stored here (:mod:`jarvis.fleet.memory`).

Side: the coordinator.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from jarvis.events import EventBus
from jarvis.fleet.memory import MemoryKeeper, recalled_field
from jarvis.fleet.receiver import EventFilter, Outcome, Receiver
from jarvis.fleet.redis_queue import LEASE_MS, MAX_ATTEMPTS, Janitor, RedisQueue, Swept
from jarvis.gateway.endings import (
    ENDED,
    Ran,
    RunRecord,
    emit_replies,
    record_ending,
    unreplied_ending,
)
from jarvis.gateway.queue import MessageQueue
from jarvis.gateway.todos import Todo, TodoList, TodoState
from jarvis.gateway.worker import task_text
from jarvis.runs.reader import replied_since_start

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger(__name__)

REDELIVERED = tuple(s for s in ENDED if s != "cancelled")
"""A task with one of these statuses and an outcome saying the same was written already (the
outcome is delivered again); ``cancelled`` is also what a person's cancel writes while the
run goes on, whose outcome is still to be written."""


class FleetCoordinator:
    def __init__(
        self,
        redis: Redis,
        todos: TodoList,
        data_dir: Path,
        bus: EventBus,
        *,
        inbox: MessageQueue | None = None,
        books: asyncio.Lock | None = None,
        lease_ms: int = LEASE_MS,
        max_attempts: int = MAX_ATTEMPTS,
        on_event: EventFilter | None = None,
        memory: MemoryKeeper | None = None,
    ) -> None:
        self.todos = todos
        self.inbox = inbox or MessageQueue(data_dir, bus=bus)
        self.bus = bus
        self.books = books or asyncio.Lock()
        """Held while todos.md and the inbox's files are brought in line (as the router)."""
        self.active: dict[str, Todo] = {}
        """The tasks in progress, as the last rounds read them."""
        self._seen = 0
        """The version of todos.md's list the last dispatch round read up to."""
        self.started: dict[str, Todo] = {}
        """Each task as it was dispatched (the messages its run saw), until its ending."""
        self.runs: list[RunRecord] = []
        self.swept = Swept([], [], [])
        """What the janitor did in the last tick."""
        self.queue = RedisQueue(redis, "coordinator", lease_ms=lease_ms)
        self.janitor = Janitor(redis, lease_ms=lease_ms, max_attempts=max_attempts)
        self.memory = memory
        """The coordinator's long-term store (None: it keeps none)."""
        on_memory = memory.on_note if memory is not None else None
        self.data_dir = data_dir
        self.receiver = Receiver(
            redis, data_dir, bus, self.record, on_event=on_event, on_memory=on_memory
        )
        self.recorded: list[Outcome] = []

    async def setup(self) -> None:
        await self.queue.setup()
        await self.receiver.setup()

    async def tick(self, wait_s: float = 1.0) -> list[str]:
        """One round (see the module doc); the ids dispatched."""
        await self.receiver.read_once(wait_s)
        self.swept = await self.janitor.sweep()
        return await self.dispatch()

    async def dispatch(self) -> list[str]:
        """Send every in-progress task no stream entry carries, after marking the pending
        ones in progress. Only the tasks that changed since the last round are read."""
        version, changed = await asyncio.to_thread(self.todos.changed_since, self._seen)
        self._seen = version
        for todo in changed:
            if todo.status == "pending":
                try:
                    todo = await asyncio.to_thread(self.todos.mark_in_progress, todo.id)
                except (KeyError, TodoState):
                    continue  # changed meanwhile: the next round sees it
            if todo.status == "in_progress":
                self.active[todo.id] = todo
                self.started.setdefault(todo.id, todo)
            else:
                self.active.pop(todo.id, None)
        carried = await self.queue.carrying(list(self.active))  # one round trip
        sent = []
        for todo in [t for t in self.active.values() if t.id not in carried]:
            if not await self._still_running(todo.id):
                continue
            body = task_text(todo)
            memories = await self._recall(todo.id, body)
            if await self.queue.dispatch(todo.id, body, _channels(todo), memories=memories):
                sent.append(todo.id)
        if sent:
            log.info("dispatched %s", ", ".join(sent))
        return sent

    async def _still_running(self, task_id: str) -> bool:
        """Whether the list still has the task in progress (it may have ended and left the
        list between two rounds)."""
        todo = await asyncio.to_thread(self.todos.get, task_id)
        if todo is None or todo.status != "in_progress":
            self.active.pop(task_id, None)
            return False
        return True

    async def _recall(self, task_id: str, body: str) -> str:
        """The task entry's ``memories``: recalled as a local run's first recall is (on the
        task's text); empty without a store. A recall that fails sends the task without
        memories rather than holding it."""
        if self.memory is None:
            return ""
        try:
            lines = await asyncio.to_thread(self.memory.recall, body)
        except Exception:  # the boundary: memory is an optional part
            log.exception("recalling memories for %s failed; it goes without them", task_id)
            lines = []
        return recalled_field(lines)

    async def record(self, outcome: Outcome) -> None:
        """A worker's outcome (fenced by its lease token in Redis), written as a local run's
        ending: todos.md, the archive, the replies. A task a person ended meanwhile (other
        than by cancelling it while it ran) keeps what they wrote."""
        async with self.books:
            record = await asyncio.to_thread(self._record, outcome)
        self.started.pop(outcome.task_id, None)
        self.active.pop(outcome.task_id, None)
        if record is not None:
            self.recorded.append(outcome)
            self.runs.append(record)
            log.info(
                "task %s: %s: %s (%s)",
                record.todo_id,
                record.status,
                record.summary,
                outcome.worker,
            )
            emit_replies(self.bus, record.todo_id, record.answered, record.status, record.summary)
        await self.queue.recorded(outcome.task_id)

    def _record(self, outcome: Outcome) -> RunRecord | None:
        todo = self.todos.get(outcome.task_id)
        if todo is not None and todo.status == outcome.status and todo.status in REDELIVERED:
            return self._redelivered(todo)
        if todo is None or todo.status not in ("in_progress", "cancelled"):
            state = todo.status if todo else "gone from todos.md"
            log.warning("outcome of %s not written: the task is %s", outcome.task_id, state)
            return None
        started = self.started.get(todo.id, todo)
        ran = Ran(ended=(outcome.status, outcome.summary))
        return record_ending(self.todos, self.inbox, started, ran)

    def _redelivered(self, todo: Todo) -> RunRecord | None:
        """An outcome whose ending is already on the books, delivered again (the coordinator
        died before acknowledging it): its replies go out if the journal shows none since
        the run began (it died between the write and the replies), else nothing is done."""
        if replied_since_start(self.data_dir, todo.id):
            log.info("outcome of %s delivered again: already written and replied", todo.id)
            return None
        log.warning(
            "task %s had ended (%s) but was not replied to; replying now", todo.id, todo.status
        )
        return unreplied_ending(self.inbox, todo)


def _channels(todo: Todo) -> tuple[str, ...]:
    return (todo.source,) if todo.source else ()
