"""A page of the run listing (``jarvis runs``, ``GET /api/runs``): the newest runs first,
read from the run index (:mod:`jarvis.runs.index`), never from each ``run.json``.

A page ends with the cursor of the next one, ``DAY/STARTED/NAME``: the sort key of its
last run, so the next page starts right after it even when runs were added or removed
meanwhile (a run added since is on an earlier page, never twice on these).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from jarvis.runs.folder import DAY, alive, folder_name
from jarvis.runs.index import Listed, RunIndex
from jarvis.runs.run_info import RunSummary
from jarvis.task_words import INTERRUPTED

CHECKS = 3
"""Times a page is read again after rows it found were stale."""


class BadCursor(ValueError):
    """A cursor the listing did not give."""


@dataclass
class RunPage:
    """Runs newest first, and the cursor of the page after them (None: no more)."""

    runs: list[RunSummary] = field(default_factory=list)
    next: str | None = None


def page(index: RunIndex, limit: int, cursor: str | None = None) -> RunPage:
    """At most ``limit`` runs, newest first, after ``cursor`` (a page's ``next``); the rows
    are checked against their folders (a ``stat`` each) and read again when stale."""
    key = parse_cursor(cursor) if cursor else None
    index.sync()
    rows: list[Listed] = []
    for _ in range(CHECKS):
        rows = index.newest(key, limit + 1)
        if all([index.current(day, name, seen) for day, name, _, _, seen in rows]):
            break
    shown = rows[:limit]
    runs = [summary(day, name, text) for day, name, _, text, _ in shown]
    if len(rows) <= limit or not shown:
        return RunPage(runs)
    day, name, started = shown[-1][:3]
    return RunPage(runs, make_cursor(day, started, name))


def summary(day: str, name: str, text: str) -> RunSummary:
    """A row's summary, with its folder, and ``interrupted`` for an ``in_progress`` run whose
    process is gone."""
    run = RunSummary.model_validate_json(text)
    run.folder = f"runs/{day}/{name}"
    if run.status == "in_progress" and not alive(run.pid):
        run.status = INTERRUPTED
    return run


def make_cursor(day: str, started: float, name: str) -> str:
    """The cursor of the page after the run ``day/name`` (it names the run's sort key)."""
    return f"{day}/{started!r}/{name}"


def parse_cursor(cursor: str) -> tuple[str, float, str]:
    parts = cursor.split("/", 2)
    if len(parts) == 3 and DAY.fullmatch(parts[0]) and parts[2] == folder_name(parts[2]):
        try:
            started = float(parts[1])
        except ValueError:
            started = math.nan
        if math.isfinite(started):
            return parts[0], started, parts[2]
    raise BadCursor(f"{cursor[:80]!r} is not a cursor of the run listing")
