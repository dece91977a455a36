"""``jarvis serve --fleet URL``: the gateway as the fleet's coordinator.

The daemon keeps its channels, router, ``todos.md``, journal, API and approvals; in place
of its local agent worker (or beside it, with ``--local-worker``) it runs the
:class:`~jarvis.fleet.coordinator.FleetCoordinator` loop: what workers sent, the janitor,
dispatch. Without Redis the channels still take messages into the inbox and the router
makes tasks; they wait, pending, and are dispatched when Redis answers again (said once in
the log per outage). A person's cancel or ``jarvis stop`` of a task a worker runs goes to
that worker's control stream. With long-term memory on, the daemon's store is the fleet's
(:mod:`jarvis.fleet.memory`). ``--local-worker`` runs one worker in this process, on the
daemon's display (:mod:`jarvis.fleet.local_worker`).

:class:`FleetRunner` is the gateway's :class:`~jarvis.gateway.runner.Runner` for this; the
root (``serve_command``) makes it with :func:`fleet_runner` and the gateway hands it the
state they share (:class:`~jarvis.gateway.runner.Shared`).

Side: the coordinator.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from jarvis.fleet import control, keys, registry
from jarvis.fleet.approvals import FleetApprovals
from jarvis.fleet.connection import client, reason, wait_for_redis
from jarvis.fleet.coordinator import FleetCoordinator
from jarvis.fleet.holds import FleetHolds
from jarvis.fleet.local_worker import LocalWorker
from jarvis.fleet.memory import MemoryKeeper
from jarvis.fleet.redis_queue import text
from jarvis.fleet.screens import WorkerScreens, viewable
from jarvis.gateway.endings import emit_replies, settle_ended
from jarvis.gateway.runner import WORKER, RunnerFactory, Shared, WorkerInfo
from jarvis.safety.channel_policy import refused_approvers

if TYPE_CHECKING:
    from jarvis.events import Event
    from jarvis.gateway.message_format import Message

log = logging.getLogger(__name__)
TICK_WAIT_S = 0.5
ERROR_PAUSE_S = 1.0


def fleet_runner(url: str, *, local_worker: bool = False) -> RunnerFactory:
    """The gateway's runner for ``serve --fleet URL [--local-worker]``."""

    async def open_fleet(shared: Shared, stack: AsyncExitStack) -> FleetRunner:
        runner = FleetRunner(shared, url, local_worker=local_worker)
        stack.push_async_callback(runner.aclose)
        return runner

    return open_fleet


