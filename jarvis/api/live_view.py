"""The live views of the screens Jarvis drives (shared/DESIGN.md section 11): the x11vnc
of ``main`` (the daemon's display, started with the API) and of ``private/N`` (a channel's
private display while a task runs there), and the person's open views of every screen,
``worker/NAME`` included, closed when their takeover ends or the screen goes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING

from jarvis.desktop.backend import Where, vnc_server
from jarvis.desktop.vnc import VncError, VncServer
from jarvis.desktop.wayvnc import WayVncServer
from jarvis.gateway.runner import WORKER
from jarvis.redaction import register
from jarvis.safety.takeover import MAIN_SCREEN as MAIN
from jarvis.safety.takeover import ScreenHold

if TYPE_CHECKING:
    from jarvis.config import Settings
    from jarvis.fleet.holds import FleetHolds

log = logging.getLogger(__name__)


class LiveView:
    """The x11vnc servers of the screens Jarvis drives (``main``: the daemon's display,
    started with the API; ``private/N``: a channel's private display while a task runs
    there, started at its first view and stopped when the task leaves it), and the
    person's open views."""

    def __init__(self) -> None:
        self.servers: dict[str, VncServer | WayVncServer] = {}
        self.ticket = ""
        """Opens the full-access view of the daemon's own screen (a fleet worker's takeover
        has a ticket of its own, :class:`~jarvis.fleet.holds.FleetHolder`)."""
        self.control: dict[str, set[asyncio.Event]] = {}
        """The person's open full-access views, per screen; closed when its takeover ends."""
        self.closing = asyncio.Event()
        self.left: dict[str, asyncio.Event] = {}
        """Per private screen, set when the agent leaves it: its views close."""
        self._watched: set[int] = set()
        self._starting = asyncio.Lock()
        self.closers: list[Callable[[], None]] = []
        """Called by :meth:`close` (blocking, in a thread): the fleet's live views."""

    def end_control(self) -> None:
        """The daemon's takeover ended: close its full-access views, forget the ticket."""
        self.ticket = ""
        for screen in [s for s in self.control if not s.startswith(WORKER)]:
            self._close_control(screen)

    def end_worker_control(self, worker: str) -> None:
        """The takeover of fleet worker ``worker`` ended: close its full-access views."""
        self._close_control(WORKER + worker)

    def _close_control(self, screen: str) -> None:
        for closed in list(self.control.get(screen, ())):
            closed.set()

    @contextlib.contextmanager
    def controlling(self, screen: str) -> Iterator[asyncio.Event]:
        """A full-access view of ``screen`` while inside: the event closes it."""
        closed = asyncio.Event()
        self.control.setdefault(screen, set()).add(closed)
        try:
            yield closed
        finally:
            self.control.get(screen, set()).discard(closed)

    def watch(self, hold: ScreenHold) -> None:
        if id(hold) not in self._watched:
            self._watched.add(id(hold))
            hold.on_end.append(self.end_control)
            hold.on_move.append(self._left)

    def watch_fleet(self, holds: FleetHolds) -> None:
        if id(holds) not in self._watched:
            self._watched.add(id(holds))
            holds.on_end.append(self.end_worker_control)

    def screens(self, hold: ScreenHold | None) -> list[str]:
        """The screens with a live view now: ``main``, and the agent's private one."""
        found = set(self.servers)
        if hold is not None and hold.where is not None and MAIN in self.servers:
            found.add(hold.screen)  # served at its first view
        return sorted(found)

    async def server(self, screen: str, hold: ScreenHold | None) -> VncServer | WayVncServer | None:
        """The running VNC server of ``screen``; a private one is started now if needed."""
        if screen == MAIN or hold is None or hold.where is None or screen != hold.screen:
            server = self.servers.get(screen)
            return server if server is not None and server.running else None
        async with self._starting:
            server = self.servers.get(screen)
            if server is None or not server.running:
                server = vnc_server(hold.where)
                if server is None:
                    return None
                try:
                    await asyncio.to_thread(server.start)
                except VncError as exc:
                    log.warning("no live view of %s: %s", screen, exc)
                    return None
                register(server.full_password, server.view_password)
                self.watch(hold)
                if hold.screen != screen:  # the task left it meanwhile
                    await asyncio.to_thread(server.stop)
                    return None
                self.servers[screen] = server
                self.left[screen] = asyncio.Event()
        return server

    def _left(self, screen: str) -> None:
        """The agent left ``screen``: a private one's views close and its x11vnc stops."""
        server = self.servers.pop(screen, None) if screen != MAIN else None
        if server is None:
            return
        self.left.pop(screen, asyncio.Event()).set()
        self.end_control()
        try:  # x11vnc ends within a moment (SIGTERM, then a short wait): not on the loop
            asyncio.get_running_loop().run_in_executor(None, server.stop)
        except RuntimeError:
            server.stop()

    def close(self) -> None:
        self.closing.set()
        self.ticket = ""
        for screen in list(self.control):  # every screen's full-access views, workers' too
            self._close_control(screen)
        for left in self.left.values():
            left.set()
        for server in self.servers.values():
            server.stop()
        for closer in self.closers:
            closer()


@contextlib.asynccontextmanager
async def live_view(settings: Settings, where: Where | None) -> AsyncIterator[LiveView]:
    """The VNC server of the daemon's display ``where`` while inside (when
    ``takeover.enabled``: x11vnc on X11, wayvnc on Wayland, when installed; otherwise no
    display has a live view and the panel keeps its JPEG)."""
    view = LiveView()
    server = vnc_server(where) if settings.takeover.enabled and where is not None else None
    if server is not None:
        try:
            try:
                await asyncio.to_thread(server.start)
            except BaseException:  # cancelled while it starts: the thread's x11vnc ends too
                await asyncio.to_thread(server.stop)
                raise
        except VncError as exc:
            log.warning("no live view: %s", exc)
        else:
            register(server.full_password, server.view_password)
            view.servers[MAIN] = server
    try:
        yield view
    finally:
        await asyncio.to_thread(view.close)
