"""``jarvis serve``: the gateway daemon. Channels in, the router, one agent worker, replies out.

One daemon per data dir: :class:`~jarvis.gateway.serve_lock.ServeLock` holds an fcntl
lock on ``DATA/serve.lock`` (released by the OS when the process dies, even by ``kill -9``)
and writes who holds it into the file, so a second ``serve`` can say so.

:meth:`Gateway.run` first recovers from a crash, in this order:

1. tasks left ``in_progress`` go back to ``pending`` with a note;
2. messages in ``processing.md`` whose task already ended are archived with its outcome
   (a crash between the todos.md write and the archive write; nothing runs again);
3. the other messages in ``processing.md`` are routed again; one that a task already names
   is left alone (routing is idempotent per message id), so no task is created twice.

Then it runs on one asyncio loop: the channels (:mod:`jarvis.gateway.channels`: the inbox,
with drop files and edits of ``inbox.md``; email when settings turn it on; every
``jarvis.channels`` entry point), the routing loop (claims inbox messages one at a time,
most urgent first, and lets the :class:`MessageRouter` merge each into an open task or make
a new one; without a reachable model a message becomes a new task) and the runner it was
given (:mod:`jarvis.gateway.runner`: by default one agent worker, :mod:`jarvis.gateway.worker`),
which answers with ``ReplyReady`` events that the channel registry hands to the channel
that asked. A message the router cannot take (the model
refuses its key, a bug) goes back to the inbox with a ``routing_failed`` event and is tried
again after a backoff (doubling from ``routing_retry_s``). When idle, the embedded runner repairs
half-recorded endings and, with long-term memory on, runs the memory compressor every
``compress_every_s``.

Every task's events are journaled (:mod:`jarvis.runs.journal`, ``runs/DATE/TASK_ID/``);
``services`` (the HTTP control API, :mod:`jarvis.api`) run while the data dir is held.
:meth:`Gateway.submit` takes a message of any known channel (within its rate limit);
:meth:`Gateway.notify` routes a new inbox message at once; :meth:`Gateway.cancel_task` is a
person's cancel.

``once`` processes what is waiting (drop files, the inbox, pending tasks) and returns.
:meth:`Gateway.stop` (wired to SIGTERM and SIGINT) cancels the running task, which goes back
to pending, and returns cleanly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jarvis.config import Settings
from jarvis.desktop.x11 import XDisplay
from jarvis.events import EventBus, RoutingFailed
from jarvis.gateway.channels.registry import Channels, load_plugins
from jarvis.gateway.channels.settings import refused_approvers
from jarvis.gateway.message_format import Message
from jarvis.gateway.queue import MessageQueue
from jarvis.gateway.router import Backoff
from jarvis.gateway.runner import (
    GatewayReport,
    MainScreen,
    Runner,
    RunnerFactory,
    Shared,
    open_embedded,
)
from jarvis.gateway.serve_lock import ServeLock
from jarvis.gateway.todos import Todo, TodoList, TodoState
from jarvis.redaction import register_settings
from jarvis.runs.journal import JournalWriter
from jarvis.safety.approvals import ApprovalGate, ApprovalStore

__all__ = ["Gateway", "GatewayOptions", "GatewayReport"]

if TYPE_CHECKING:
    from jarvis.gateway.channels.email.channel import EmailChannel
    from jarvis.gateway.channels.inbox import InboxChannel
    from jarvis.gateway.router import MessageRouter
    from jarvis.llm.base import Provider
    from jarvis.memory.long_term import LongTermMemory
    from jarvis.memory.recall import MemoryBridge
    from jarvis.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

ROUTING_RETRY_MAX_S = 300.0


# --- the daemon ---------------------------------------------------------------------
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
    """First wait before a message whose routing failed is tried again (doubling, at most
    ``ROUTING_RETRY_MAX_S``)."""
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
        self.runner: Runner | None = None
        """What runs the tasks, once :meth:`run` assembled it (it stays for a look after)."""
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
        self._memory: LongTermMemory | None = None
        self._bridge: MemoryBridge | None = None
        self._books = asyncio.Lock()
        self._stop = asyncio.Event()
        self._work = asyncio.Event()
        self._backoff = Backoff(self.options.routing_retry_s, ROUTING_RETRY_MAX_S)
        """Messages whose routing failed wait in the inbox until tried again."""
        self._next_compress = 0.0
        self._arrived: asyncio.Event | None = None
        self._draining: tuple[InboxChannel, MessageRouter] | None = None
        self.journal = JournalWriter.for_settings(settings, self.bus, channel=self._channel_of)
        self.serve_lock = ServeLock(settings.data_dir)
        """Held while :meth:`run` runs; the API records where it listens in it (clients
        find the daemon through :mod:`jarvis.discovery`)."""
        """The run journal of every task this daemon runs (closed when :meth:`run` ends)."""
        self.services: list[Callable[[], AbstractAsyncContextManager[Any]]] = []
        self.approvals = ApprovalStore(self.bus, refused_via=refused_approvers(settings.channels))
        """Risky calls waiting for a person; answered through the control API."""
        self.channels = Channels(settings, self.bus)
        """The registered channels, the names messages may come from, their rate limits."""
        """Started once the data dir is held, stopped when :meth:`run` ends (the HTTP API)."""

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
            with self.serve_lock, self._signals():
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
        todo = self.todos.get(todo_id)
        return todo.source if todo is not None else None

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

    @contextlib.contextmanager
    def _signals(self) -> Any:
        if not self.options.handle_signals:
            yield
            return
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stop)
        try:
            yield
        finally:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)

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
        registry = await self._open_memory(stack, gate)
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
            bridge=self._bridge,
            registry=registry,
            once=self.options.once,
            intake=self._intake,
            idle=self._maybe_compress,
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

        memory = self._memory
        return MessageRouter(
            self.todos,
            provider,
            timeout_s=self.options.router_timeout_s,
            bus=self.bus,
            candidates=self.settings.router.candidates,
            embed=embedder_of(memory.embedding) if memory is not None else None,
        )

    async def _open_memory(self, stack: AsyncExitStack, gate: ApprovalGate) -> ToolRegistry | None:
        """With long-term memory on, open it here (the compressor needs the store too)."""
        if not self.settings.long_term_memory:
            return None
        from jarvis.agent.factory import open_long_term
        from jarvis.tools.computer import build_registry

        registry = build_registry(self.settings, approvals=gate)
        self._bridge = await open_long_term(self.settings, stack, registry)
        if self._bridge is None:  # the model cannot load: said once; tasks run without it
            self.settings = self.settings.model_copy(update={"long_term_memory": False})
            return registry
        self._memory = self._bridge.memory
        return registry

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
                await self._route(router, message)
        if self.report.requeued or self.report.repaired or waiting:
            log.info(
                "recovered: %d task(s) pending again, %d message(s) archived, %d in processing",
                len(self.report.requeued),
                len(self.report.repaired),
                len(waiting),
            )

    # -- routing --
    async def _route(self, router: MessageRouter, message: Message) -> bool:
        try:
            async with self._books:
                routed = await router.route(message)
        except Exception as exc:  # the boundary: the message waits in the inbox
            await self._routing_failed(message, exc)
            return False
        self._backoff.routed(message.id)
        if routed.action != "existing":
            self.report.routed += 1
            log.info("message %s -> %s (%s)", message.id, routed.todo.id, routed.action)
        return True

    async def _routing_failed(self, message: Message, exc: Exception) -> None:
        """Back to the inbox with a backoff, and said where a person sees it."""
        from jarvis.gateway.router import failure_text

        wait = self._backoff.failed(message.id)
        error, bug = failure_text(exc)
        # (a bug's traceback goes to the log; a provider's answer is one line)
        log.error("message %s waits in the inbox: %s", message.id, error, exc_info=bug)
        try:
            await asyncio.to_thread(self.queue.release, message.id)
        except Exception:  # it stays in processing; recovery routes it at the next start
            log.exception("message %s could not go back to the inbox", message.id)
        self.bus.emit(
            RoutingFailed(
                message_id=message.id, channel=message.channel, error=error, retry_in_s=wait
            )
        )

    async def _route_waiting(self, router: MessageRouter) -> int:
        """Claim and route inbox messages one by one; those whose routing failed wait
        until their backoff is over."""
        routed = 0
        while not self.stopping:
            held = self._backoff.held()
            claimed = await asyncio.to_thread(self.queue.claim_next, held)
            if claimed is None:
                break
            routed += await self._route(router, claimed)
        if routed:
            self._work.set()
        return routed

    async def _route_forever(self, channel: InboxChannel, router: MessageRouter) -> None:
        while not self.stopping:
            await self._route_waiting(router)
            await _wait_any([channel.arrived, self._stop], self.options.poll_interval_s)
            channel.arrived.clear()

    # -- serving --
    async def _serve(self, channel: InboxChannel, router: MessageRouter) -> None:
        self._register(channel)
        try:
            await self.channels.start(self)
            self.ready.set()
            routing = asyncio.create_task(self._route_forever(channel, router), name="router")
            try:
                await self._work_forever()
            finally:
                routing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await routing
        finally:
            await self.channels.stop()

    def _register(self, inbox: InboxChannel) -> None:
        """The inbox, email when settings turn it on, and every installed plugin channel."""
        self.channels.add(inbox)
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
        self._next_compress = time.monotonic()
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
            await self._route_waiting(router)

    async def _maybe_compress(self) -> None:
        every = self.options.compress_every_s
        if self._memory is None or not every or time.monotonic() < self._next_compress:
            return
        self._next_compress = time.monotonic() + every
        from jarvis.memory.maintenance import upkeep

        try:
            await asyncio.to_thread(upkeep, self.settings, self._memory)
        except Exception:  # the boundary: upkeep must not stop the daemon
            log.exception("long-term memory compression failed; trying again in %gs", every)
            return
        self.report.compressions += 1


async def _wait_any(events: list[asyncio.Event], timeout: float) -> None:
    """Until one of ``events`` is set, or ``timeout`` seconds."""
    waiters = [asyncio.create_task(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
