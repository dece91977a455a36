"""``DATA/schedules.md``: the schedules, one section each, a book like the todos.

A person may edit it by hand; it is read and written the way the other books are
(:mod:`jarvis.gateway.locked_file`: locked, atomic, never over an edit it has not seen).
A section that cannot be read (an unknown zone, a ``when`` that is neither a phrase nor
cron) is kept exactly as found and reported in one line; the others still run::

    ## S1: every weekday at 09:00
    - tz: Europe/Berlin
    - catch_up: skip
    - answer_to: file:report
    - paused: no
    - created: 2026-11-28 09:12:00

    Download the report from the intranet and save it as report.pdf.

``catch_up`` says what a run missed while the daemon was stopped becomes: ``skip`` none,
``once`` one run at start. ``answer_to`` is where a run's answer goes besides the event
stream: ``file:NAME`` (``DATA/answers/NAME.md``), ``email`` (the one whitelisted sender)
or ``email:ADDRESS`` (a whitelisted sender), or ``none``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from jarvis.gateway.locked_file import MarkdownFile, retrying
from jarvis.gateway.markdown import (
    Document,
    Malformed,
    Problem,
    escape_lines,
    format_timestamp,
    parse_timestamp,
    problems_of,
    render_document,
    split_sections,
    trim_blank_lines,
    unescape_lines,
)
from jarvis.gateway.schedule_rules import Rule, RuleError, parse_rule

FILE = "schedules.md"
PREAMBLE = (
    "# Schedules\n\n"
    "One section per schedule (`jarvis schedule add|list|remove|pause|resume`); "
    "edit by hand if you like."
)
CATCH_UP = ("skip", "once")
_HEADER = re.compile(r"## (S\d+):\s*(\S.*)")
_FIELD = re.compile(r"- ([a-z_]+):\s*(.*)")
_ANSWER = re.compile(r"none|email|email:[^\s@]+@[^\s@]+|file:[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_YES_NO = {"yes": True, "true": True, "no": False, "false": False}
KEYS = ("tz", "catch_up", "answer_to", "paused", "created")


class ScheduleError(ValueError):
    """A schedule that cannot be added or changed; the message is one line."""


@dataclass(frozen=True)
class Schedule:
    """One entry of ``schedules.md``."""

    id: str
    when: str
    tz: str
    text: str
    catch_up: str = "skip"
    answer_to: str = "none"
    paused: bool = False
    created: datetime | None = None
    """When it was added (UTC); runs before it are never due."""

    @property
    def rule(self) -> Rule:
        return parse_rule(self.when, self.tz)

    @property
    def key(self) -> str:
        """What its fire times are kept under: an id given again later starts afresh."""
        stamp = "" if self.created is None else f"@{self.created:%Y%m%dT%H%M%S}"
        return self.id + stamp


def _starts(line: str) -> bool:
    return line.startswith("## ")


def check_answer_to(value: str) -> str:
    """``value`` if it is an answer place (see the module doc); ScheduleError if not."""
    if not _ANSWER.fullmatch(value):
        raise ScheduleError(
            f"answer_to {value!r}: say file:NAME (letters, digits, . _ -), email, "
            "email:ADDRESS or none"
        )
    return value


def check(schedule: Schedule) -> Schedule:
    """The schedule if every field can be used; ScheduleError (or RuleError) names one."""
    schedule.rule  # noqa: B018 - reading the rule checks `when` and the zone
    if schedule.catch_up not in CATCH_UP:
        raise ScheduleError(f"catch_up {schedule.catch_up!r}: say skip or once")
    check_answer_to(schedule.answer_to)
    if not schedule.text.strip():
        raise ScheduleError("a schedule needs the task's text")
    return schedule


def parse_section(lines: list[str]) -> Schedule:
    """One section; ValueError (a RuleError or ScheduleError) says what is wrong."""
    header = _HEADER.fullmatch(lines[0].rstrip())
    if header is None:
        raise ScheduleError("the header is not '## S<number>: <when>'")
    fields: dict[str, str] = {}
    rest = lines[1:]
    while rest and (field := _FIELD.fullmatch(rest[0].rstrip())) is not None:
        rest.pop(0)
        key, value = field.groups()
        if key not in KEYS:
            raise ScheduleError(f"unknown field {key!r} (known: {', '.join(KEYS)})")
        fields[key] = value.strip()
    if "tz" not in fields:
        raise ScheduleError("no '- tz:' line (time zones are explicit: Europe/Berlin, UTC)")
    paused = fields.get("paused", "no").lower()
    if paused not in _YES_NO:
        raise ScheduleError(f"paused {paused!r}: say yes or no")
    created = fields.get("created")
    text = "\n".join(unescape_lines(trim_blank_lines(rest), _starts)).strip()
    return check(
        Schedule(
            id=header.group(1),
            when=header.group(2).strip(),
            tz=fields["tz"],
            text=text,
            catch_up=fields.get("catch_up", "skip"),
            answer_to=fields.get("answer_to", "none"),
            paused=_YES_NO[paused],
            created=_created(created),
        )
    )


def _created(value: str | None) -> datetime | None:
    """``2026-11-28 09:12:00 UTC`` (a time without a zone is read as UTC too)."""
    if not value:
        return None
    return parse_timestamp(value.removesuffix("UTC").strip()).replace(tzinfo=UTC)


def parse_schedules(text: str) -> Document[Schedule]:
    preamble, sections = split_sections(text, _starts)
    doc: Document[Schedule] = Document(preamble=preamble)
    seen: set[str] = set()
    for section in sections:
        try:
            schedule = parse_section(section.lines)
            if schedule.id in seen:
                raise ScheduleError(f"{schedule.id} is used twice")
        except (ValueError, RuleError) as exc:
            doc.items.append(Malformed(section.raw, str(exc), section.line))
            continue
        seen.add(schedule.id)
        doc.items.append(schedule)
    return doc


def format_schedule(s: Schedule) -> str:
    lines = [
        f"## {s.id}: {s.when}",
        f"- tz: {s.tz}",
        f"- catch_up: {s.catch_up}",
        f"- answer_to: {s.answer_to}",
        f"- paused: {'yes' if s.paused else 'no'}",
    ]
    if s.created is not None:
        lines.append(f"- created: {format_timestamp(s.created.astimezone(UTC))} UTC")
    body = escape_lines(s.text.strip().split("\n"), _starts)
    return "\n".join([*lines, "", *body])


class ScheduleBook:
    """``DATA/schedules.md``: read (with its problems) and changed safely."""

    def __init__(self, data_dir: Path) -> None:
        self.file = MarkdownFile(Path(data_dir) / FILE)

    @property
    def path(self) -> Path:
        return self.file.path

    def load(self) -> Document[Schedule]:
        return parse_schedules(self.file.read().text)

    def problems(self, doc: Document[Schedule] | None = None) -> list[Problem]:
        """One line each for the sections that cannot be read."""
        return problems_of(self.path, doc if doc is not None else self.load())

    def add(self, schedule: Schedule) -> Schedule:
        """Add ``schedule`` (its id is given here: one more than any in the file)."""
        check(schedule)

        def operation() -> Schedule:
            snapshot = self.file.read()
            doc = parse_schedules(snapshot.text)
            if snapshot.stamp is None:
                doc.preamble = PREAMBLE
            used = [int(n) for n in re.findall(r"^## S(\d+)", snapshot.text, re.MULTILINE)]
            added = replace(schedule, id=f"S{max(used, default=0) + 1}")
            doc.items.append(added)
            self.file.replace(snapshot, render_document(doc, format_schedule))
            return added

        with self.file.locked():
            return retrying(operation, f"adding to {self.path}")

    def change(self, schedule_id: str, *, paused: bool | None = None) -> Schedule | None:
        """Remove the schedule (``paused`` None) or pause/resume it; the schedule as it
        was, or None when there is no such (readable) entry."""

        def operation() -> Schedule | None:
            snapshot = self.file.read()
            doc = parse_schedules(snapshot.text)
            for n, item in enumerate(doc.items):
                if isinstance(item, Schedule) and item.id.lower() == schedule_id.lower():
                    if paused is None:
                        del doc.items[n]
                    else:
                        doc.items[n] = replace(item, paused=paused)
                    self.file.replace(snapshot, render_document(doc, format_schedule))
                    return item
            return None

        with self.file.locked():
            return retrying(operation, f"changing {self.path}")
