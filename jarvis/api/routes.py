"""The endpoints under ``/api`` (the wire format is in :mod:`jarvis.api`)."""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Header, HTTPException, Query, Request, Response
from fastapi import Path as PathParam
from fastapi.responses import FileResponse, StreamingResponse
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from jarvis import __version__
from jarvis.api.auth import COOKIE, LoginCodes, cookie_value
from jarvis.api.fleet_live import NoPicture
from jarvis.api.fleet_parts import is_fleet
from jarvis.api.live import LiveScreen, NoDisplay
from jarvis.api.models import (
    Health,
    Runs,
    TaskWords,
    Todos,
    TodoView,
    Workers,
    WorkerView,
)
from jarvis.api.screens import Screens
from jarvis.api.stream import EventHub, event_stream
from jarvis.api.views import (
    IMAGE_SUFFIXES,
    TaskView,
    approval_screenshot,
    latest_screenshot,
    safe_screenshot,
    steps_of,
    task_view,
    todo_view,
)
from jarvis.gateway.channels.registry import ChannelRefused
from jarvis.gateway.message_format import MAX_MESSAGE_CHARS
from jarvis.gateway.service import DaemonService, Submitted, TaskRecord
from jarvis.gateway.todos import TodoState
from jarvis.runs.listing import BadCursor
from jarvis.task_words import SHOWN, STATUSES

COOKIE_MAX_AGE_S = 30 * 24 * 3600
Channel = Literal["web", "tui", "api"]
TEXT_MAX = MAX_MESSAGE_CHARS
TASK_ID_MAX = 128


def _printable_ascii(value: str) -> str:
    if not (value.isascii() and value.isprintable()):
        raise ValueError("a task id is printable ASCII")
    return value


TaskId = Annotated[
    str, PathParam(min_length=1, max_length=TASK_ID_MAX), AfterValidator(_printable_ascii)
]
"""A task id in a path: a longer one or one with other characters is a 422 (as a run
folder's name it would be a 500)."""
SEQ = re.compile(r"[0-9]{1,18}")
REPLY_TO_MAX = 500


@dataclass
class Daemon:
    """What the routes work with: the daemon's service (every operation on tasks), the
    event hub, the token, the login codes and the live screen."""

    service: DaemonService
    hub: EventHub
    token: str
    codes: LoginCodes
    heartbeat_s: float = 15.0
    live: LiveScreen = field(init=False)
    """The display the agent works on now (the service says which)."""

    def __post_init__(self) -> None:
        self.live = LiveScreen(self.service.display_now)

    @property
    def data_dir(self) -> Path:
        return self.service.data_dir


def daemon(request: Request) -> Daemon:
    found: Daemon = request.app.state.daemon
    return found


D = Annotated[Daemon, Depends(daemon)]
router = APIRouter(prefix="/api")


class MessageIn(BaseModel):
    text: str = Field(min_length=1, max_length=TEXT_MAX)
    channel: str = Field("api", pattern=r"^[a-z][a-z0-9_-]{0,39}$")
    """Any channel the gateway knows (built in, a plugin, or a ``channels.NAME`` block)."""
    priority: int | Literal["high", "normal", "low"] | None = None
    reply_to: str | None = Field(None, max_length=REPLY_TO_MAX)
    """Where the channel answers (a bridge's chat or thread id); in the task's reply_ready."""


class AnswerIn(BaseModel):
    text: str = Field(min_length=1, max_length=TEXT_MAX)
    channel: Channel | Literal["mcp"] = "api"
    """Who answers: a person's client, or the MCP server answering its own task."""


class Queued(BaseModel):
    message_id: str
    channel: str
    task_id: str | None = None

    @classmethod
    def of(cls, submitted: Submitted) -> Queued:
        return cls(
            message_id=submitted.message_id, channel=submitted.channel, task_id=submitted.task_id
        )


class TokenIn(BaseModel):
    token: str = Field(max_length=512)


@router.post("/messages", status_code=201)
async def submit(body: MessageIn, d: D) -> Queued:
    """A message into the inbox; the router makes it a task (or merges it into one)."""
    try:
        submitted = await d.service.submit(
            body.text, body.channel, priority=body.priority, reply_to=body.reply_to
        )
    except ChannelRefused as exc:
        if exc.retry_after_s is None:
            raise HTTPException(422, str(exc)) from exc
        wait = str(max(1, round(exc.retry_after_s)))
        raise HTTPException(429, str(exc), headers={"Retry-After": wait}) from exc
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from exc
    return Queued.of(submitted)


