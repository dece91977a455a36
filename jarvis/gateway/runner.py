"""What runs the tasks the router makes: the :class:`Runner` the gateway is given.

The gateway routes messages onto ``todos.md``; a runner takes the tasks from there and
ends them through :mod:`jarvis.gateway.endings`. ``serve_command`` (a root) picks one and
hands its factory to the gateway, which calls it with the state they share
(:class:`Shared`: the books lock, the work event, the journal, the memory bridge...), so
nothing in the gateway or its facade asks which runner it has (DESIGN section 10).

:class:`EmbeddedRunner` is the default: one agent on the daemon's own desktop, running the
pending tasks one at a time (:class:`~jarvis.gateway.worker.AgentWorker`). The fleet's
runner lives in :mod:`jarvis.fleet.serving`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from jarvis.config import Settings
from jarvis.desktop.backend import Where, keys_display
from jarvis.desktop.x11 import XDisplay
from jarvis.events import EventBus
from jarvis.gateway.endings import RunRecord
from jarvis.gateway.message_format import Message
from jarvis.gateway.queue import MessageQueue
from jarvis.gateway.todos import TodoList
from jarvis.gateway.worker import AgentWorker, describe_open
from jarvis.runs.journal import JournalWriter
from jarvis.safety.approvals import ApprovalGate, ApprovalStore

if TYPE_CHECKING:
    from jarvis.agent.agent import Agent
    from jarvis.desktop.desktop import Desktop
    from jarvis.llm.base import Provider
    from jarvis.memory.recall import MemoryBridge
    from jarvis.safety.takeover import ScreenHold
    from jarvis.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

MAIN = "main"
"""The screen id of the daemon's own desktop (DESIGN section 11)."""
WORKER = "worker/"
"""The prefix of a worker's screen id: ``worker/NAME``."""


def worker_of_screen(screen: str | None) -> str | None:
    """The worker's name in a ``worker/NAME`` screen id; None for any other screen."""
    if screen is None or not screen.startswith(WORKER):
        return None
    return screen.removeprefix(WORKER) or None


@dataclass(frozen=True)
class WorkerInfo:
    """One worker of a runner as its last heartbeat says (``last_heartbeat`` in UTC)."""

    name: str
    host: str
    display: str
    size: str
    version: str
    state: str
    task: str | None
    last_heartbeat: datetime
    live: bool = False
    """Its display can be shown from here (on this machine)."""


@dataclass
class GatewayReport:
    requeued: list[str] = field(default_factory=list)
    """Tasks found in progress at start and put back to pending."""
    repaired: list[str] = field(default_factory=list)
    """Messages archived at start because their task had ended."""
    routed: int = 0
    runs: list[RunRecord] = field(default_factory=list)
    compressions: int = 0


@dataclass
class MainScreen:
    """The daemon's own screen as the runner that drives it fills it in (the start of
    section 11's registry): the agent that drives it, so its desktop and its hold (a
    person's takeover)."""

    agent: Agent | None = None

    @property
    def desktop(self) -> Desktop | None:
        return self.agent.desktop if self.agent is not None else None

    @property
    def hold(self) -> ScreenHold | None:
        return self.agent.screen_hold if self.agent is not None else None


class Runner(Protocol):
    """Takes the tasks of ``todos.md`` and runs them (see the module doc)."""

    async def run(self) -> None:
        """Take and run tasks until stopped."""
        ...

    def stop(self) -> None:
        """Stop: a running task goes back to pending."""
        ...

    async def cancel(self, task_id: str, by: str) -> bool:
        """Stop ``task_id`` now if this runner runs it (``by`` is who stopped it); False
        when it runs nowhere here. Its cancelled status is already written."""
        ...

    async def settle(self) -> list[Message]:
        """Repair half-recorded endings; the messages archived."""
        ...

    def screen(self, task_id: str) -> str | None:
        """The id of the screen ``task_id`` runs on now; None when it runs nowhere."""
        ...

    async def workers(self) -> list[WorkerInfo]:
        """The runner's workers ([] for the embedded runner)."""
        ...


