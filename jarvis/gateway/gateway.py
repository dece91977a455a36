"""``jarvis serve``: the gateway daemon. Channels in, the router, the runner, replies out.

One daemon per data dir: :class:`~jarvis.gateway.serve_lock.ServeLock` holds an fcntl lock
on ``DATA/serve.lock`` (released by the OS when the process dies, even by ``kill -9``) and
says who holds it, so a second ``serve`` can say so.

:meth:`Gateway.run` first recovers from a crash: the runner settles (tasks left
``in_progress`` here go back to ``pending``; messages in ``processing.md`` whose task already
ended are archived with its outcome, nothing runs again), then the other messages in
``processing.md`` are routed again (routing is idempotent per message id).

Then it runs on one asyncio loop: the channels (:mod:`jarvis.gateway.channels`: the inbox,
drop files and edits of ``inbox.md``; email when settings turn it on; every
``jarvis.channels`` entry point), the routing loop (:mod:`jarvis.gateway.routing`) and the
runner it was given (:mod:`jarvis.gateway.runner`; by default one agent in this process),
which answers with ``ReplyReady`` events that the channel registry hands to the channel
that asked. When idle, the embedded runner repairs half-recorded endings and compresses
long-term memory every ``compress_every_s`` (:mod:`jarvis.gateway.daemon_memory`).

Every task's events are journaled (:mod:`jarvis.runs.journal`); ``services`` (the HTTP
control API) run while the data dir is held. :meth:`Gateway.submit` takes a message of any
known channel; :meth:`Gateway.notify` routes a new inbox message at once;
:meth:`Gateway.cancel_task` is a person's cancel. ``once`` processes what is waiting and
returns. :meth:`Gateway.stop` (SIGTERM, SIGINT) stops the runner: a running task goes back
to pending.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jarvis.config import Settings
from jarvis.desktop.x11 import XDisplay
from jarvis.events import EventBus
from jarvis.gateway.channels.registry import Channels, load_plugins
from jarvis.gateway.daemon_memory import DaemonMemory
from jarvis.gateway.message_format import Message
from jarvis.gateway.queue import MessageQueue
from jarvis.gateway.routing import RoutingLoop
from jarvis.gateway.runner import (
    GatewayReport,
    MainScreen,
    Runner,
    RunnerFactory,
    Shared,
    open_embedded,
)
from jarvis.gateway.schedule_channel import ScheduleChannel
from jarvis.gateway.serve_lock import ServeLock, stop_on_signals
from jarvis.gateway.todos import Todo, TodoList, TodoState
from jarvis.redaction import register_settings
from jarvis.runs.journal import JournalWriter
from jarvis.safety.approvals import ApprovalGate, ApprovalStore
from jarvis.safety.channel_policy import refused_approvers

__all__ = ["Gateway", "GatewayOptions", "GatewayReport"]

if TYPE_CHECKING:
    from jarvis.gateway.channels.email.channel import EmailChannel
    from jarvis.gateway.channels.inbox import InboxChannel
    from jarvis.gateway.router import MessageRouter
    from jarvis.llm.base import Provider

log = logging.getLogger(__name__)


@dataclass
class GatewayOptions:
    once: bool = False
    poll_interval_s: float = 2.0
    """Fallback scan of the inbox and todos.md when no file event comes."""
    settle_s: float = 0.5
    """A drop file is read once it has been still this long (0 in ``once`` mode)."""
    use_polling: bool = False
    """Watch files by polling (for file systems without change events)."""
    compress_every_s: float | None = 24 * 3600.0
    """Long-term memory compression interval; None or 0 never compresses."""
    router_timeout_s: float = 60.0
    routing_retry_s: float = 5.0
    """First wait before a message whose routing failed is tried again (then doubling)."""
    watch_interval_s: float = 1.0
    """How often a running task's status in todos.md is checked for a cancel."""
    handle_signals: bool = False
    """Stop on SIGTERM and SIGINT (the command line turns this on)."""