@router.get("/todos")
async def todos(d: D) -> Todos:
    items = await d.service.tasks()
    return Todos(todos=[TodoView.model_validate(todo_view(t)) for t in items])


@router.get("/tasks/{task_id}")
async def task(task_id: TaskId, d: D, events: bool = True) -> TaskView:
    """The todo, its latest run, its steps and (``events=false`` leaves them out) its
    journal lines."""
    record = await d.service.task(task_id)
    if record is None:
        raise HTTPException(404, f"no task {task_id}")
    return _task_view(record, events)


def _task_view(record: TaskRecord, with_events: bool) -> TaskView:
    records = record.events
    steps, verdict = steps_of(records)
    view = TaskView(
        task_id=record.task_id,
        todo=TodoView.model_validate(todo_view(record.todo)) if record.todo else None,
        run=record.run,
        steps=steps,
        verification=verdict,
        last_seq=records[-1]["seq"] if records else 0,
        events=records if with_events else None,
    )
    return task_view(view)


class CancelIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    by: Literal["tui", "web", "api", "mcp"] = "api"
    """Which brake it was (recorded as the task's ``stopped_by``)."""


@router.post("/tasks/{task_id}/cancel", status_code=202)
async def cancel(
    task_id: TaskId, d: D, body: Annotated[CancelIn | None, Body()] = None
) -> TodoView:
    """A person's cancel: the task ends ``cancelled`` (a running one stops within a moment),
    recorded as stopped by ``by`` (the TUI's Esc sends tui, the web panel's button web).
    The answer is the task, as ``GET /api/todos`` gives it."""
    by = (body or CancelIn()).by
    try:
        todo = await d.service.cancel(task_id, by)
    except KeyError:
        raise HTTPException(404, f"no task {task_id}") from None
    except TodoState as exc:
        raise HTTPException(409, str(exc)) from exc
    return TodoView.model_validate(todo_view(todo))


@router.post("/tasks/{task_id}/answer", status_code=202)
async def answer(task_id: TaskId, body: AnswerIn, d: D) -> Queued:
    """An answer to a task (its ``call_user`` question): a message addressed to it."""
    try:
        submitted = await d.service.answer(task_id, body.text, body.channel)
    except KeyError:
        raise HTTPException(404, f"no task {task_id}") from None
    except TodoState as exc:
        raise HTTPException(409, str(exc)) from exc
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from exc
    return Queued.of(submitted)