class FleetRunner:
    """The coordinator's loop inside one gateway (see the module doc)."""

    def __init__(self, shared: Shared, url: str, *, local_worker: bool = False) -> None:
        self.shared = shared
        self.url = url
        self.redis = client(url)
        settings = shared.settings
        fleet = settings.fleet
        self.approvals = FleetApprovals(self.redis, shared.approvals)
        self.coordinator = FleetCoordinator(
            self.redis,
            shared.todos,
            settings.data_dir,
            shared.bus,
            inbox=shared.queue,
            books=shared.books,
            lease_ms=int(fleet.lease_s * 1000),
            max_attempts=fleet.max_attempts,
            on_event=self._on_event,
            memory=MemoryKeeper(shared.bridge) if shared.bridge is not None else None,
        )
        self.local = LocalWorker(settings, url, shared.display) if local_worker else None
        """The worker in this process (``--local-worker``), on the daemon's display."""
        self.up = False
        """Redis answered and the streams are set up."""
        self._screens: WorkerScreens | None = None
        self._holds: FleetHolds | None = None
        self._ran_by: dict[str, str] = {}
        """The worker each started task last sent an event from (its screen)."""

    def _on_event(self, event: Event, worker: str) -> bool:
        if event.task_id and worker:
            self._ran_by[event.task_id] = worker
        return self.approvals.on_event(event, worker)

    async def run(self) -> None:
        """Until the gateway stops: tick, and wait for Redis with backoff when it is gone."""
        from redis.exceptions import RedisError

        local = asyncio.create_task(self.local.run()) if self.local is not None else None
        try:
            while not self.shared.stopping():
                if not await wait_for_redis(
                    self.redis, self.url, log.warning, self.shared.stopping
                ):
                    return
                try:
                    await self.coordinator.setup()
                    self.up = True
                    await self._serve()
                except (RedisError, OSError) as exc:
                    self.up = False
                    log.warning("the fleet's Redis failed: %s; tasks wait", reason(exc))
                except Exception:  # the boundary: a bug must not stop the daemon
                    self.up = False
                    log.exception("the fleet's loop failed; starting it again")
                    await asyncio.sleep(ERROR_PAUSE_S)
        finally:
            if local is not None:  # its running task goes back to the queue first
                self.stop()
                await local
            await self.approvals.close()

    def stop(self) -> None:
        """The daemon stops: so does its local worker (its task goes back to the queue)."""
        if self.local is not None:
            self.local.stop()

    async def _serve(self) -> None:
        """Three lanes, so none waits for another: what workers send, handled as soon as
        it comes; dispatch as soon as the router made a task; and the rounds of the
        janitor, dispatch and settling every TICK_WAIT_S. The first to fail (Redis went
        away) ends all three; when the daemon stops, the outcomes already read are written
        first."""

        stopping = self.shared.stopping
        receiving = asyncio.create_task(self.coordinator.receiver.run(stopping, TICK_WAIT_S))
        lanes = [
            receiving,
            asyncio.create_task(self._dispatch_on_work(), name="fleet-dispatch"),
            asyncio.create_task(self._rounds(), name="fleet-rounds"),
        ]
        try:
            done, _ = await asyncio.wait(lanes, return_when=asyncio.FIRST_COMPLETED)
            for lane in done:
                lane.result()  # its error, if any
            await receiving  # the rounds saw the daemon stop: so does the receiver, soon
        finally:
            for lane in lanes:
                lane.cancel()
            await asyncio.gather(*lanes, return_exceptions=True)
            self._report()

    def _report(self) -> None:
        """The runs whose outcomes were written go to the daemon's report."""
        self.shared.report.runs.extend(self.coordinator.runs)
        for run in self.coordinator.runs:
            self._ran_by.pop(run.todo_id, None)
        self.coordinator.runs.clear()

    async def _dispatch_on_work(self) -> None:
        """Dispatch a task as soon as the router made it, not at the next round (up to
        TICK_WAIT_S). Under the books' lock, as an outcome is written: a task is never
        read in progress here while its ending is written."""
        from redis.exceptions import RedisError

        work = self.shared.work
        while not self.shared.stopping():
            await work.wait()
            work.clear()
            try:
                async with self.shared.books:
                    await self.coordinator.dispatch()
            except (RedisError, OSError) as exc:  # the rounds notice, and wait for Redis
                log.debug("dispatch on new work failed: %s", reason(exc))

    async def _rounds(self) -> None:
        while not self.shared.stopping():
            await self._tick()
            await asyncio.sleep(TICK_WAIT_S)

    async def _tick(self) -> None:
        """The janitor, then dispatch (under the books' lock: an outcome may be written
        meanwhile by the receiving lane), then settling."""
        swept = self.coordinator.swept = await self.coordinator.janitor.sweep()
        for task_id in swept.again + swept.failed:  # its worker is gone: so is what it asked
            self.approvals.forget_task(task_id, "the worker that asked is gone")
        async with self.shared.books:
            await self.coordinator.dispatch()
        self._report()
        await self.settle()

    async def aclose(self) -> None:
        await self.redis.aclose()

    async def settle(self) -> list[Message]:
        """Answer the messages of tasks that ended without a run (a cancel before dispatch,
        a status set by hand); not those a worker may still be running."""
        shared = self.shared
        async with shared.books:  # (an outcome is not written meanwhile)
            running = set(self.coordinator.started)
            settled = await asyncio.to_thread(settle_ended, shared.todos, shared.queue, running)
        out: list[Message] = []
        for todo, answered in settled:
            emit_replies(shared.bus, todo.id, answered, todo.status, todo.summary or "")
            out += answered
        return out

    # -- control of a task a worker runs --
    async def worker_of(self, task_id: str) -> str | None:
        """The worker that holds the lease of ``task_id`` now; None when none does."""
        from redis.exceptions import RedisError

        try:
            worker = await self.redis.hget(keys.lease_key(task_id), "worker")
        except (RedisError, OSError) as exc:
            log.warning("who runs %s is unknown: %s", task_id, reason(exc))
            return None
        return text(worker) if worker else None

    async def cancel(self, task_id: str, by: str, kind: str = "cancel") -> bool:
        """Send a cancel (or a stop) to the worker running ``task_id``; False when none."""
        from redis.exceptions import RedisError

        worker = await self.worker_of(task_id)
        if worker is None:
            return False
        try:
            await control.send(self.redis, worker, control.Control(kind, task_id, by=by))
        except (RedisError, OSError) as exc:
            log.warning("%s of %s did not reach %s: %s", kind, task_id, worker, reason(exc))
            return False
        log.info("task %s: %s sent to worker %s (by %s)", task_id, kind, worker, by)
        return True

    def screen(self, task_id: str) -> str | None:
        """``worker/NAME`` of the worker that last sent an event of ``task_id`` while it
        runs (the lease says for sure: :meth:`worker_of`)."""
        if task_id not in self.coordinator.started:
            return None
        worker = self._ran_by.get(task_id)
        return f"{WORKER}{worker}" if worker else None

    async def workers(self) -> list[WorkerInfo]:
        """The live workers, by name; empty while Redis is away."""
        found = []
        screens = self.screens()
        for beat in await self.heartbeats():
            try:
                live = screens.enabled and viewable(beat)
                found.append(worker_info(beat, live))
            except (KeyError, TypeError, ValueError, OverflowError):
                log.warning("a heartbeat of worker %r is malformed; skipped", beat.get("name"))
        return found

    async def heartbeats(self) -> list[dict[str, Any]]:
        """The workers' last heartbeats; empty while Redis is away."""
        from redis.exceptions import RedisError

        try:
            return await registry.workers(self.redis)
        except (RedisError, OSError) as exc:
            log.warning("listing the workers failed: %s", reason(exc))
            return []

    # -- the workers' screens (the API's takeover of a worker) --
    def screens(self) -> WorkerScreens:
        """The live views of the workers on this machine."""
        if self._screens is None:
            self._screens = WorkerScreens(self.redis, self.shared.settings.takeover.enabled)
        return self._screens

    def holds(self) -> FleetHolds:
        """Who holds which worker's screen (a person's takeover)."""
        if self._holds is None:
            settings = self.shared.settings
            refused = refused_approvers(settings.channels)
            self._holds = FleetHolds(self.redis, settings.takeover.idle_end_s, refused)
        return self._holds


def worker_info(beat: dict[str, Any], live: bool = False) -> WorkerInfo:
    """A worker as its heartbeat says."""
    task = beat.get("task")
    return WorkerInfo(
        name=str(beat["name"]),
        host=str(beat.get("host", "")),
        display=str(beat.get("display", "")),
        size=str(beat.get("size", "")),
        version=str(beat.get("version", "")),
        state=str(beat.get("state", "")),
        task=str(task) if task else None,
        last_heartbeat=datetime.fromtimestamp(float(beat["heartbeat"]), UTC),
        live=live,
    )
