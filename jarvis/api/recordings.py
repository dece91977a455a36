"""Recording routes of the control API: the Record button of the web panel and the TUI.

- ``POST /api/recordings {name}`` -> 201 {name, slug, display, started}: the daemon starts
  recording a person on its own desktop (the display its agent works on), as
  ``jarvis record NAME`` does. 409 while a recording runs or a task acts on that desktop;
  422 for a name without letters or digits; 503 when the display cannot be recorded (no
  RECORD extension, no display).
- ``POST /api/recordings/stop`` -> {name, slug, steps, skill, memory}: ends it, writes
  ``DATA/recordings/SLUG/`` (``skill`` is the skill file relative to the data dir, empty
  when nothing was done) and keeps it in long-term memory as a skill. 409 when none runs.
- ``GET /api/recordings`` -> {recording, recordings}: the one running now (or null) and
  the recordings on disk, newest first (name, slug, created, steps).
- ``GET /api/recordings/{slug}`` -> {name, slug, created, steps: [{number, words, crop}]}
  and ``GET /api/recordings/{slug}/files/{file}``: a step's target crop or picture.

Only one recording runs at a time; starting and stopping are serialised by a lock. A
recording still running when the daemon stops is stopped and written
(:func:`finish_recording`). While it runs, a task that arrives still acts on the desktop:
the Record button is for a desk the person has to themselves.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi import Path as PathParam
from fastapi.responses import FileResponse
from pydantic import BaseModel, ConfigDict, Field

from jarvis.api.auth import Guard
from jarvis.api.routes import IMAGE
from jarvis.desktop.x11 import XDisplay
from jarvis.gateway.service import DaemonService
from jarvis.recording.recorder import recordings_dir
from jarvis.recording.session import RecordingSession, list_recordings
from jarvis.recording.skill_file import load_recording, slug_of
from jarvis.recording.xrecord import RecordUnavailable

log = logging.getLogger(__name__)
router = APIRouter(prefix="/api", tags=["recordings"])
FILE = re.compile(r"^\d{3}-(before|after)\.jpg$|^\d{3}-target\.png$")
SLUG = r"^[a-z0-9][a-z0-9-]{0,59}$"


class RecordIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=120, description="what the task is, in words")


class RecordingNow(BaseModel):
    name: str
    slug: str
    display: str
    started: float


class RecordingEntry(BaseModel):
    name: str
    slug: str
    created: str
    steps: int


class Recordings(BaseModel):
    recording: RecordingNow | None
    recordings: list[RecordingEntry]


class RecordingStopped(BaseModel):
    name: str
    slug: str
    steps: int
    skill: str
    memory: str


class StepView(BaseModel):
    number: int
    words: str
    crop: str


class RecordingView(BaseModel):
    name: str
    slug: str
    created: str
    steps: list[StepView]


@dataclass
class Desk:
    """The recording of the daemon's desktop, if one runs."""

    service: DaemonService
    session: RecordingSession | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def now(self) -> RecordingNow | None:
        s = self.session
        if s is None:
            return None
        return RecordingNow(name=s.name, slug=s.slug, display=s.where.name, started=s.started_at)


def _desk(request: Request) -> Desk:
    desk: Desk = request.app.state.recordings
    return desk


R = Annotated[Desk, Depends(_desk)]
Slug = Annotated[str, PathParam(pattern=SLUG)]


@router.get("/recordings")
async def recordings(desk: R) -> Recordings:
    """The recording running now and those on disk."""
    found = await asyncio.to_thread(list_recordings, desk.service.data_dir)
    entries = [RecordingEntry(**vars(r)) for r in found]
    return Recordings(recording=desk.now(), recordings=entries)


@router.post("/recordings", status_code=201)
async def start(body: RecordIn, desk: R) -> RecordingNow:
    """Record a person on the daemon's desktop until ``/api/recordings/stop``."""
    async with desk.lock:
        if desk.session is not None:
            raise HTTPException(409, f"already recording {desk.session.name!r}: stop it first")
        task = desk.service.running_task()
        if task is not None:
            raise HTTPException(409, f"not recording: task {task} acts on this desktop now")
        where = desk.service.display_now()
        if not isinstance(where, XDisplay):  # XRecord: an X server's own extension
            raise HTTPException(503, "not recording: recording needs an X11 desktop (XRecord)")
        try:
            session = RecordingSession(desk.service.settings, where, body.name)
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from exc
        try:
            await asyncio.to_thread(session.start)
        except RecordUnavailable as exc:
            raise HTTPException(503, f"not recording: {exc}") from exc
        desk.session = session
        now = desk.now()
    assert now is not None
    return now


@router.post("/recordings/stop")
async def stop(desk: R) -> RecordingStopped:
    """End the recording: its skill file and its skill memory."""
    async with desk.lock:
        session = desk.session
        if session is None:
            raise HTTPException(409, "no recording runs")
        try:
            done = await asyncio.to_thread(session.stop)
        finally:
            desk.session = None
    return RecordingStopped(**vars(done))


@router.get("/recordings/{slug}")
async def recording(slug: Slug, desk: R) -> RecordingView:
    """A recording's steps in words, each with its target crop's file name."""
    try:
        _, data = await asyncio.to_thread(load_recording, desk.service.data_dir, slug)
    except (FileNotFoundError, ValueError) as exc:
        raise HTTPException(404, f"no recording {slug!r}") from exc
    steps = [StepView(number=s.number, words=s.words, crop=s.crop) for s in data.steps]
    return RecordingView(name=data.name, slug=data.slug, created=data.created, steps=steps)


@router.get("/recordings/{slug}/files/{name}", response_class=FileResponse, responses={200: IMAGE})
async def picture(slug: Slug, name: str, desk: R) -> Any:
    """A step's picture (``NNN-before.jpg``, ``NNN-after.jpg``, ``NNN-target.png``)."""
    path = recordings_dir(desk.service.data_dir) / slug_of(slug) / name
    if not FILE.match(name) or not path.is_file():
        raise HTTPException(404, "no such picture")
    return FileResponse(path, headers={"cache-control": "no-store"})


def mount_recordings(app: FastAPI, service: DaemonService) -> None:
    """Add the recording routes to ``app``."""
    app.state.recordings = Desk(service)
    app.include_router(router)


async def finish_recording(guard: Guard) -> RecordingStopped | None:
    """At the daemon's stop: a recording that still runs is stopped and written, so what
    the person showed is not lost; what it became (None when none ran)."""
    app = guard.app
    desk: Desk | None = getattr(app.state, "recordings", None) if isinstance(app, FastAPI) else None
    if desk is None or desk.session is None:
        return None
    name = desk.session.name
    try:
        return await stop(desk)
    except Exception as exc:  # the daemon stops all the same
        log.warning("the recording %r could not be written: %s", name, exc)
        return None
