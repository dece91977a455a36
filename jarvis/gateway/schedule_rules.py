"""When a schedule runs: a phrase (``every weekday at 09:00``) or cron syntax, in a zone.

A few phrases are read by a small parser of our own and turned into the cron expression
that means the same; cron itself is read by ``cronsim``. Both give a :class:`Rule`, whose
:meth:`Rule.next_after` walks the schedule's wall clock in its time zone (``zoneinfo``), so a
09:00 run stays at 09:00 local time across a daylight-saving change::

    every weekday at 09:00      every day at 7:30       every monday at 9
    every weekend at 10am       every hour              every 15 minutes
    0 9 * * 1-5                 (cron: minute hour day month weekday)

A time that a spring-forward skips runs at the first minute after the gap; a time that a
fall-back repeats runs once.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

DAYS = ("sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday")
"""Cron's weekday numbers are the index (0 Sunday)."""
_DAY_SETS = {"day": "*", "weekday": "1-5", "weekend": "0,6"}
_AT = re.compile(r"(\d{1,2})(?::(\d{2}))?\s*(am|pm)?")
_EVERY_DAY = re.compile(r"every\s+(\w+?)s?\s+at\s+(.+)")
_EVERY_MINUTES = re.compile(r"every\s+(\d{1,2})\s+minutes?")
EXAMPLES = "'every weekday at 09:00', 'every monday at 9', 'every hour' or cron '0 9 * * 1-5'"


class RuleError(ValueError):
    """A ``when`` or a zone that cannot be read; the message is one line."""


@dataclass(frozen=True)
class Rule:
    """A schedule's ``when``, read: the cron expression it means, in a time zone."""

    when: str
    cron: str
    tz: ZoneInfo

    def next_after(self, after: datetime) -> datetime:
        """The first run strictly after ``after`` (aware), in UTC."""
        local = after.astimezone(self.tz)
        start = local.replace(second=0, microsecond=0)
        for run in CronSim(self.cron, start):
            if run > local:
                return run.astimezone(UTC)
        raise RuleError(f"{self.when!r} never runs")  # pragma: no cover - cronsim never stops

    def last_until(self, until: datetime) -> datetime | None:
        """The latest run at or before ``until`` (aware), in UTC."""
        start = (until + timedelta(minutes=1)).astimezone(self.tz).replace(second=0, microsecond=0)
        for run in CronSim(self.cron, start, reverse=True):
            return run.astimezone(UTC) if run <= until else None
        return None  # pragma: no cover - cronsim never stops

    def runs_between(self, after: datetime, until: datetime, limit: int = 10_000) -> list[datetime]:
        """The runs in (``after``, ``until``], oldest first (at most ``limit``)."""
        runs: list[datetime] = []
        at = after
        while len(runs) < limit:
            at = self.next_after(at)
            if at > until:
                break
            runs.append(at)
        return runs


def zone(name: str) -> ZoneInfo:
    """The time zone called ``name`` (``Europe/Berlin``, ``UTC``); RuleError if none is."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise RuleError(f"unknown time zone {name!r} (use a name like Europe/Berlin)") from None


def local_zone_name() -> str:
    """The machine's time zone by name (``TZ``, else /etc/localtime's link), or ``UTC``."""
    import os
    from pathlib import Path

    named = os.environ.get("TZ", "").lstrip(":")
    if named:
        try:
            return zone(named).key
        except RuleError:
            pass
    try:
        target = str(Path("/etc/localtime").resolve())
    except OSError:
        return "UTC"
    _, found, key = target.partition("zoneinfo/")
    if found:
        try:
            return zone(key).key
        except RuleError:
            pass
    return "UTC"


@functools.lru_cache(maxsize=256)
def parse_rule(when: str, tz: str) -> Rule:
    """``when`` (a phrase or cron) in zone ``tz``; RuleError names what is wrong."""
    return Rule(when.strip(), to_cron(when), zone(tz))


def to_cron(when: str) -> str:
    """The cron expression ``when`` means; RuleError if it is neither a phrase nor cron."""
    text = " ".join(when.strip().lower().split())
    if not text:
        raise RuleError(f"no time given; say {EXAMPLES}")
    if text.startswith("every"):
        return _phrase(text)
    try:
        CronSim(text, datetime(2026, 1, 1, tzinfo=UTC))
    except CronSimError as exc:
        raise RuleError(f"cannot read {when!r}: {exc}; say {EXAMPLES}") from None
    if len(text.split()) != 5:
        raise RuleError(f"cron {when!r} needs 5 fields (minute hour day month weekday)")
    return text


def _phrase(text: str) -> str:
    if text in ("every hour", "every hour on the hour"):
        return "0 * * * *"
    if text == "every minute":
        return "* * * * *"
    minutes = _EVERY_MINUTES.fullmatch(text)
    if minutes:
        n = int(minutes.group(1))
        if n < 1 or 60 % n:
            raise RuleError(f"{text!r}: the minutes must divide an hour (1, 2, 5, 10, 15, 30)")
        return f"*/{n} * * * *"
    every = _EVERY_DAY.fullmatch(text)
    if every is None:
        raise RuleError(f"cannot read {text!r}; say {EXAMPLES}")
    day, at = every.groups()
    minute, hour = _time_of_day(at)
    if day in _DAY_SETS:
        return f"{minute} {hour} * * {_DAY_SETS[day]}"
    if day in DAYS:
        return f"{minute} {hour} * * {DAYS.index(day)}"
    raise RuleError(f"{text!r}: {day!r} is not a day (day, weekday, weekend, monday...)")


def _time_of_day(at: str) -> tuple[int, int]:
    """(minute, hour) of ``9``, ``09:00``, ``7:30``, ``9am``, ``5:15 pm``."""
    found = _AT.fullmatch(at.strip())
    if found is None:
        raise RuleError(f"{at!r} is not a time of day (say 09:00, 7:30 or 9am)")
    hour, minute = int(found.group(1)), int(found.group(2) or 0)
    half = found.group(3)
    if half is not None:
        if not 1 <= hour <= 12:
            raise RuleError(f"{at!r}: with am/pm the hour is 1 to 12")
        hour = hour % 12 + (12 if half == "pm" else 0)
    if hour > 23 or minute > 59:
        raise RuleError(f"{at!r} is not a time of day (hours 0-23, minutes 0-59)")
    return minute, hour


def utc_now() -> datetime:
    """The clock schedules use unless given another: aware, UTC."""
    return datetime.now(UTC)
