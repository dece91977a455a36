"""The agent worker of ``jarvis serve``: runs the tasks of ``todos.md``, one at a time.

It takes the most urgent pending task (highest priority, then oldest), marks it
``in_progress``, runs it with the agent loop (the agent's task id is the todo id, so
``TaskStarted``/``TaskFinished`` name it) and records how it ended, in this order:

1. ``todos.md``: status, completed time and summary. This is the commit point: a task with
   a final status is never run again. A passed verification is written at once, while the
   agent may still be distilling a skill from the run (one more model call).
2. ``messages/archive/DATE.md``: each of the task's messages still in ``processing.md``,
   with the status as its outcome and the summary (or the question) as its result.
3. one :class:`~jarvis.events.ReplyReady` per channel (and ``reply_to``) that asked.

A crash between 1 and 2 is repaired by :meth:`AgentWorker.settle` (run at start and when
idle): it archives the messages of tasks that already ended, without running them again.
A crash before 1 leaves the task ``in_progress``; ``TodoList.recover`` puts it back to
pending and the whole run is repeated: runs are at least once (a crash while the model is
verifying repeats the task), endings are written once.

Stopping (SIGTERM, SIGINT): the run is cancelled with ``agent.cancel()`` (the model stream
and the current tool stop within a moment) and the task goes back to ``pending`` with a
note; its messages stay in processing, so the next start runs it again. Nothing is marked
cancelled by a shutdown: ``cancelled`` is what a person says, by setting that status in
``todos.md``; a running task notices within ``watch_interval_s`` and keeps it.

Messages merged into a task while it ran (the agent never saw them) stay in processing and
the task goes back to pending with a note, to run again with them; the messages the run
did see are answered with its outcome.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Protocol

from jarvis import prompts
from jarvis.events import EventBus
from jarvis.gateway.endings import (
    STATUS_OF_RUN,
    Ran,
    RunRecord,
    emit_replies,
    record_ending,
    settle_ended,
)
from jarvis.gateway.message_format import Message
from jarvis.gateway.queue import MessageQueue
from jarvis.gateway.router import describe_tasks
from jarvis.gateway.todos import Todo, TodoList, TodoState

__all__ = ["STATUS_OF_RUN", "AgentWorker", "RunRecord", "acting", "task_text"]

if TYPE_CHECKING:
    from jarvis.agent.agent import TaskOutcome
    from jarvis.desktop.desktop import Desktop
    from jarvis.safety.takeover import ScreenHold

log = logging.getLogger(__name__)

CANCEL_RETRY_S = 0.1


class TaskAgent(Protocol):
    """What the worker needs from :class:`jarvis.agent.agent.Agent`."""

    screen_hold: ScreenHold | None
    """The takeover's pause gate the agent was made with (the API's takeover holds it)."""
    desktop: Desktop | None
    """The desktop it acts on (None without one)."""

    async def run(
        self, task: str, task_id: str | None = None, channels: tuple[str, ...] = ()
    ) -> TaskOutcome: ...

    def cancel(self, by: str = "user") -> None: ...


def acting(desktop: Desktop | None) -> AbstractContextManager[None]:
    """Around a served task's run: the desktop's on-screen sign (``desktop.indicator``),
    shown while it acts and gone when the run ends or its stop is set."""
    return desktop.acting() if desktop is not None else nullcontext()


def task_text(todo: Todo) -> str:
    """What the agent is asked to do: the description (the message and merged updates)."""
    return todo.description or todo.title


_RUNS_FIRST = {"in_progress": 0, "needs_user": 1, "pending": 2}


def describe_open(tasks: list[Todo], limit: int) -> str:
    """The open tasks the agent is shown each step: the running and waiting ones, then the
    pending ones in the order they run, at most ``limit`` (a step's prompt stays the same
    size with a backlog of a thousand tasks)."""
    order = sorted(tasks, key=lambda t: (_RUNS_FIRST.get(t.status, 3), -t.priority, t.created))
    text = describe_tasks(order[:limit])
    if len(order) > limit:
        text += "\n" + prompts.render_text("open_tasks_cut", hidden=str(len(order) - limit))
    return text


class AgentWorker:
    """Runs pending tasks one at a time and records their endings (see the module doc)."""

    def __init__(
        self,
        agent: TaskAgent,
        todos: TodoList,
        queue: MessageQueue,
        bus: EventBus,
        *,
        books: asyncio.Lock | None = None,
        watch_interval_s: float = 1.0,
    ) -> None:
        self.agent = agent
        self.todos = todos
        self.queue = queue
        self.bus = bus
        self.books = books or asyncio.Lock()
        """Held while todos.md and the queue are brought in line (the router holds it too)."""
        self.watch_interval_s = watch_interval_s
        self.current: str | None = None
        self._stop = asyncio.Event()
        self._seen: list[str] = []
        self._committed: str | None = None

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        """Cancel the current run (its task goes back to pending) and start no other."""
        self._stop.set()
        if self.current is not None:
            self.agent.cancel()

    # -- running --
    async def run_next(self) -> RunRecord | None:
        """Run the most urgent pending task; None when there is none, or when stopping."""
        while not self.stopping:
            todo = await asyncio.to_thread(self.todos.next_pending)
            if todo is None:
                return None
            record = await self.run(todo)
            if record is not None:
                return record
        return None

    async def run(self, todo: Todo) -> RunRecord | None:
        """Run one task and record it; None when it could not start (changed meanwhile)."""
        try:
            started = await asyncio.to_thread(self.todos.mark_in_progress, todo.id)
        except (KeyError, TodoState) as exc:
            log.info("task %s not started: %s", todo.id, exc)
            return None
        log.info("task %s started: %s", started.id, started.title)
        self.current, self._seen, self._committed = started.id, started.message_ids, None
        try:
            ran = await self._execute(started)
        finally:
            self.current = None
        ran.committed = self._committed
        async with self.books:
            record = await asyncio.to_thread(self._record, started, ran)
        log.info("task %s: %s: %s", record.todo_id, record.status, record.summary)
        self._reply(record.todo_id, record.answered, record.status, record.summary)
        return record

    async def _execute(self, todo: Todo) -> Ran:
        ran = Ran()
        if self.stopping:
            ran.stopped = True
            return ran
        channels = await asyncio.to_thread(self._channels_of, todo)
        run = asyncio.create_task(
            self.agent.run(task_text(todo), task_id=todo.id, channels=channels),
            name=f"task-{todo.id}",
        )
        with acting(self.agent.desktop):  # the on-screen sign while it runs
            await self._watch(run, todo, ran)
        if self.stopping:  # the stop's cancel may end the run before the loop sees it
            ran.stopped = True
        if run.cancelled():
            ran.stopped = True
            return ran
        try:
            ran.outcome = run.result()
        except Exception as exc:  # the boundary: an agent crash becomes a failed task
            log.exception("task %s: the agent stopped with an error", todo.id)
            ran.error = f"{type(exc).__name__}: {exc}"
        return ran

    async def _watch(self, run: asyncio.Task[TaskOutcome], todo: Todo, ran: Ran) -> None:
        """Until ``run`` ends: a stop or a person's cancel in todos.md cancels it."""
        stop = asyncio.create_task(self._stop.wait())
        try:
            while not run.done():
                await asyncio.wait(
                    [run, stop], timeout=self.watch_interval_s, return_when=asyncio.FIRST_COMPLETED
                )
                if run.done():
                    break
                if self.stopping:
                    # repeated: a cancel that came before the run began is not seen by it
                    ran.stopped = True
                    self.agent.cancel()
                    await asyncio.wait([run], timeout=CANCEL_RETRY_S)
                elif await asyncio.to_thread(self._cancelled_by_person, todo.id):
                    log.info("task %s was cancelled in %s; stopping it", todo.id, self.todos.path)
                    ran.by_person = True
                    self.agent.cancel()
        finally:
            stop.cancel()
            if not run.done():  # we are being cancelled ourselves
                self.agent.cancel()
                run.cancel()

    # -- the verdict, written as soon as it is known --
    async def verified(self, task_id: str, summary: str) -> None:
        """Commit ``completed`` when the verification passes, before the agent returns
        (it may still distill a skill with one more model call): a crash after the verdict
        does not run the task again. The agent awaits this (its ``on_verified``, given
        when it is built), so the order is certain."""
        if task_id != self.current:
            return
        try:
            async with self.books:
                committed = await asyncio.to_thread(
                    self._commit_if_unchanged, task_id, self._seen, summary
                )
        except (OSError, KeyError, TodoState) as exc:  # written after the run instead
            log.warning("task %s: the verdict could not be written early: %s", task_id, exc)
            return
        self._committed = committed

    def _commit_if_unchanged(self, todo_id: str, seen: list[str], claim: str) -> str | None:
        """The summary written as completed; None when the task changed during the run
        (an update merged, a person's edit): then the ending is decided after the run."""
        todo = self.todos.get(todo_id)
        if todo is None or todo.status != "in_progress" or todo.message_ids != seen:
            return None
        self.todos.finish(todo_id, "completed", claim)
        return claim

    def _channels_of(self, todo: Todo) -> tuple[str, ...]:
        """Every channel the task's messages came by (its source first): each one's tool
        policy applies, so an email merged into a TUI task still runs under email's."""
        found = [todo.source] if todo.source else []
        ids = set(todo.message_ids)
        found += [m.channel for m in self.queue.processing() if m.id in ids]
        return tuple(dict.fromkeys(c for c in found if c))

    def _cancelled_by_person(self, todo_id: str) -> bool:
        todo = self.todos.get(todo_id)
        return todo is None or todo.status == "cancelled"

    # -- recording (in a thread, holding the books lock) --
    def _record(self, started: Todo, ran: Ran) -> RunRecord:
        return record_ending(self.todos, self.queue, started, ran)

    # -- repair --
    def settle_ended(self) -> list[tuple[Todo, list[Message]]]:
        """Archive messages in processing whose task already ended (a crash between the
        todos.md write and the archive write, or a status set by hand); runs nothing."""
        return settle_ended(self.todos, self.queue, {self.current} if self.current else set())

    async def settle(self) -> list[Message]:
        """:meth:`settle_ended`, then the replies; returns the messages archived."""
        async with self.books:
            settled = await asyncio.to_thread(self.settle_ended)
        out: list[Message] = []
        for todo, answered in settled:
            self._reply(todo.id, answered, todo.status, todo.summary or "")
            out += answered
        return out

    def _reply(self, todo_id: str, messages: list[Message], status: str, text: str) -> None:
        emit_replies(self.bus, todo_id, messages, status, text)
