"""``GET /api/schedules``: the schedules of ``DATA/schedules.md`` with their next run
(read-only; ``jarvis schedule`` changes them). The web panel and the TUI list them."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter
from pydantic import BaseModel

from jarvis.api.routes import D
from jarvis.gateway.schedule_clock import listing

router = APIRouter(prefix="/api")


class ScheduleView(BaseModel):
    id: str
    when: str
    tz: str
    text: str
    catch_up: str
    answer_to: str
    paused: bool
    next_run: str | None
    """ISO 8601 in the schedule's own zone; null while paused."""


class Schedules(BaseModel):
    schedules: list[ScheduleView]
    problems: list[str]
    """One line per entry of schedules.md that cannot be read (kept in the file as it is)."""


@router.get("/schedules")
async def schedules(d: D) -> Schedules:
    """The schedules and their next runs."""
    rows, problems = await asyncio.to_thread(listing, d.data_dir)
    return Schedules(schedules=[ScheduleView(**row) for row in rows], problems=problems)
