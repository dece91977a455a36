"""The worker's side of the live view through Redis (:mod:`jarvis.fleet.view_tunnel`).

On the first ``view`` control message the worker starts x11vnc on its own display (127.0.0.1
only, passwords made per start, :class:`~jarvis.desktop.vnc.VncServer`; on a Wayland desktop
wayvnc on private Unix sockets, :class:`~jarvis.desktop.wayvnc.WayVncServer`) and keeps it
until it stops. Each session logs in to it with the password of the access the coordinator asked
for (``full`` only for a takeover whose ticket the coordinator checked; ``view``: x11vnc
itself drops the viewer's input) and copies bytes both ways through the session's streams.
The worker opens no port of its own. A ``frames`` control message starts the pictures of
its display for a coordinator on another machine (:mod:`jarvis.fleet.frames`).

Side: the worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
from typing import TYPE_CHECKING

from jarvis.desktop.backend import Where, vnc_server
from jarvis.desktop.rfb import RfbError, splice
from jarvis.desktop.vnc import VncError, VncServer
from jarvis.desktop.wayvnc import WayVncServer
from jarvis.fleet.control import Control
from jarvis.fleet.frames import FrameSender
from jarvis.fleet.view_tunnel import TunnelEnd
from jarvis.redaction import register

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger(__name__)


def screen_size(where: Where) -> str:
    """``WIDTHxHEIGHT`` of the display's first monitor (for the heartbeat); blocking."""
    from jarvis.desktop.backend import monitor_size

    size = monitor_size(where)
    return f"{size.width}x{size.height}"


class WorkerViews:
    """Live-view sessions of this worker's display (see the module doc)."""

    def __init__(self, redis: Redis, name: str, where: Where, enabled: bool = True) -> None:
        self.redis = redis
        self.where = where
        self.enabled = enabled
        self.frames = FrameSender(redis, name, where)
        self.server: VncServer | WayVncServer | None = None
        self._lock = asyncio.Lock()
        self._sessions: set[asyncio.Task[None]] = set()

    def can_serve(self) -> bool:
        """Whether views can be served (for the heartbeat): on, and x11vnc installed for
        an X display or wayvnc for a Wayland one."""
        server = vnc_server(self.where) if self.enabled else None
        exe = "wayvnc" if isinstance(server, WayVncServer) else "x11vnc"
        return server is not None and shutil.which(exe) is not None

    def obey(self, message: Control) -> None:
        """A ``view`` (serve a session) or ``frames`` (send pictures) control message."""
        if message.kind == "frames":
            if self.where.name:
                self.frames.want(message)
            return
        self.open(message.session, message.access)

    def open(self, session: str, access: str) -> None:
        """Serve session ``session`` (a task kept until it ends)."""
        task = asyncio.create_task(self._serve(session, access), name=f"view {session}")
        self._sessions.add(task)
        task.add_done_callback(self._sessions.discard)

    async def close(self) -> None:
        """End every session and the pictures, and stop x11vnc."""
        await self.frames.close()
        for task in list(self._sessions):
            task.cancel()
        for task in list(self._sessions):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        server, self.server = self.server, None
        if server is not None:
            await asyncio.to_thread(server.stop)

    async def _serve(self, session: str, access: str) -> None:
        end = TunnelEnd(self.redis, session, out="down", into="up")
        if not self.can_serve():
            await end.close("this worker serves no live view (takeover off, or no x11vnc)")
            return
        try:
            server = await self._server()
            vnc = await server.session(access == "full")
        except (VncError, RfbError, OSError) as exc:
            await end.close(f"the VNC server: {exc}")
            return
        try:
            await end.say(ready="1")
            log.info("view %s of %s (%s) opened", session, self.where.name, access or "view")
            await splice(vnc, end)
        finally:
            await vnc.close()
            await end.close()

    async def _server(self) -> VncServer | WayVncServer:
        async with self._lock:
            if self.server is not None and self.server.running:
                return self.server
            server = vnc_server(self.where)
            if server is None:
                raise VncError(f"{self.where.name} has no VNC server")
            try:
                await asyncio.to_thread(server.start)
            except BaseException:
                await asyncio.to_thread(server.stop)
                raise
            register(server.full_password, server.view_password)
            self.server = server
            return server