class Gateway:
    """The daemon for one data dir; see the module doc."""

    def __init__(
        self,
        settings: Settings,
        bus: EventBus | None = None,
        *,
        options: GatewayOptions | None = None,
        provider: Provider | None = None,
        where: XDisplay,
        person: XDisplay | None = None,
        runner: RunnerFactory = open_embedded,
    ) -> None:
        """``where``: the display the agent works on (the one the daemon was started on, or
        ``serve --sandbox``'s private one); ``person``: the person's, where the kill switch
        is grabbed (default: ``where``); ``runner``: builds what runs the tasks (default:
        one agent in this process, :func:`~jarvis.gateway.runner.open_embedded`)."""
        self.settings = settings
        register_settings(settings)  # todos, the archive and the API redact them too
        self.bus = bus or EventBus()
        self.options = options or GatewayOptions()
        self.queue = MessageQueue.from_settings(settings, self.bus)
        self.todos = TodoList.from_settings(settings, self.bus)
        self.report = GatewayReport()
        self.runner: Runner | None = None  # made by run() (and left for a look after)
        self._open_runner = runner
        self.email: EmailChannel | None = None
        """The email channel while serving with it on."""
        self.ready = asyncio.Event()
        """Set once recovered and watching (or draining, with ``once``)."""
        self._provider = provider
        self.display = where
        self.person = person or self.display
        self.main = MainScreen()
        """The daemon's own screen: the agent's desktop (a task may move it to a private
        display) and its hold, while a runner drives it."""
        self.memory = DaemonMemory(self.report, self.options.compress_every_s)
        self._books = asyncio.Lock()
        self._stop = asyncio.Event()
        self._work = asyncio.Event()
        self.routing = RoutingLoop(
            self.queue,
            self.bus,
            self.report,
            books=self._books,
            work=self._work,
            stopping=lambda: self.stopping,
            retry_s=self.options.routing_retry_s,
        )
        self._arrived: asyncio.Event | None = None
        self._draining: tuple[InboxChannel, MessageRouter] | None = None
        self.journal = JournalWriter.for_settings(settings, self.bus, channel=self._channel_of)
        """The run journal of every task this daemon runs (closed when :meth:`run` ends)."""
        self.serve_lock = ServeLock(settings.data_dir)
        """Held while :meth:`run` runs; the API records where it listens in it."""
        self.services: list[Callable[[], AbstractAsyncContextManager[Any]]] = []
        """Started once the data dir is held, stopped when :meth:`run` ends (the HTTP API)."""
        self.approvals = ApprovalStore(self.bus, refused_via=refused_approvers(settings.channels))
        """Risky calls waiting for a person; answered through the control API."""
        self.channels = Channels(settings, self.bus)
        """The registered channels, the names messages may come from, their rate limits."""

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def display_now(self) -> XDisplay:
        """The display the agent works on now (a task's private display while it runs)."""
        desktop = self.main.desktop
        return desktop.where if desktop is not None else self.display

    def stop(self) -> None:
        """Cancel the running task (it goes back to pending) and return from :meth:`run`."""
        if not self._stop.is_set():
            log.info("stopping: the running task, if any, goes back to pending")
        self._stop.set()
        if self.runner is not None:
            self.runner.stop()

    async def run(self) -> GatewayReport:
        """Hold the lock, recover, then serve (or drain with ``once``). Raises ServeLockHeld."""
        try:
            with self.serve_lock, stop_on_signals(self.stop, self.options.handle_signals):
                log.info("serving %s (pid %d)", self.settings.data_dir, os.getpid())
                await self._run_locked()
        finally:
            self.journal.close()
        return self.report

    async def _run_locked(self) -> None:
        async with AsyncExitStack() as stack:
            router = await self._assemble(stack)  # (imports and opens what blocks the loop)
            for service in self.services:
                await stack.enter_async_context(service())
            await self.recover(router)
            channel = self._channel()
            self._arrived = channel.arrived
            if self.options.once:
                await self._drain(channel, router)
            else:
                await self._serve(channel, router)

    def notify(self) -> None:
        """A message was added to the inbox: route it now, not at the next scan."""
        if self._arrived is not None:
            self._arrived.set()

    async def submit(
        self,
        text: str,
        channel: str,
        *,
        sender: str = "user",
        priority: int | str | None = None,
        reply_to: str | None = None,
        meta: dict[str, str] | None = None,
        message_id: str | None = None,
        by_api: bool = False,
    ) -> Message:
        """A message of ``channel`` into the inbox, routed at once. Raises
        :class:`~jarvis.gateway.channels.registry.ChannelRefused` for an unknown channel, one
        over its rate limit, or (``by_api``) one that takes its messages itself; ValueError
        for a message without text."""
        self.channels.admit(channel, by_api=by_api)
        message = await asyncio.to_thread(
            self.queue.append,
            text,
            sender,
            channel,
            priority,
            reply_to=reply_to,
            meta=meta,
            message_id=message_id,
        )
        self.notify()
        return message

    def _channel_of(self, todo_id: str) -> str | None:
        return getattr(self.todos.get(todo_id), "source", None)

    async def cancel_task(self, todo_id: str, by: str = "user", *, told: bool = False) -> Todo:
        """A person's cancel (API, web panel, TUI): the path of a ``cancelled`` status set in
        todos.md. A running task is also stopped at once rather than at the runner's next
        look (``told``: the runner was told already); an open one that is not running ends
        cancelled and its messages are answered when the runner next settles. ``by`` (tui,
        web, api...) is recorded as who stopped it. Raises KeyError (no such task) or
        TodoState (ended)."""
        async with self._books:
            todo = await asyncio.to_thread(self.todos.get, todo_id)
            if todo is None:
                raise KeyError(todo_id)
            if not todo.is_open:
                raise TodoState(f"{todo.id} is {todo.status}; only an open task can be cancelled")
            if todo.status == "in_progress":
                todo = await asyncio.to_thread(self.todos.update, todo.id, status="cancelled")
            else:
                todo = await asyncio.to_thread(
                    self.todos.finish, todo.id, "cancelled", "cancelled by the user"
                )
        if self.runner is not None and not told:
            await self.runner.cancel(todo.id, by)
        self._work.set()
        return todo

    async def _assemble(self, stack: AsyncExitStack) -> MessageRouter:
        """The provider (shared by router and runner), memory, the runner and the router."""
        from jarvis.agent.safety_checks import approver
        from jarvis.llm.factory import make_provider

        gate = ApprovalGate(self.settings.safety, self.approvals, channels=self.settings.channels)
        provider = self._provider
        if provider is None:
            made = make_provider(self.settings, self.bus, approve=approver(gate))
            stack.push_async_callback(made.aclose)
            provider = made
        self.settings, registry = await self.memory.open(self.settings, stack, gate)
        shared = Shared(
            settings=self.settings,
            bus=self.bus,
            todos=self.todos,
            queue=self.queue,
            journal=self.journal,
            approvals=self.approvals,
            gate=gate,
            provider=provider,
            report=self.report,
            books=self._books,
            work=self._work,
            stopping=lambda: self.stopping,
            display=self.display,
            person=self.person,
            main=self.main,
            bridge=self.memory.bridge,
            registry=registry,
            once=self.options.once,
            intake=self._intake,
            idle=self._compress,
            poll_interval_s=self.options.poll_interval_s,
            watch_interval_s=self.options.watch_interval_s,
        )
        self.runner = await self._open_runner(shared, stack)
        if self.stopping:  # a signal came while we were starting
            self.runner.stop()
        return self._router(provider)

    def _router(self, provider: Provider) -> MessageRouter:
        """The router, finding similar tasks with long-term memory's model when it is on."""
        from jarvis.gateway.candidates import embedder_of
        from jarvis.gateway.router import MessageRouter

        memory = self.memory.memory
        return MessageRouter(
            self.todos,
            provider,
            timeout_s=self.options.router_timeout_s,
            bus=self.bus,
            candidates=self.settings.router.candidates,
            embed=embedder_of(memory.embedding) if memory is not None else None,
        )

    def _channel(self) -> InboxChannel:
        from jarvis.gateway.channels.inbox import InboxChannel

        return InboxChannel(
            self.queue,
            poll_interval_s=self.options.poll_interval_s,
            settle_s=0.0 if self.options.once else self.options.settle_s,
            use_polling=self.options.use_polling,
            bus=self.bus,
        )

    # -- recovery --
    async def recover(self, router: MessageRouter) -> None:
        """Bring the files in line after a crash (see the module doc)."""
        assert self.runner is not None
        self.report.repaired = [m.id for m in await self.runner.settle()]
        waiting = await asyncio.to_thread(self.queue.processing)
        named = {m for t in await asyncio.to_thread(self.todos.all) for m in t.message_ids}
        for message in waiting:
            if self.stopping:
                break
            if message.id not in named:  # (route() checks again, one file read per message)
                await self.routing.route(router, message)
        if self.report.requeued or self.report.repaired or waiting:
            log.info(
                "recovered: %d task(s) pending again, %d message(s) archived, %d in processing",
                len(self.report.requeued),
                len(self.report.repaired),
                len(waiting),
            )

    # -- serving --
    async def _serve(self, channel: InboxChannel, router: MessageRouter) -> None:
        self._register(channel)
        try:
            await self.channels.start(self)
            self.ready.set()
            poll_s = self.options.poll_interval_s
            routing = asyncio.create_task(
                self.routing.forever(channel, router, self._stop, poll_s), name="router"
            )
            try:
                await self._work_forever()
            finally:
                routing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await routing
        finally:
            await self.channels.stop()

    def _register(self, inbox: InboxChannel) -> None:
        """The inbox, the schedules, email when settings turn it on, and every plugin."""
        self.channels.add(inbox)
        self.channels.add(ScheduleChannel(self.settings, self.bus))
        if self.settings.email.enabled:
            from jarvis.gateway.channels.email.channel import EmailChannel

            self.email = EmailChannel(
                self.settings, self.queue, self.todos, self.bus, on_queued=inbox.wake
            )
            self.channels.add(self.email)
        for plugin in load_plugins(self.settings, self.bus):
            self.channels.add(plugin)

    async def _work_forever(self) -> None:
        assert self.runner is not None
        self.memory.start_clock()
        await self.runner.run()

    async def _drain(self, channel: InboxChannel, router: MessageRouter) -> None:
        """``once``: import drop files, route the inbox, run pending tasks, until none (the
        runner brings in what waits before each task: :meth:`_intake`)."""
        assert self.runner is not None
        self._draining = (channel, router)
        self.ready.set()
        await self.runner.run()

    async def _intake(self) -> None:
        """Before each task of ``once``: the drop files and the inbox, routed."""
        if self._draining is not None:
            channel, router = self._draining
            await channel.scan()
            await self.routing.route_waiting(router)

    async def _compress(self) -> None:
        await self.memory.compress_if_due(self.settings)
