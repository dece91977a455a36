"""``jarvis serve --fleet URL --local-worker``: one worker of the fleet inside the daemon.

It is a :class:`~jarvis.fleet.worker.FleetWorker` like any ``jarvis worker`` (same factory,
tools and safety; it claims from the same stream group, sends a heartbeat, answers its
control stream, relays what it learns to the coordinator's memory), on the daemon's own
display, with a scratch data dir of its own that is removed when it stops. The daemon's
stop (SIGTERM, Ctrl+C) stops it: its running task goes back to the queue.

Side: the coordinator.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import socket
import tempfile
from pathlib import Path

from jarvis.config import Settings
from jarvis.desktop.backend import Where
from jarvis.fleet.commands import NAME, worker_settings
from jarvis.fleet.connection import client
from jarvis.fleet.worker import FleetWorker, WorkerOptions
from jarvis.fleet.worker_views import screen_size

log = logging.getLogger(__name__)


def local_name() -> str:
    """``local-HOST-PID`` (``local-PID`` for a host name a worker name cannot hold)."""
    name = f"local-{socket.gethostname()}-{os.getpid()}"
    return name if NAME.match(name) else f"local-{os.getpid()}"


class LocalWorker:
    def __init__(self, settings: Settings, url: str, where: Where) -> None:
        self.settings = settings
        self.url = url
        self.where = where
        self.name = local_name()
        self.worker: FleetWorker | None = None
        self._stopped = False

    def stop(self) -> None:
        self._stopped = True
        if self.worker is not None:
            self.worker.stop()

    async def run(self) -> None:
        """Until stopped; a failure is logged (the coordinator goes on without it)."""
        scratch = Path(tempfile.mkdtemp(prefix="jarvis-local-worker-"))
        redis = client(self.url)
        try:
            size = await asyncio.to_thread(screen_size, self.where)
            fleet = self.settings.fleet
            options = WorkerOptions(
                self.name,
                self.url,
                self.where,
                size,
                lease_ms=int(fleet.lease_s * 1000),
                heartbeat_ttl_s=fleet.heartbeat_ttl_s,
                handle_signals=False,
            )
            self.worker = FleetWorker(
                worker_settings(self.settings, scratch), redis, options, log.info
            )
            if self._stopped:
                self.worker.stop()
            await self.worker.run()
            log.info("local worker %s stopped after %d task(s)", self.name, self.worker.ran)
        except Exception:  # the boundary: the daemon's own worker must not stop the daemon
            log.exception("the local worker %s stopped on an error", self.name)
        finally:
            await redis.aclose()
            shutil.rmtree(scratch, ignore_errors=True)
