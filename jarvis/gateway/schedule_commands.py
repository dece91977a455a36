"""`jarvis schedule add|list|remove|pause|resume`: tasks the daemon starts on a clock.

``add WHEN TEXT`` takes a phrase (``"every weekday at 09:00"``) or cron (``"0 9 * * 1-5"``),
``--tz`` (default: this machine's zone, written into the file by name), ``--catch-up
skip|once`` and ``--answer-to file:NAME|email|email:ADDRESS``. The schedules are kept in
``DATA/schedules.md`` (:mod:`jarvis.gateway.schedule_book`); ``jarvis serve`` runs them.
Exit codes: 0 done, 1 no such schedule, 2 bad input (one line, on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jarvis.config import Settings
    from jarvis.gateway.schedule_book import Schedule

EXIT_OK, EXIT_NOT_FOUND, EXIT_USAGE = 0, 1, 2


def register(subparsers: argparse._SubParsersAction) -> None:
    schedule = subparsers.add_parser("schedule", help="tasks the daemon starts on a clock")
    actions = schedule.add_subparsers(dest="schedule_command", required=True)
    add = actions.add_parser("add", help="add a schedule")
    add.add_argument("when", help="'every weekday at 09:00', 'every hour', or cron '0 9 * * 1-5'")
    add.add_argument("text", help="the task, as you would give it")
    add.add_argument("--tz", help="time zone by name, e.g. Europe/Berlin (default: this machine's)")
    add.add_argument(
        "--catch-up",
        choices=("skip", "once"),
        default="skip",
        help="runs missed while the daemon was stopped: skip them, or run once at start",
    )
    add.add_argument(
        "--answer-to",
        default="none",
        metavar="WHERE",
        help="file:NAME (DATA/answers/NAME.md), email (the whitelist's one sender), "
        "email:ADDRESS, or none",
    )
    add.set_defaults(handler=cmd_add)
    listing = actions.add_parser("list", help="the schedules with their next run")
    listing.add_argument("--json", action="store_true", help="one JSON document")
    listing.set_defaults(handler=cmd_list)
    for name, word in (("remove", "forget"), ("pause", "pause"), ("resume", "resume")):
        one = actions.add_parser(name, help=f"{word} a schedule")
        one.add_argument("id", help="its id, e.g. S1")
        one.set_defaults(handler=cmd_change, change=name)


def _fail(message: str) -> int:
    print(f"jarvis schedule: {message}", file=sys.stderr)
    return EXIT_USAGE


def cmd_add(args: argparse.Namespace, settings: Settings) -> int:
    from jarvis.gateway.schedule_answers import AnswerRefused, owner_address
    from jarvis.gateway.schedule_book import Schedule, ScheduleBook, ScheduleError
    from jarvis.gateway.schedule_rules import RuleError, local_zone_name, zone

    try:
        tz = zone(args.tz).key if args.tz else local_zone_name()
        schedule = Schedule(
            id="S0",
            when=" ".join(args.when.split()),
            tz=tz,
            text=args.text.strip(),
            catch_up=args.catch_up,
            answer_to=args.answer_to.strip(),
            created=datetime.now(UTC).replace(microsecond=0),
        )
        if schedule.answer_to.startswith("email"):
            owner_address(settings, schedule.answer_to)  # refused now, not at its first run
        added = ScheduleBook(settings.data_dir).add(schedule)
    except (RuleError, ScheduleError, AnswerRefused) as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot write the schedules: {exc}")
    print(f"{added.id}: {added.when} ({added.tz}); next run {_next(added)}")
    return EXIT_OK


def _next(schedule: Schedule, now: datetime | None = None) -> str:
    from jarvis.gateway.schedule_clock import next_run

    at = next_run(schedule, now or datetime.now(UTC))
    if at is None:
        return "none (paused)"
    local = at.astimezone(schedule.rule.tz)
    return f"{local:%Y-%m-%d %H:%M %Z}"


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    from jarvis.gateway.schedule_clock import listing

    rows, problems = listing(settings.data_dir)
    if args.json:
        print(json.dumps({"schedules": rows, "problems": problems}, indent=1))
        return EXIT_OK
    for row in rows:
        nxt = "paused" if row["next_run"] is None else f"next {row['next_run'][:16]}"
        first = row["text"].split("\n", 1)[0][:60]
        print(f"{row['id']}  {row['when']} ({row['tz']})  {nxt}  {first}")
    for problem in problems:
        print(f"unreadable (kept as it is): {problem}")
    if not rows and not problems:
        print('no schedules (add one: jarvis schedule add "every weekday at 09:00" "...")')
    return EXIT_OK


def cmd_change(args: argparse.Namespace, settings: Settings) -> int:
    from jarvis.gateway.schedule_book import ScheduleBook

    paused = {"remove": None, "pause": True, "resume": False}[args.change]
    try:
        was = ScheduleBook(settings.data_dir).change(args.id, paused=paused)
    except OSError as exc:
        return _fail(f"cannot write the schedules: {exc}")
    if was is None:
        print(f"jarvis schedule: no schedule {args.id} (see jarvis schedule list)", file=sys.stderr)
        return EXIT_NOT_FOUND
    done = {"remove": "removed", "pause": "paused", "resume": "resumed"}[args.change]
    print(f"{was.id} {done}: {was.when}")
    return EXIT_OK
