"""Live view and takeover routes of the control API (shared/DESIGN.md section 11).

- ``GET /api/takeover`` -> {held, by, since, task_id, displays: [name]}: who holds the
  screen, and the displays with a live view (``main``: the daemon's own display).
- ``POST /api/takeover {by = api, task_id?}`` -> {held, by, since, task_id, ticket}: a
  person takes the screen; the agent sends no more input. ``task_id``: a task waiting for
  the user (``call_user``) that the hand back answers; default the running task. 409 when
  someone holds it already, 403 for a channel that may not take over (email, a2a, mcp),
  503 when no agent runs. ``ticket`` opens the full-access view, for this takeover only.
- ``POST /api/handback {note?}`` -> {held: false, by, note, answered}: the agent goes on
  with a fresh screenshot and the note; ``answered`` is the task whose question the hand
  back answered (a message addressed to it, like ``POST /api/tasks/{id}/answer``).
- A task a fleet worker runs (``serve --fleet``) is taken over and handed back through
  that worker's control stream, and its screen is at ``WS /api/vnc/worker/{name}``;
  ``POST /api/handback`` takes ``task_id`` to say which worker's screen when several are
  held. The routes find every screen's record in one registry (:mod:`jarvis.api.screens`)
  and never ask which kind of screen it is.
- ``WS /api/vnc/{screen}`` (``?ticket=`` for input): an RFB session relayed to x11vnc on
  127.0.0.1 (:mod:`jarvis.api.vnc_relay`), view-only without a valid ticket. ``screen`` is
  ``main`` (the daemon's display), ``private/N`` (the private display a channel's task runs
  on, while it runs: ``GET /api/takeover`` says ``screen``) or ``worker/NAME``. The guard in
  front checks the token or cookie, Host and Origin as for every route; an unknown screen
  is refused before the handshake completes.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from fastapi import APIRouter, FastAPI, HTTPException, Request, WebSocket
from pydantic import BaseModel, ConfigDict, Field

from jarvis.api import fleet_screens
from jarvis.api.auth import Guard
from jarvis.api.fleet_parts import holds_of, screens_of
from jarvis.api.live import LiveScreen
from jarvis.api.live_view import LiveView
from jarvis.api.refusals import http_status
from jarvis.api.screens import Screens
from jarvis.gateway.service import DaemonService
from jarvis.gateway.todos import TodoState
from jarvis.safety.takeover import MAIN_SCREEN as MAIN
from jarvis.safety.takeover import MAX_NOTE, TakeoverRefused

log = logging.getLogger(__name__)
router = APIRouter(prefix="/api", tags=["takeover"])
ANSWER_CHANNELS = ("web", "tui", "api")


class TakeoverState(BaseModel):
    """Who holds the screen (``held`` false: the agent has it)."""

    held: bool
    by: str | None = None
    since: float | None = None
    task_id: str | None = None
    screen: str = MAIN
    """The screen the agent works on: the one to watch and to take over."""
    displays: list[str] = Field(default_factory=list)
    """The screens with a live view (``main``: the daemon's own; ``private/N``: a
    channel's private display while a task runs there)."""


class TakenOver(BaseModel):
    held: bool
    by: str | None = None
    since: float | None = None
    task_id: str | None = None
    screen: str = MAIN
    """The screen taken over (``/api/vnc/{screen}?ticket=``)."""
    ticket: str
    """Opens the full-access view (``/api/vnc/{screen}?ticket=``), for this takeover only."""


class HandedBack(BaseModel):
    held: bool = False
    by: str
    note: str
    answered: str | None = None
    """The task whose question the hand back answered, if one waited."""


class TakeoverIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    by: str = Field("api", pattern=r"^[a-z][a-z0-9_-]{0,39}$")
    task_id: str | None = Field(None, min_length=1, max_length=128)
    take_over: bool = False
    """Take a screen another face holds, having asked the person (their hold ends, told
    to the journal and the model as ``taken_over`` by this face)."""


class HandbackIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    note: str = Field("", max_length=MAX_NOTE)
    task_id: str | None = Field(None, min_length=1, max_length=128)
    """A fleet worker's task whose screen is handed back (default: the one held)."""
    reason: Literal["handed_back", "closed"] = "handed_back"
    by: str | None = Field(None, pattern=r"^[a-z][a-z0-9_-]{0,39}$")
    """The face handing back: refused when another face holds the screen (a hold belongs
    to whoever took it; they take it over first)."""
    """``closed``: the page that held the screen was closed (the panel says so itself)."""


def _service(app: Any) -> DaemonService:
    service: DaemonService = app.state.daemon.service
    return service


def _screens(app: Any) -> Screens:
    screens: Screens = app.state.screens
    return screens


@router.get("/takeover")
async def status(request: Request) -> TakeoverState:
    screens = _screens(request.app)
    return TakeoverState.model_validate(screens.status() | {"displays": screens.ids()})


@router.post("/takeover")
async def take(body: TakeoverIn, request: Request) -> TakenOver:
    screen = await _screens(request.app).of_task(body.task_id)
    try:
        taken = await screen.take(body.by, body.task_id, body.take_over)
    except TakeoverRefused as exc:
        raise HTTPException(http_status(exc), exc.detail) from exc
    return TakenOver.model_validate(taken.status | {"ticket": taken.ticket})


@router.post("/handback")
async def hand_back(body: HandbackIn, request: Request) -> HandedBack:
    screen = _screens(request.app).held(body.task_id)
    holder = screen.status().get("by")
    if body.by is not None and holder is not None and holder != body.by:
        raise HTTPException(409, f"{holder} has the screen: take it over first (take_over)")
    try:
        returned = await screen.hand_back(body.note, body.reason)
    except TakeoverRefused as exc:
        raise HTTPException(http_status(exc), exc.detail) from exc
    answered = None
    if returned.note:  # the agent of this process: a task waiting for the user is answered
        service = _service(request.app)
        answered = await _answer_waiting(service, returned.task_id, returned.note, returned.by)
    return HandedBack(by=returned.by, note=body.note.strip(), answered=answered)


async def _answer_waiting(
    service: DaemonService, task_id: str | None, text: str, by: str
) -> str | None:
    """A task that asked the user (``needs_user``) gets the hand back as its answer."""
    if task_id is None or service.running_task() == task_id:
        return None
    record = await service.task(task_id)
    if record is None or record.todo is None or record.todo.status != "needs_user":
        return None
    try:
        await service.answer(task_id, text, by if by in ANSWER_CHANNELS else "api")
    except (KeyError, TodoState):  # answered or ended meanwhile
        return None
    return task_id


@router.websocket("/vnc/{screen:path}")
async def vnc(websocket: WebSocket, screen: str, ticket: str = "") -> None:
    found = _screens(websocket.app).get(screen)
    if found is None:
        await websocket.close(code=1008, reason="no live view of that screen")
        return
    await found.serve_vnc(websocket, ticket)


def mount_takeover(guard: Guard, view: LiveView, live: LiveScreen) -> None:
    """Add the routes to the FastAPI app behind ``guard`` (from create_app)."""
    app = guard.app
    if not isinstance(app, FastAPI):
        raise TypeError("mount_takeover needs the guard of create_app's FastAPI app")
    app.state.live_view = view
    service = _service(app)
    app.state.screens = Screens(service, view, live)

    def close_fleet_views() -> None:  # the fleet starts after the API: looked up at the end
        screens = screens_of(service)
        if screens is not None:
            screens.close()
        holds = holds_of(service)
        if holds is not None:
            holds.close()

    view.closers.append(close_fleet_views)
    app.include_router(fleet_screens.router)
    app.include_router(router)
