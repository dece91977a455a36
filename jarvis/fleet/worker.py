"""``jarvis worker``: one process, one desktop, one task at a time from the fleet's queue.

The agent is built as ``jarvis serve``'s is (same tools, same safety). Per claimed task:
the lease is renewed while it runs; events go to ``jarvis:events`` as they happen, the
run's files after each step in a lane of their own, its last files and what it learnt
before the outcome, which carries the lease token. SIGTERM gives the task back at once; a
lost lease cancels the run and sends no outcome. No long-term store is kept here: recalled
memories come in the task entry and what is learnt goes back (:mod:`jarvis.fleet.memory`).

Side: the worker.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from jarvis import __version__
from jarvis.config import Settings
from jarvis.desktop.backend import Where
from jarvis.events import ApprovalRequested, Event, EventBus, StepFinished, TaskFinished
from jarvis.fleet import control, holds, keys, registry
from jarvis.fleet.approvals import RELAYED_BY
from jarvis.fleet.connection import reason, wait_for_redis
from jarvis.fleet.kinds import Lent, TaskHandler, kind_of, refusing
from jarvis.fleet.memory import RelayedMemory, carried_memories
from jarvis.fleet.protocol import Claim
from jarvis.fleet.redis_queue import RedisQueue
from jarvis.fleet.shipper import Shipper, since_day
from jarvis.fleet.wire import event_fields
from jarvis.fleet.worker_views import WorkerViews
from jarvis.gateway.endings import STATUS_OF_RUN
from jarvis.gateway.worker import acting
from jarvis.safety.approvals import ApprovalGate, ApprovalStore
from jarvis.safety.channel_policy import refused_approvers

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from jarvis.agent.agent import Agent

log = logging.getLogger(__name__)
CLAIM_WAIT_S = 2.0
CONTROL_WAIT_S = 1.0
T = TypeVar("T")


@dataclass
class WorkerOptions:
    name: str
    url: str
    where: Where
    size: str
    lease_ms: int = 30_000
    heartbeat_ttl_s: int = registry.HEARTBEAT_TTL_S
    handle_signals: bool = True
    """Stop on SIGTERM and SIGINT (off for the daemon's own worker: the daemon stops it)."""
    kinds: Mapping[str, TaskHandler] = field(default_factory=dict)
    """The task kinds this worker runs, by name (the root wires them: ``--eval``, eval's)."""
    host: str = field(default_factory=socket.gethostname)
    """The host it reports: the coordinator relays the view of one elsewhere through Redis."""


class FleetWorker:
    def __init__(
        self, settings: Settings, redis: Redis, options: WorkerOptions, say: Callable[[str], None]
    ) -> None:
        self.settings = settings
        self.redis = redis
        self.options = options
        self.say = say
        self.bus = EventBus()
        self.queue = RedisQueue(redis, options.name, lease_ms=options.lease_ms)
        self.shipper = Shipper(redis, settings.data_dir, options.name)
        self.memory = RelayedMemory(self._send_note, options.name)
        refused = refused_approvers(settings.channels)
        self.approvals = ApprovalStore(self.bus, attended=True, refused_via=refused)
        """The held calls of every agent this worker runs (its tasks', an eval task's),
        answered by a person at the coordinator on the control stream."""
        self.info = registry.WorkerInfo(
            options.name, options.host, options.where.name, options.size, __version__
        )
        self.views = WorkerViews(redis, options.name, options.where, settings.takeover.enabled)
        self.info.xauthority = getattr(options.where, "xauthority", None) or ""  # X11's cookie
        self.current: Claim | None = None
        self.agent: Agent | None = None
        self._own: Agent | None = None
        self._stop = asyncio.Event()
        self._outbox: asyncio.Queue[Event | None] = asyncio.Queue()
        """Events to send; None ends a task's sending (after all posted before it)."""
        self._files_wanted = asyncio.Event()
        """Set after a step's end is sent: the files lane ships what changed."""
        self._since = ""
        """The first date folder the current run may write into (what a step's ship walks)."""
        self._files_closing = False
        """The task's end: the files lane stops (its last ship is the drain's)."""
        self.ran = 0
        self._loop_ref: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._held: set[asyncio.Task[Any]] = set()
        """Takeovers under way (a person's pause waits for the agent's typing to end)."""

    def stop(self) -> None:
        """Stop at once: the running task is cancelled and given back."""
        self._stop.set()
        if self.agent is not None and self.current is not None:
            self.agent.cancel("signal")

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        if self.options.handle_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.stop)
        from jarvis.agent.factory import build_agent
        from jarvis.tools.computer import build_registry
        from jarvis.tools.memory import register_memory_tools

        if not await wait_for_redis(self.redis, self.options.url, self.say, self._stop.is_set):
            return 0
        await self.prepare()
        gate = self._gate()
        tools = build_registry(self.settings, approvals=gate)
        register_memory_tools(tools, self.memory)  # `remember`, kept at the coordinator
        async with build_agent(
            self.settings,
            self.bus,
            where=self.options.where,
            approvals=gate,
            registry=tools,
            long_term=self.memory,
        ) as agent:
            await self.serve(agent)
        return 0

    async def prepare(self) -> None:
        """Before the agent: the queue's group, files on disk counted as sent, the bus wired."""
        self._loop_ref, self._loop_thread = asyncio.get_running_loop(), threading.get_ident()
        await self.queue.setup()
        self.shipper.prime()
        self.bus.subscribe(self._post)

    async def serve(self, agent: Agent) -> None:
        """Run tasks with ``agent`` (built on :attr:`bus`, after :meth:`prepare`) until
        stopped; ``bench/coordinator_capacity.py`` drives it with a scripted agent."""
        self.agent = self._own = agent
        self.info.views = await asyncio.to_thread(self.views.can_serve)
        self.info.frames = bool(self.options.where.name)
        helpers = [asyncio.create_task(self._heartbeat()), asyncio.create_task(self._control())]
        self.say(f"worker {self.options.name} on {self.options.where.name}: waiting for tasks")
        try:
            await self._loop(agent)
        finally:
            for helper in helpers:
                helper.cancel()
            await self.views.close()
            with suppress(Exception):
                await registry.forget(self.redis, self.options.name)

    def _gate(self) -> ApprovalGate:
        """Held calls wait for a person at the coordinator (:mod:`jarvis.fleet.approvals`)."""
        channels = self.settings.channels
        return ApprovalGate(self.settings.safety, self.approvals, channels=channels)

    def _post(self, event: Event) -> None:
        """Queue an event for sending; events come from the loop and from worker threads."""
        loop = self._loop_ref
        if loop is None:
            return
        if threading.get_ident() == self._loop_thread:
            self._outbox.put_nowait(event)
        else:
            loop.call_soon_threadsafe(self._outbox.put_nowait, event)

    async def _loop(self, agent: Agent) -> None:
        from redis.exceptions import RedisError

        while not self._stop.is_set():
            try:
                claim = await self.queue.claim(wait_s=CLAIM_WAIT_S)
            except (RedisError, OSError) as exc:
                log.warning("claiming a task failed: %s", reason(exc))
                await wait_for_redis(self.redis, self.options.url, self.say, self._stop.is_set)
                continue
            if claim is not None:
                await self._run_task(agent, claim)

    async def _run_task(self, agent: Agent, claim: Claim) -> None:
        self.current = claim
        self.info.state, self.info.task = "running", claim.task_id
        log.info("task %s (attempt %d) started", claim.task_id, claim.attempt)
        self._files_wanted.clear()
        self._files_closing = False
        self._since = since_day(time.time())
        shipping = asyncio.create_task(self._ship_files(claim.task_id))
        sender = asyncio.create_task(self._send_events(claim.task_id))
        lost = asyncio.Event()
        renewer = asyncio.create_task(self._renew(claim, agent, lost))
        self._recall(claim)
        outcome = None
        ended: tuple[str, str] | None = None
        try:
            if (kind := kind_of(claim.channels)) is not None:
                ended = await self._handled(claim, kind)
            else:
                with acting(agent.desktop):  # the on-screen sign while it runs
                    outcome = await agent.run(claim.text, claim.task_id, claim.channels)
        except Exception:  # the boundary: an agent crash becomes a failed task
            log.exception("task %s: the agent stopped with an error", claim.task_id)
        finally:
            await self._drain(sender, shipping, claim.task_id)  # the lease is still renewed
            renewer.cancel()
            self.current = None
            self.info.state, self.info.task = "idle", None
        if lost.is_set():
            log.warning("task %s: the lease was lost; no outcome sent", claim.task_id)
        elif self._stop.is_set() and (
            (outcome is None and ended is None) or (outcome and outcome.status == "cancelled")
        ):
            note = "the worker stopped (SIGTERM)"
            if await self._retrying(lambda: self.queue.give_back(claim, note), "give back"):
                self.say(f"task {claim.task_id} given back to the queue")
        else:
            status = STATUS_OF_RUN[outcome.status] if outcome else "failed"
            summary = outcome.summary if outcome else "the agent stopped with an error"
            if ended is not None:
                status, summary = ended
            if await self._retrying(
                lambda: self.queue.complete(claim, status, summary), "the outcome"
            ):
                self.ran += 1
            else:
                log.warning("task %s: outcome refused (the lease moved on)", claim.task_id)

    def _recall(self, claim: Claim) -> None:
        """The memories the task entry carried become the agent's recall (else none)."""
        raw = claim.extra.get("memories")
        memories = None if raw is None else carried_memories(raw, claim.task_id)
        self.memory.begin(claim.task_id, memories)  # off for the task when None (learns)

    async def _send_note(self, fields: dict[str, str]) -> None:
        note: Any = fields
        await self.redis.xadd(keys.EVENTS, note)

    async def _handled(self, claim: Claim, kind: str) -> tuple[str, str]:
        """A task of a kind: the handler the root wired in runs it on this desktop."""
        handler = self.options.kinds.get(kind) or refusing(f"this worker runs no {kind} tasks")
        lent = Lent(self.settings, self.bus, self.options.where, self._gate(), self._lend)
        return await handler(claim.text, claim.task_id, lent)

    def _lend(self, agent: Agent | None) -> None:
        """A kind's handler attached its agent (or detached it: the worker's own again)."""
        self.agent = agent or self._own

    async def _renew(self, claim: Claim, agent: Agent, lost: asyncio.Event) -> None:
        from redis.exceptions import RedisError

        while True:
            await asyncio.sleep(self.options.lease_ms / 3000)
            try:
                held = await self.queue.renew(claim)
            except (RedisError, OSError) as exc:
                log.warning("renewing the lease of %s failed: %s", claim.task_id, reason(exc))
                continue
            if not held:
                lost.set()
                (self.agent or agent).cancel("lease")  # an eval task's agent, if one runs
                return

    async def _send_events(self, task_id: str) -> None:
        while (event := await self._outbox.get()) is not None:
            if await self._retrying(partial(self._sent, event, task_id), event.kind) is None:
                log.warning("event %s of %s not sent: Redis is away", event.kind, task_id)

    async def _sent(self, event: Event, task_id: str) -> bool:
        await self._send(event, task_id)
        return True

    async def _send(self, event: Event, task_id: str) -> None:
        fields: Any = event_fields(event, self.options.name)
        if isinstance(event, ApprovalRequested):  # its screenshot is there when it is shown
            await self.shipper.ship(task_id, self._since)
        await self.redis.xadd(keys.EVENTS, fields)
        if isinstance(event, StepFinished | TaskFinished):
            self._files_wanted.set()  # behind the step's end on the stream, as its files

    async def _ship_files(self, task_id: str) -> None:
        """The files lane: after each step's end, the files the step recorder wrote (once
        on disk) and any other that changed; the events do not wait for it. The run's last
        files go in :meth:`_drain`, before the outcome."""
        while True:
            await self._files_wanted.wait()
            self._files_wanted.clear()
            if self._files_closing:
                return
            await self._flush_records()
            ship = partial(self.shipper.ship, task_id, self._since)
            if await self._retrying(ship, "a step's files") is None:
                return

    async def _flush_records(self) -> None:
        """Wait for the step recorder's files to be on disk (it writes in a thread)."""
        recorder = self.agent.recorder if self.agent is not None else None
        if recorder is not None:
            await asyncio.to_thread(recorder.flush)

    async def _drain(
        self, sender: asyncio.Task[Any], shipping: asyncio.Task[Any], task_id: str
    ) -> None:
        """Send what is left: the end mark goes behind events posted from threads; then
        the files lane stops (a ship under way ends first) and what changed since goes."""
        await self.memory.flush()  # what the run learnt arrives before its outcome
        asyncio.get_running_loop().call_soon_threadsafe(self._outbox.put_nowait, None)
        await sender
        self._files_closing = True
        self._files_wanted.set()
        await shipping
        await self._flush_records()
        await self._retrying(lambda: self.shipper.ship(task_id), "the run's files")

    async def _retrying(self, send: Callable[[], Awaitable[T]], what: str) -> T | None:
        """``send()``'s answer; while Redis is away, tried again once it is back (so an
        outcome, an event or a file is not lost to an outage); None when the worker stops
        first."""
        from redis.exceptions import RedisError

        while True:
            try:
                return await send()
            except (RedisError, OSError) as exc:
                log.warning("sending %s failed: %s; again once Redis is back", what, reason(exc))
            if not await wait_for_redis(self.redis, self.options.url, self.say, self._stop.is_set):
                return None

    async def _heartbeat(self) -> None:
        from redis.exceptions import RedisError

        while True:
            try:
                await registry.beat(self.redis, self.info, self.options.heartbeat_ttl_s)
            except (RedisError, OSError) as exc:
                log.warning("heartbeat failed: %s", reason(exc))
            await asyncio.sleep(min(registry.HEARTBEAT_EVERY_S, self.options.heartbeat_ttl_s / 3))

    async def _control(self) -> None:
        from redis.exceptions import RedisError

        last: Any = await self.redis.xrevrange(keys.control_key(self.options.name), count=1)
        after = last[0][0].decode() if last else "0-0"
        while True:
            try:
                after, messages = await control.read(
                    self.redis, self.options.name, after, CONTROL_WAIT_S
                )
            except (RedisError, OSError) as exc:
                log.warning("reading control messages failed: %s", reason(exc))
                await asyncio.sleep(CONTROL_WAIT_S)
                continue
            for message in messages:
                self._obey(message)

    def _obey(self, message: control.Control) -> None:
        if message.kind in control.OF_THE_DISPLAY:  # whatever runs on it
            return self.views.obey(message)
        if message.kind == "handback" and holds.held_for(self.agent, message.task):
            holds.obey(self.agent, message, self._held)  # its task may have ended meanwhile
            return
        current = self.current
        if current is None or message.task != current.task_id or self.agent is None:
            log.warning(
                "control %s for task %s ignored: this worker runs %s",
                message.kind,
                message.task,
                current.task_id if current else "nothing",
            )
            return
        if message.kind in ("cancel", "stop"):
            self.agent.cancel(message.by or message.kind)
        elif message.kind == "approval":
            self._answer(message)
        elif message.kind in ("takeover", "handback"):
            holds.obey(self.agent, message, self._held)

    def _answer(self, message: control.Control) -> None:
        from jarvis.safety.approvals import ApprovalError

        try:
            self.approvals.resolve(
                message.approval_id, message.decision, message.note, via=RELAYED_BY
            )
        except ApprovalError as exc:
            log.warning("approval answer ignored: %s", exc)