@router.get(
    "/events",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "Server-Sent Events"}},
)
async def events(
    d: D,
    after: Annotated[int | None, Query(ge=0)] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """Server-Sent Events: ``id`` = seq, ``event`` = kind, ``data`` = the journal line."""
    cursor = after
    if last_event_id is not None and last_event_id.strip():
        cursor = event_seq(last_event_id)
    return StreamingResponse(
        event_stream(d.hub, d.data_dir, cursor, d.heartbeat_s),
        media_type="text/event-stream",
        headers={"cache-control": "no-store", "x-accel-buffering": "no"},
    )


def event_seq(header: str) -> int:
    """A ``Last-Event-ID``: ASCII digits that fit a seq, else 400."""
    value = header.strip()
    if SEQ.fullmatch(value) is None:
        raise HTTPException(400, "Last-Event-ID must be a sequence number")
    return int(value)


@router.get("/workers")
async def workers(d: D) -> Workers:
    """The fleet's workers (``jarvis serve --fleet``); empty for a daemon without one."""
    found = await d.service.workers()
    return Workers(
        fleet=is_fleet(d.service),
        workers=[WorkerView.model_validate(w.__dict__) for w in found],
    )


@router.get("/runs")
async def runs(
    d: D,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    cursor: Annotated[str | None, Query(max_length=400)] = None,
) -> Runs:
    """A page of runs, newest first, from the run index; ``next`` is the cursor of the
    page after it (null after the oldest run)."""
    try:
        page = await d.service.runs(limit, cursor)
    except BadCursor as exc:
        raise HTTPException(400, str(exc)) from None
    return Runs(runs=page.runs, next=page.next)


BINARY = {"schema": {"type": "string", "format": "binary"}}
IMAGE: dict[str, Any] = {"content": {m: BINARY for m in sorted(set(IMAGE_SUFFIXES.values()))}}
"""The 200 of a route that answers with a stored screenshot (PNG or JPEG)."""


@router.get("/screenshots/{path:path}", response_class=FileResponse, responses={200: IMAGE})
async def screenshot(path: str, d: D) -> FileResponse:
    """A stored screenshot, ``path`` relative to ``memory/screenshots/``; anything that
    leaves that folder is 404."""
    found = await asyncio.to_thread(safe_screenshot, d.data_dir, path)
    if found is None:
        raise HTTPException(404, "no such screenshot")
    return _image(found)


@router.get("/screen/latest", response_class=FileResponse, responses={200: IMAGE})
async def screen_latest(d: D) -> FileResponse:
    """The screenshot of the running (or last) task's latest step."""
    records = await d.service.latest_events()
    found = await asyncio.to_thread(latest_screenshot, d.data_dir, records)
    if found is None:
        raise HTTPException(404, "no screenshot yet")
    return _image(found)


@router.get("/screen/live", response_class=Response, responses={200: IMAGE})
async def screen_live(
    d: D,
    request: Request,
    task_id: Annotated[
        str | None, Query(min_length=1, max_length=TASK_ID_MAX, pattern=r"^[ -~]+$")
    ] = None,
) -> Response:
    """The display the agent works on now (the private one under ``serve --sandbox``) as
    JPEG, scaled like the model's screenshots; 503 when no display can be captured. In a
    fleet, the screen of the worker that runs the watched task (or ``task_id``); for a
    worker on another machine the task's last step screenshot, marked
    ``x-jarvis-screen: last-step`` (:mod:`jarvis.api.fleet_live`); 404/409 when there is
    nothing to show."""
    settings = d.service.settings
    screens: Screens = request.app.state.screens
    try:
        picture = await screens.picture(task_id, settings.monitor, settings.max_side)
    except NoDisplay as exc:
        raise HTTPException(503, str(exc)) from exc
    except NoPicture as exc:
        raise HTTPException(exc.status, exc.detail) from exc
    return Response(picture.data, media_type=picture.media_type, headers=picture.headers())


@router.get(
    "/approvals/{approval_id}/screenshot", response_class=FileResponse, responses={200: IMAGE}
)
async def approval_shot(approval_id: str, d: D) -> FileResponse:
    """The screen at the moment of an approval request (its event's ``screenshot``); 404
    for an id the gate does not make, or a file that is not plainly in ``approvals/``."""
    found = await asyncio.to_thread(approval_screenshot, d.data_dir, approval_id)
    if found is None:
        raise HTTPException(404, "no such approval screenshot")
    return _image(found)


def _image(path: Path) -> FileResponse:
    media = IMAGE_SUFFIXES[path.suffix.lower()]
    return FileResponse(path, media_type=media, headers={"cache-control": "no-store"})


@router.get("/task-words")
async def task_words() -> TaskWords:
    """The status words of every task and how a person reads each (the web panel's)."""
    return TaskWords(statuses=list(STATUSES), shown=SHOWN)


@router.get("/health")
async def health(d: D) -> Health:
    state = d.service.state()
    return Health(
        version=__version__,
        pid=os.getpid(),
        ready=state.ready,
        running=state.running,
        last_seq=max(d.hub.last_seq, state.last_seq),
    )


@router.post("/login", status_code=204)
async def login(body: TokenIn, d: D, response: Response) -> None:
    """The token, once, for a browser session cookie (the panel's login form)."""
    from jarvis.api.auth import bearer_ok

    if not bearer_ok(f"Bearer {body.token}", d.token):
        raise HTTPException(401, "wrong token")
    set_cookie(response, d.token)


class LoginLink(BaseModel):
    path: str
    """``/login?code=...``: opens one browser session, once (``jarvis login`` prints it)."""


@router.post("/login/link", status_code=201)
async def login_link(d: D) -> LoginLink:
    """A fresh one-time login link for a browser, for a client that has the token."""
    return LoginLink(path=f"/login?code={d.codes.issue()}")


@router.post("/logout", status_code=204)
async def logout(response: Response) -> None:
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")


def set_cookie(response: Response, token: str) -> None:
    response.set_cookie(
        COOKIE,
        cookie_value(token),
        max_age=COOKIE_MAX_AGE_S,
        path="/",
        httponly=True,
        samesite="strict",
    )