@dataclass
class Shared:
    """What the gateway shares with its runner, made by the gateway."""

    settings: Settings
    bus: EventBus
    todos: TodoList
    queue: MessageQueue
    journal: JournalWriter
    approvals: ApprovalStore
    gate: ApprovalGate
    provider: Provider
    report: GatewayReport
    books: asyncio.Lock
    """Held while todos.md and the queue are brought in line (the router holds it too)."""
    work: asyncio.Event
    """Set when the router made or changed a task (and on a cancel)."""
    stopping: Callable[[], bool]
    display: Where
    """The display the daemon's agent works on."""
    person: XDisplay
    """The person's display, where the kill switch is grabbed."""
    main: MainScreen
    bridge: MemoryBridge | None = None
    """Long-term memory, when it is on."""
    registry: ToolRegistry | None = None
    """The tools, when long-term memory opened them."""
    once: bool = False
    """Run what is pending, then return (``serve --once``)."""
    intake: Callable[[], Awaitable[None]] | None = None
    """With ``once``: bring in what waits (drop files, the inbox) before each task."""
    idle: Callable[[], Awaitable[None]] | None = None
    """Upkeep when no task is pending (long-term memory's compression)."""
    poll_interval_s: float = 2.0
    watch_interval_s: float = 1.0


RunnerFactory = Callable[[Shared, AsyncExitStack], Awaitable[Runner]]
"""Builds the runner once the gateway's shared state is ready; what it opens goes on the
stack, closed when the gateway stops."""


class EmbeddedRunner:
    """One agent on the daemon's desktop, running pending tasks one at a time."""

    def __init__(self, shared: Shared, worker: AgentWorker) -> None:
        self.shared = shared
        self.worker = worker
        self._recovered = False
        self._stop = asyncio.Event()

    async def run(self) -> None:
        shared = self.shared
        while not self.worker.stopping and not shared.stopping():
            if shared.once and shared.intake is not None:
                await shared.intake()
            record = await self.worker.run_next()
            if record is not None:
                shared.report.runs.append(record)
                continue
            if shared.stopping():
                return
            await self.worker.settle()
            if shared.once:
                return
            if shared.idle is not None:
                await shared.idle()
            await wait_any([shared.work, self._stop], shared.poll_interval_s)
            shared.work.clear()

    def stop(self) -> None:
        self._stop.set()
        self.worker.stop()

    async def cancel(self, task_id: str, by: str) -> bool:
        if self.worker.current != task_id:
            return False
        log.info("task %s cancelled by the %s; stopping it", task_id, by)
        self.worker.agent.cancel(by)
        return True

    async def settle(self) -> list[Message]:
        """The first call (at start) also puts tasks left ``in_progress`` by a crash back
        to pending: nothing else runs them."""
        if not self._recovered:
            self._recovered = True
            back = await asyncio.to_thread(self.shared.todos.recover)
            self.shared.report.requeued = [t.id for t in back]
        return await self.worker.settle()

    def screen(self, task_id: str) -> str | None:
        if self.worker.current != task_id:
            return None
        desktop = self.shared.main.desktop
        if desktop is not None and desktop.where != self.shared.display:
            return f"private/{desktop.where.name}"
        return MAIN

    async def workers(self) -> list[WorkerInfo]:
        return []


async def open_embedded(shared: Shared, stack: AsyncExitStack) -> EmbeddedRunner:
    """The default runner: the agent on ``shared.display``, with the kill switch on the
    person's display; closed with ``stack``."""
    from jarvis.agent.factory import build_agent
    from jarvis.safety.killswitch import kill_switch

    settings = shared.settings
    runner: EmbeddedRunner | None = None

    def open_tasks() -> str:
        return describe_open(shared.todos.open_tasks(), settings.router.candidates)

    async def verified(task_id: str, summary: str) -> None:
        if runner is not None:  # the worker writes the verdict at once
            await runner.worker.verified(task_id, summary)

    agent = await stack.enter_async_context(
        build_agent(
            settings,
            shared.bus,
            provider=shared.provider,
            registry=shared.registry,
            long_term=shared.bridge,
            todos=open_tasks,
            approvals=shared.gate,
            where=shared.display,
            on_verified=verified,
        )
    )
    main = shared.main
    main.agent = agent
    stack.callback(_clear, main)

    def display_now() -> XDisplay:  # where held keys are let go of when it is stopped
        where = main.desktop.where if main.desktop is not None else shared.display
        return keys_display(where, shared.person)

    loop = asyncio.get_running_loop()
    stack.enter_context(kill_switch(settings, agent, loop, shared.person, display_now))
    worker = AgentWorker(
        agent,
        shared.todos,
        shared.queue,
        shared.bus,
        books=shared.books,
        watch_interval_s=shared.watch_interval_s,
    )
    runner = EmbeddedRunner(shared, worker)
    if shared.stopping():  # a signal came while we were starting
        runner.stop()
    return runner


def _clear(main: MainScreen) -> None:
    main.agent = None


async def wait_any(events: list[asyncio.Event], timeout: float) -> None:
    """Until one of ``events`` is set, or ``timeout`` seconds."""
    waiters = [asyncio.create_task(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
