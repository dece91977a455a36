"""The daemon as its faces see it: one small service object over the gateway.

The control API's routes (and A2A and MCP) call only this:
submit a message, answer or cancel a task, answer an approval, stop the running task, and
read the daemon's state, its todos, a task's record and the runs. It is the one place
outside the gateway that touches the gateway's queue, todo list, journal and runner;
the callers get plain typed values back (:class:`Submitted`, :class:`DaemonState`,
:class:`TaskRecord`, :class:`~jarvis.gateway.todo_format.Todo`,
:class:`~jarvis.runs.run_info.RunInfo`) and the exceptions say what was refused:
``KeyError`` (no such task), :class:`~jarvis.gateway.todos.TodoState` (the task's status
does not allow it), ``ValueError`` (a message the inbox does not take),
:class:`~jarvis.safety.approvals.ApprovalError` (an approval that cannot be answered).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jarvis.desktop.backend import Where
from jarvis.events import Event, ReplyReady, RoutingFailed
from jarvis.gateway.router import ANSWERS
from jarvis.gateway.runner import Runner, WorkerInfo, worker_of_screen
from jarvis.gateway.todos import Todo, TodoState
from jarvis.runs.reader import RunInfo, RunPage, find_run, list_runs, load_run, read_events
from jarvis.safety.takeover import ScreenHold

if TYPE_CHECKING:
    from jarvis.config import Settings
    from jarvis.gateway.gateway import Gateway
    from jarvis.gateway.message_format import Message
    from jarvis.runs.journal import Listener

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Submitted:
    """A message taken into the inbox; ``task_id`` when it is addressed to a task."""

    message_id: str
    channel: str
    task_id: str | None = None


@dataclass(frozen=True)
class DaemonState:
    ready: bool
    """Recovered and serving."""
    running: str | None
    """The task the agent works on now."""
    last_seq: int
    """The last journal line this daemon wrote (0 before its first)."""


@dataclass
class TaskRecord:
    """What the daemon knows of one task: its todo (if it came through the gateway), its
    run.json and its journal lines (both None/empty before it first ran)."""

    task_id: str
    todo: Todo | None = None
    run: RunInfo | None = None
    events: list[dict[str, Any]] = field(default_factory=list)


class DaemonService:
    """The daemon's operations, for every face (see the module doc)."""

    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway

    @property
    def settings(self) -> Settings:
        return self._gateway.settings

    @property
    def data_dir(self) -> Path:
        return self._gateway.settings.data_dir

    def display_now(self) -> Where:
        """The display the agent works on now (a task's private display while it runs):
        what the live screen shows."""
        return self._gateway.display_now()

    # -- messages and tasks --
    async def submit(
        self,
        text: str,
        channel: str,
        *,
        priority: int | str | None = None,
        reply_to: str | None = None,
        meta: dict[str, str] | None = None,
    ) -> Submitted:
        """A message of ``channel`` into the inbox, routed at once (a new task, or merged
        into one); ``reply_to`` is where that channel answers. Raises
        :class:`~jarvis.gateway.channels.registry.ChannelRefused` (a ValueError) for an
        unknown channel, one over its rate limit, or one that takes its messages itself
        (inbox, email, a plugin: they do not come through a face of the daemon)."""
        message = await self._gateway.submit(
            text, channel, priority=priority, reply_to=reply_to, meta=meta, by_api=True
        )
        return Submitted(message.id, message.channel)

    async def message(self, message_id: str) -> Message | None:
        """A message of the inbox, the one being routed or the archive's."""
        return await asyncio.to_thread(self._gateway.queue.find, message_id)

    async def task_of_message(self, message_id: str) -> Todo | None:
        """The task a message became (or was merged into); None while it waits."""
        return await asyncio.to_thread(self._gateway.todos.find_by_message, message_id)

    def on_reply(self, handler: Callable[[Event], None]) -> Callable[[], None]:
        """Every ``reply_ready`` event (a task ended or asks), journaled or not: a task
        cancelled before it ran has no journal. Returns the unsubscribe function."""
        return self._gateway.bus.subscribe(handler, ReplyReady)

    async def answer(self, task_id: str, text: str, channel: str) -> Submitted:
        """An answer to an open task (its ``call_user`` question): a message addressed to
        it, which the router merges into it."""
        todo = await asyncio.to_thread(self._todo, task_id)
        if todo is None:
            raise KeyError(task_id)
        if not todo.is_open:
            raise TodoState(f"{todo.id} is {todo.status}; it takes no answer")
        message = await asyncio.to_thread(
            self._gateway.queue.append, text, "user", channel, meta={ANSWERS: todo.id}
        )
        self._gateway.notify()
        return Submitted(message.id, message.channel, todo.id)

    async def cancel(self, task_id: str, by: str) -> Todo:
        """A person's cancel, recorded as stopped by ``by``; a running task stops within
        a moment."""
        return await self._gateway.cancel_task(task_id, by)

    async def stop(self, by: str) -> bool:
        """Stop the running task now, recorded as stopped by ``by`` (the kill switch's
        path), then mark it cancelled as a person's cancel does. False when none runs."""
        current = self._gateway.journal.current
        todo = await asyncio.to_thread(self._todo, current) if current else None
        runner = self._gateway.runner
        if todo is None or todo.status != "in_progress" or runner is None:
            return False
        told = await runner.cancel(todo.id, by)  # first, so the first cancel names the brake
        try:
            await self._gateway.cancel_task(todo.id, by, told=told)
        except (KeyError, TodoState) as exc:  # it ended meanwhile
            log.info("stop: task %s: %s", todo.id, exc)
        return True

    # -- approvals --
    def attend(self) -> None:
        """Someone can answer approvals from now on: held calls wait for them."""
        self._gateway.approvals.attended = True

    def pending_approvals(self) -> list[dict[str, Any]]:
        """The calls waiting for a person (``approval_requested`` events), oldest first."""
        return self._gateway.approvals.pending()

    def approve(self, approval_id: str, decision: str, note: str, by: str) -> None:
        """Answer a held call; raises ApprovalError for an unknown or answered id."""
        self._gateway.approvals.resolve(approval_id, decision, note, via=by)

    # -- takeover --
    def screen_hold(self) -> ScreenHold | None:
        """The pause gate of the daemon's own screen (a person's takeover,
        :mod:`jarvis.safety.takeover`); None while no agent of this process drives it."""
        return self._gateway.main.hold

    def running_task(self) -> str | None:
        """The task the agent of this process works on now (on its own screen)."""
        current = self._gateway.journal.current
        screen = self.screen(current) if current is not None else None
        return current if screen is not None and worker_of_screen(screen) is None else None

    # -- the runner --
    @property
    def runner(self) -> Runner | None:
        """What runs the tasks (None before the daemon assembled it): for the faces that
        show the parts only one kind of runner has (a worker's screen)."""
        return self._gateway.runner

    def screen(self, task_id: str) -> str | None:
        """The id of the screen ``task_id`` runs on now (``main``, ``private/NAME``,
        ``worker/NAME``); None when it runs nowhere."""
        runner = self._gateway.runner
        return runner.screen(task_id) if runner is not None else None

    async def workers(self) -> list[WorkerInfo]:
        """The runner's live workers, by name; empty for one agent in this process (or
        while the workers' queue is away)."""
        runner = self._gateway.runner
        return await runner.workers() if runner is not None else []

    def watched_task(self) -> str | None:
        """The task the journal shows running (the agent's here, or a worker's)."""
        return self._gateway.journal.current

    # -- reading --
    def state(self) -> DaemonState:
        journal = self._gateway.journal
        return DaemonState(self._gateway.ready.is_set(), journal.current, journal.last_seq)

    def on_notice(self, handler: Callable[[Event], None]) -> Callable[[], None]:
        """Every event of no task a person must see (``routing_failed``: a message could not
        be routed and waits in the inbox); these have no journal line. Returns the
        unsubscribe function."""
        return self._gateway.bus.subscribe(handler, RoutingFailed)

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` with every journal line once written; returns an unsubscribe."""
        return self._gateway.journal.listen(listener)

    async def tasks(self) -> list[Todo]:
        """Every task in todos.md, in file order."""
        return await asyncio.to_thread(self._gateway.todos.all)

    async def task(self, task_id: str) -> TaskRecord | None:
        """The task's todo, run.json and journal lines; None when neither exists."""
        return await asyncio.to_thread(self._task, task_id)

    async def runs(self, limit: int, cursor: str | None = None) -> RunPage:
        """A page of the runs on disk, newest first, after ``cursor`` (a page's ``next``;
        :class:`~jarvis.runs.listing.BadCursor` for any other)."""
        return await asyncio.to_thread(list_runs, self.data_dir, limit, cursor)

    async def latest_events(self) -> list[dict[str, Any]]:
        """The journal lines of the running task, or else of the last one that ran."""
        return await asyncio.to_thread(self._latest_events)

    def _todo(self, task_id: str) -> Todo | None:
        try:
            return self._gateway.todos.get(task_id)
        except (KeyError, ValueError):
            return None

    def _task(self, task_id: str) -> TaskRecord | None:
        todo = self._todo(task_id)
        folder = find_run(self.data_dir, todo.id if todo else task_id)
        if todo is None and folder is None:
            return None
        record = TaskRecord(todo.id if todo else task_id, todo)
        if folder is not None:
            record.run = load_run(self.data_dir, folder)
            record.events = list(read_events(folder / "events.jsonl"))
        return record

    def _latest_events(self) -> list[dict[str, Any]]:
        task_id = self._gateway.journal.current
        if task_id is None:
            newest = list_runs(self.data_dir, limit=1).runs
            task_id = newest[0].task_id if newest else None
        folder = find_run(self.data_dir, task_id) if task_id is not None else None
        return list(read_events(folder / "events.jsonl")) if folder is not None else []
