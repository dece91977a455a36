"""Which schedules are due now: the book, the fire times kept, and a clock.

Each schedule's last handled run (fired, skipped while paused, or skipped by
``catch_up: skip``) is kept in ``DATA/schedules.state.json`` (written atomically), so a
restart never fires a run twice. A run that came while the daemon was running fires; runs
that came while it was stopped (before :class:`Scheduler` started) follow the schedule's
``catch_up``: ``skip`` none of them, ``once`` one run at start. A paused schedule's runs are
passed over, and resuming it does not bring them back. At most one run of a schedule fires
per :meth:`Scheduler.tick`.

The clock is given (aware datetimes): tests turn it by hand, across a daylight-saving
change, without sleeping.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jarvis.events import EventBus
from jarvis.fsutil import atomic_write_text
from jarvis.gateway.markdown import Document, ProblemLog
from jarvis.gateway.schedule_book import Schedule, ScheduleBook, parse_schedules
from jarvis.gateway.schedule_rules import utc_now

log = logging.getLogger(__name__)

STATE_FILE = "schedules.state.json"
Clock = Callable[[], datetime]


@dataclass(frozen=True)
class Fire:
    """One run to start now: ``at`` is the run's time (UTC)."""

    schedule: Schedule
    at: datetime
    caught_up: bool = False
    """A run missed while the daemon was stopped (``catch_up: once``)."""

    @property
    def message_id(self) -> str:
        """The same run always makes the same inbox message (a second submit is a no-op)."""
        return f"s-{self.schedule.id}-{self.at:%Y%m%dT%H%MZ}"


class FireTimes:
    """``DATA/schedules.state.json``: the last handled run of each schedule."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._times: dict[str, datetime] = {}
        self._dirty = False
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            for key, value in data.get("last", {}).items():
                self._times[key] = datetime.fromisoformat(value).astimezone(UTC)
        except FileNotFoundError:
            pass
        except (OSError, ValueError, AttributeError, TypeError) as exc:
            log.warning("%s cannot be read (%s); runs are counted from now", path, exc)

    def get(self, key: str) -> datetime | None:
        return self._times.get(key)

    def set(self, key: str, at: datetime) -> None:
        if self._times.get(key) != at:
            self._times[key] = at
            self._dirty = True

    def save(self) -> None:
        if not self._dirty:
            return
        last = {key: at.isoformat() for key, at in sorted(self._times.items())}
        atomic_write_text(self.path, json.dumps({"last": last}, indent=1) + "\n")
        self._dirty = False


class Scheduler:
    """Finds due runs; see the module doc."""

    def __init__(
        self,
        book: ScheduleBook,
        *,
        clock: Clock = utc_now,
        times: FireTimes | None = None,
        bus: EventBus | None = None,
    ) -> None:
        self.book = book
        self.clock = clock
        self.times = times or FireTimes(book.path.with_name(STATE_FILE))
        self.started = clock()
        self._problems = ProblemLog(bus)
        self._read: tuple[str, Document[Schedule]] | None = None
        self._next: dict[tuple[str, str, str, datetime], datetime] = {}
        """The first run after a base, per schedule: a look finds nothing due cheaply."""

    def tick(self) -> list[Fire]:
        """The runs due now (the fire times are updated in memory: :meth:`commit` keeps
        them once the runs are in the inbox)."""
        now = self.clock()
        doc = self.load()
        fires = []
        for schedule in doc.entries():
            fire = self._due(schedule, now)
            if fire is not None:
                fires.append(fire)
        return fires

    def commit(self) -> None:
        self.times.save()

    def load(self) -> Document[Schedule]:
        """The book, its unreadable sections reported once (a log line and an event)."""
        text = self.book.file.read().text
        if self._read is None or self._read[0] != text:
            doc = parse_schedules(text)
            self._problems.report(self.book.problems(doc))
            self._read = (text, doc)
        return self._read[1]

    def _due(self, schedule: Schedule, now: datetime) -> Fire | None:
        key = schedule.key
        base = self.times.get(key) or schedule.created
        if base is None:  # written by hand without a `created`: its runs count from now
            self.times.set(key, now)
            return None
        rule = schedule.rule
        seen = (key, schedule.when, schedule.tz, base)
        first = self._next.get(seen)
        if first is None:
            first = self._next[seen] = rule.next_after(base)
        if first > now:
            return None
        del self._next[seen]
        latest = rule.last_until(now)
        if latest is None or latest <= base:
            return None
        self.times.set(key, latest)
        if schedule.paused:
            return None
        if latest >= self.started:
            return Fire(schedule, latest)
        if schedule.catch_up == "once":
            return Fire(schedule, latest, caught_up=True)
        log.info("schedule %s: run(s) missed while stopped are skipped (catch_up: skip)", key)
        return None


def next_run(schedule: Schedule, now: datetime) -> datetime | None:
    """When ``schedule`` runs next after ``now`` (UTC); None while paused."""
    return None if schedule.paused else schedule.rule.next_after(now)


def listing(data_dir: Path, now: datetime | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Each schedule of the book as a plain dict (``next_run``: ISO in its own zone, None
    while paused), and one line per section that cannot be read (for ``jarvis schedule
    list``, the API, the panel and the TUI)."""
    book = ScheduleBook(data_dir)
    doc = book.load()
    now = now or utc_now()
    rows = []
    for s in doc.entries():
        at = next_run(s, now)
        rows.append(
            {
                "id": s.id,
                "when": s.when,
                "tz": s.tz,
                "text": s.text,
                "catch_up": s.catch_up,
                "answer_to": s.answer_to,
                "paused": s.paused,
                "next_run": None if at is None else at.astimezone(s.rule.tz).isoformat(),
            }
        )
    name = book.path.name
    return rows, [f"{name}:{p.line}: {p.reason}: {p.excerpt}" for p in book.problems(doc)]
