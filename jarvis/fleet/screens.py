"""The live view of fleet workers' displays, served by the coordinator (DESIGN section 11).

A worker on the coordinator's machine is reached on loopback like the daemon's own
display: its heartbeat names its host, display and cookie file, and when the host is this
one, the coordinator starts x11vnc on that display (127.0.0.1 only, passwords made per
start, :class:`~jarvis.desktop.vnc.VncServer`), once, on the first view asked for, and
keeps it while the worker stays on that display. A worker on another host is watched
through Redis when its heartbeat says it serves its own view (``views``: x11vnc on its own
loopback, :mod:`jarvis.fleet.view_tunnel`); no VNC port is ever opened on the network for
it. One that does not has no live view from here (:class:`Unreachable` says so); it can
still be paused and resumed through its control stream (:mod:`jarvis.fleet.holds`).

Side: the coordinator.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
from typing import TYPE_CHECKING, Any

from jarvis.desktop.vnc import VncError, VncServer
from jarvis.fleet import keys
from jarvis.fleet.frames import RemoteFrames
from jarvis.fleet.view_tunnel import TunnelEnd, TunnelError, open_view
from jarvis.redaction import register

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger(__name__)


class Unreachable(Exception):
    """No live view of that worker from here; ``why``: ``no_worker`` (none such now),
    ``not_reachable`` (its display cannot be served from here), ``down`` (Redis does not
    answer, or the daemon stops). The API maps each to its HTTP status."""

    def __init__(self, why: str, detail: str) -> None:
        super().__init__(detail)
        self.why = why
        self.detail = detail


def viewable(beat: dict[str, Any]) -> bool:
    """Whether worker ``beat``'s display can be watched from here: directly, or through
    Redis (it serves its own view)."""
    return why_not_here(beat) is None or bool(beat.get("views"))


def why_not_here(beat: dict[str, Any], host: str | None = None) -> str | None:
    """Why worker ``beat``'s display cannot be served from this machine; None when it can
    (same host, an X display named, its cookie file readable here)."""
    name, here = beat.get("name"), host or socket.gethostname()
    if beat.get("host") != here:
        return (
            f"worker {name} runs on host {beat.get('host')!r}, not on this machine "
            f"({here!r}): its live view is not reachable from here"
        )
    display = beat.get("display")
    if not isinstance(display, str) or not display.startswith(":"):
        return f"worker {name} has no local X display to show"
    cookie = beat.get("xauthority") or ""
    if cookie and not os.access(cookie, os.R_OK):
        return f"worker {name}'s display {display} does not let this process in"
    return None


class WorkerScreens:
    """x11vnc per local worker display, started on demand (see the module doc)."""

    def __init__(self, redis: Redis, enabled: bool = True) -> None:
        self.redis = redis
        self.enabled = enabled
        self.servers: dict[str, tuple[tuple[str, str], VncServer]] = {}
        """Per worker: (display, cookie file) it serves, and its x11vnc."""
        self._locks: dict[str, asyncio.Lock] = {}
        self._closed = False
        self.frames = RemoteFrames(redis)
        """The pictures of workers on other hosts (``GET /api/screen/live``)."""

    async def beat(self, name: str) -> dict[str, Any] | None:
        """Worker ``name``'s last heartbeat; None when it has none (gone, or no such)."""
        raw = await self.redis.get(keys.worker_key(name))
        if raw is None:
            return None
        try:
            beat = json.loads(raw)
        except ValueError:
            return None
        return beat if isinstance(beat, dict) and beat.get("name") == name else None

    async def check(self, name: str) -> dict[str, Any]:
        """Worker ``name``'s heartbeat when its live view can be served from here; raises
        :class:`Unreachable` otherwise."""
        from redis.exceptions import RedisError

        if not self.enabled:
            raise Unreachable("not_reachable", "the live view is off (takeover.enabled is false)")
        try:
            beat = await self.beat(name)
        except (RedisError, OSError) as exc:
            raise Unreachable("down", "the fleet's Redis does not answer") from exc
        if beat is None:
            raise Unreachable("no_worker", f"no worker {name} has sent a heartbeat lately")
        why = why_not_here(beat)
        if why is not None and not beat.get("views"):
            raise Unreachable("not_reachable", why)
        return beat

    async def server(self, name: str) -> VncServer | None:
        """A running x11vnc on worker ``name``'s display when it is on this machine
        (started now if needed); None when its view comes through Redis (:meth:`tunnel`)."""
        beat = await self.check(name)
        if why_not_here(beat) is not None:
            return None
        where = (str(beat["display"]), str(beat.get("xauthority") or ""))
        lock = self._locks.setdefault(name, asyncio.Lock())
        async with lock:
            if self._closed:
                raise Unreachable("down", "the daemon is stopping")
            known = self.servers.get(name)
            if known is not None and known[0] == where and known[1].running:
                return known[1]
            if known is not None:  # the worker moved to another display, or x11vnc ended
                self.servers.pop(name, None)
                await asyncio.to_thread(known[1].stop)
            server = VncServer(where[0], where[1] or None)
            try:
                try:
                    await asyncio.to_thread(server.start)
                except BaseException:  # cancelled while it starts: its x11vnc ends too
                    await asyncio.to_thread(server.stop)
                    raise
            except VncError as exc:
                raise Unreachable(
                    "not_reachable", f"worker {name}'s display cannot be served: {exc}"
                ) from exc
            register(server.full_password, server.view_password)
            self.servers[name] = (where, server)
            log.info("live view of worker %s (%s)", name, where[0])
            return server

    async def tunnel(self, name: str, access: str) -> TunnelEnd:
        """A live-view session with worker ``name`` on another host, through Redis."""
        from redis.exceptions import RedisError

        try:
            return await open_view(self.redis, name, access)
        except TunnelError as exc:
            raise Unreachable("not_reachable", str(exc)) from exc
        except (RedisError, OSError) as exc:
            raise Unreachable("down", "the fleet's Redis does not answer") from exc

    def running(self, name: str) -> VncServer | None:
        known = self.servers.get(name)
        return known[1] if known is not None and known[1].running else None

    def close(self) -> None:
        """Stop every x11vnc (blocking: call in a thread)."""
        self._closed = True
        for _where, server in list(self.servers.values()):
            server.stop()
        self.servers.clear()
