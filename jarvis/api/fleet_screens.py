"""The live view and takeover of fleet workers' screens (``serve --fleet``; DESIGN 10, 11).

- ``GET /api/workers/{name}/live`` -> {worker, host, display, live: true}: worker
  ``name``'s screen can be watched here. 404 when no such worker sends heartbeats, 409
  when it runs on another machine (its live view is not reachable from here: no VNC port
  is opened on the network for it) or its display cannot be served.
- ``WS /api/vnc/worker/{name}`` (``?ticket=`` for input): an RFB session relayed to
  x11vnc on that worker's display, which the coordinator serves on 127.0.0.1 (started on
  the first view, :mod:`jarvis.fleet.screens`); view-only without the ticket of the
  takeover of that worker. Refused (close 1008, with the reason) for a worker whose
  display is not reachable from here.
- ``POST /api/takeover`` and ``POST /api/handback`` of :mod:`jarvis.api.takeover` reach a
  worker's screen through its record in :mod:`jarvis.api.screens`: the worker is paused
  and resumed through its control stream (:mod:`jarvis.fleet.holds`), wherever it runs.
"""

from __future__ import annotations

import hmac
import logging
from functools import partial
from typing import Any

from fastapi import APIRouter, HTTPException, Request, WebSocket
from pydantic import BaseModel

from jarvis.api.fleet_parts import holds_of, screens_of
from jarvis.api.live_view import LiveView
from jarvis.api.refusals import http_status
from jarvis.api.vnc_relay import serve
from jarvis.desktop.rfb import RfbError, Upstream, logged_in
from jarvis.fleet.screens import Unreachable, WorkerScreens
from jarvis.gateway.service import DaemonService

log = logging.getLogger(__name__)
router = APIRouter(prefix="/api", tags=["takeover"])
NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


class WorkerLive(BaseModel):
    worker: str
    host: str
    display: str
    live: bool = True


def _service(app: Any) -> DaemonService:
    service: DaemonService = app.state.daemon.service
    return service


def _view(app: Any) -> LiveView:
    view: LiveView = app.state.live_view
    return view


def _screens(service: DaemonService) -> WorkerScreens:
    screens = screens_of(service)
    if screens is None:
        raise Unreachable("no_worker", "this daemon coordinates no fleet")
    return screens


@router.get("/workers/{name}/live")
async def worker_live(name: str, request: Request) -> WorkerLive:
    try:
        beat = await _screens(_service(request.app)).check(name)
    except Unreachable as exc:
        raise HTTPException(http_status(exc), exc.detail) from exc
    return WorkerLive(worker=name, host=str(beat["host"]), display=str(beat["display"]))


async def worker_vnc(websocket: WebSocket, name: str, ticket: str = "") -> None:
    """``WS /api/vnc/worker/{name}`` (the route is :func:`jarvis.api.takeover.vnc`): from
    x11vnc here for a worker on this machine, through Redis for one elsewhere."""
    service = _service(websocket.app)
    view = _view(websocket.app)
    holds = holds_of(service)
    holder = holds.holders.get(name) if holds is not None else None
    full = bool(ticket)
    if full and (holder is None or not hmac.compare_digest(ticket, holder.ticket)):
        await websocket.close(code=1008, reason="this ticket does not hold the screen")
        return
    try:
        upstream = await _upstream(_screens(service), name, full)
    except Unreachable as exc:
        log.info("no live view of worker %s: %s", name, exc.detail)
        await websocket.close(code=1008, reason=exc.detail[:120])
        return
    except (RfbError, OSError) as exc:
        log.warning("vnc relay of worker %s: %s", name, exc)
        await websocket.close(code=1011)
        return
    if not full or holds is None:
        await serve(websocket, upstream, view.closing)
        return
    view.watch_fleet(holds)
    with view.controlling(f"worker/{name}") as closed:
        await serve(websocket, upstream, closed, partial(holds.touched, name))


async def _upstream(screens: WorkerScreens, name: str, full: bool) -> Upstream:
    """Worker ``name``'s x11vnc, logged in for ``full`` access or to view only."""
    server = await screens.server(name)
    if server is None:
        return await screens.tunnel(name, "full" if full else "view")
    return await logged_in(server.port, server.full_password if full else server.view_password)
