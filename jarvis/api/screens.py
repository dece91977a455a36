"""The screens a person watches and takes over, looked up in one place (DESIGN section 11).

Every screen has an id and one record with the same face, whichever kind it is:

- ``main``: the daemon's own display, and ``private/N``: a channel's private display
  while a task runs there (:class:`OwnScreen`: the agent of this process, paused by its
  :class:`~jarvis.safety.takeover.ScreenHold`, watched through :class:`LiveView`'s x11vnc);
- ``worker/NAME``: a fleet worker's display (:class:`WorkerScreen`: paused through its
  control stream by :class:`~jarvis.fleet.holds.FleetHolds`, watched through x11vnc here
  or through Redis for a worker on another host).

A record says its ``status`` (held, by, since, task, screen), ``take`` s and ``hand_back`` s
it (raising :class:`~jarvis.safety.takeover.TakeoverRefused` with a reason that only
:mod:`jarvis.api.refusals` turns into an HTTP status) and serves a VNC session
(``serve_vnc``: view-only, or input with the takeover's ticket). The routes of
:mod:`jarvis.api.takeover` ask :class:`Screens` for the record (by screen id, by task, or
the one held) and never ask which kind it is; ``GET /api/screen/live`` asks it for the
picture (:meth:`Screens.picture`: the agent's display here, or in a fleet the worker's
that runs the task, :mod:`jarvis.api.fleet_live`). Both holds share the rules
(:func:`~jarvis.safety.takeover.refuse_take`, :class:`~jarvis.safety.takeover.IdleClock`).
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from typing import Any, Protocol

from fastapi import WebSocket

from jarvis.api import fleet_screens
from jarvis.api.fleet_live import LIVE, Picture, fleet_picture
from jarvis.api.fleet_parts import fleet_of, holds_of
from jarvis.api.live import LiveScreen
from jarvis.api.live_view import LiveView
from jarvis.api.vnc_relay import relay
from jarvis.gateway.runner import WORKER, worker_of_screen
from jarvis.gateway.service import DaemonService
from jarvis.safety.takeover import MAIN_SCREEN as MAIN
from jarvis.safety.takeover import ScreenHold, TakeoverRefused


@dataclass(frozen=True)
class Taken:
    status: dict[str, Any]
    ticket: str
    """Opens the full-access view of the screen, for this takeover only."""


@dataclass(frozen=True)
class Returned:
    by: str
    task_id: str | None
    note: str
    """What the model reads at its next step (the person's note in it), when it is known
    here; empty for a worker's (the worker writes it)."""


class Screen(Protocol):
    """One screen's record (see the module doc)."""

    id: str

    def status(self) -> dict[str, Any]: ...

    async def take(self, by: str, task_id: str | None, take_over: bool = False) -> Taken: ...

    async def hand_back(self, note: str, reason: str = "handed_back") -> Returned: ...

    async def serve_vnc(self, websocket: WebSocket, ticket: str) -> None: ...


class OwnScreen:
    """A display of this process's agent: ``main`` (the daemon's own), or ``private/N``
    while a task runs there. ``hold`` is None while no agent here drives it (``main`` is
    then watched only)."""

    def __init__(
        self, service: DaemonService, view: LiveView, hold: ScreenHold | None, screen: str
    ) -> None:
        self.service = service
        self.view = view
        self.hold = hold
        self.id = screen

    def status(self) -> dict[str, Any]:
        return self.hold.status() if self.hold is not None else ScreenHold.idle_status()

    async def take(self, by: str, task_id: str | None, take_over: bool = False) -> Taken:
        hold = self.hold
        if hold is None:
            raise TakeoverRefused("no_agent", "no agent runs: nothing to take over from")
        if take_over and hold.holder is not None and hold.holder.by != by:
            hold.pass_to(by)  # said so: the other face's hold ends, this one's begins
        else:
            await hold.take(by, task_id or self.service.running_task())
        self.view.watch(hold)
        self.view.ticket = secrets.token_urlsafe(24)
        return Taken(hold.status(), self.view.ticket)

    async def hand_back(self, note: str, reason: str = "handed_back") -> Returned:
        hold = self.hold
        if hold is None:
            raise TakeoverRefused("not_held", "nobody holds the screen")
        holder = hold.hand_back(note, reason)
        return Returned(holder.by, holder.task_id, hold.notes[hold.generation])

    async def serve_vnc(self, websocket: WebSocket, ticket: str) -> None:
        """A session: view-only, or input with the takeover's ticket."""
        view, hold, screen = self.view, self.hold, self.id
        server = await view.server(screen, hold)
        if server is None:
            await websocket.close(code=1008, reason="no live view of that screen")
            return
        ended = view.left.get(screen, view.closing)
        if not ticket:
            await relay(websocket, server, False, ended)
            return
        if hold is None or not view.ticket or not hmac.compare_digest(ticket, view.ticket):
            await websocket.close(code=1008, reason="this ticket does not hold the screen")
            return
        with view.controlling(screen) as closed:
            await relay(websocket, server, True, closed, hold.touched)


class WorkerScreen:
    """A fleet worker's display (``worker/NAME``), on this machine or another."""

    def __init__(self, service: DaemonService, name: str, task_id: str | None = None) -> None:
        self.service = service
        self.name = name
        self.id = WORKER + name
        self.task_id = task_id
        """The task it was found running (:meth:`Screens.of_task`)."""

    def status(self) -> dict[str, Any]:
        holds = holds_of(self.service)
        holder = holds.holders.get(self.name) if holds is not None else None
        if holder is None:
            return ScreenHold.idle_status() | {"screen": self.id}
        return holder.status()

    async def take(self, by: str, task_id: str | None, take_over: bool = False) -> Taken:
        holds = holds_of(self.service)
        task_id = task_id or self.task_id
        held = holds.holders.get(self.name) if holds is not None else None
        task_id = task_id or (held.task_id if held is not None else None)
        if holds is None or task_id is None:
            raise TakeoverRefused("no_worker", f"no task runs on worker {self.name}")
        holder = await holds.take(self.name, by, task_id, take_over)
        return Taken(holder.status(), holder.ticket)

    async def hand_back(self, note: str, reason: str = "handed_back") -> Returned:
        holds = holds_of(self.service)
        holder = holds.holders.get(self.name) if holds is not None else None
        if holds is None or holder is None:
            raise TakeoverRefused("not_held", "nobody holds the screen")
        holder = await holds.hand_back(holder.task_id, note, reason)
        return Returned(holder.by, holder.task_id, "")

    async def serve_vnc(self, websocket: WebSocket, ticket: str) -> None:
        await fleet_screens.worker_vnc(websocket, self.name, ticket)


class Screens:
    """The registry: which record a screen id, a task or a held screen names."""

    def __init__(self, service: DaemonService, view: LiveView, live: LiveScreen) -> None:
        self.service = service
        self.view = view
        self.live = live
        """The once-a-second picture of this process's display (shared by every viewer)."""

    async def picture(self, task_id: str | None, monitor: int, max_side: int) -> Picture:
        """What ``GET /api/screen/live`` shows: the display this process's agent is on, or
        in a fleet the screen of the worker that runs ``task_id`` (default: the watched
        task); raises :class:`~jarvis.api.live.NoDisplay` or
        :class:`~jarvis.api.fleet_live.NoPicture`."""
        if fleet_of(self.service) is not None:
            return await fleet_picture(self.service, self.live, task_id, monitor, max_side)
        return Picture(await self.live.frame(monitor, max_side), "image/jpeg", LIVE)

    def own(self, screen: str | None = None) -> OwnScreen:
        """A display of this process's agent: ``screen``, by default the one it is on."""
        hold = self.service.screen_hold()
        where = screen or (hold.screen if hold is not None else MAIN)
        return OwnScreen(self.service, self.view, hold, where)

    def get(self, screen: str) -> Screen | None:
        """The record of screen id ``screen``; None for an unknown one (a private screen
        no task runs on any more is unknown: :meth:`LiveView.server` says so)."""
        if screen.startswith(WORKER):
            name = worker_of_screen(screen)
            return WorkerScreen(self.service, name) if name and fleet_of(self.service) else None
        return self.own(screen)

    async def of_task(self, task_id: str | None) -> Screen:
        """The screen ``task_id`` runs on (None: the running task): a worker's when a worker
        runs it, else the agent of this process's."""
        fleet = fleet_of(self.service)
        if fleet is not None:
            running = self.service.running_task()
            wanted = task_id or (None if running else self.service.watched_task())
            worker = await fleet.worker_of(wanted) if wanted is not None else None
            if worker is not None:
                return WorkerScreen(self.service, worker, wanted)
        return self.own()

    def held(self, task_id: str | None) -> Screen:
        """The screen a person holds (for ``task_id`` when given): this process's first,
        then a worker's; else the agent's own (whose hand back says nobody holds it)."""
        own = self.own()
        if own.hold is not None and own.hold.holder is not None:
            return own
        holds = holds_of(self.service)
        for name, holder in (holds.holders if holds is not None else {}).items():
            if task_id is None or holder.task_id == task_id:
                return WorkerScreen(self.service, name)
        return own

    def status(self) -> dict[str, Any]:
        """Who holds a screen: the agent's own when held, else a held worker's, else the
        agent's own (not held)."""
        return self.held(None).status()

    def ids(self) -> list[str]:
        """The screens with a live view now (``main``, and the agent's private one)."""
        return self.view.screens(self.service.screen_hold())
