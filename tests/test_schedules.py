"""Schedules (issue 39 part 2): the rules, the book, and which runs fire, with a clock the
test turns by hand (no sleeping): a weekday 09:00 across both of Berlin's 2026 clock
changes, catch_up after a stop, a restart that must not fire twice, and a hand-broken
entry that costs nothing but one line."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from jarvis.cli import build_parser
from jarvis.config import load_settings
from jarvis.doctor import check_schedules
from jarvis.events import ReplyReady
from jarvis.gateway.schedule_answers import AnswerRefused, answer_file, deliver_answer
from jarvis.gateway.schedule_book import Schedule, ScheduleBook, parse_schedules
from jarvis.gateway.schedule_clock import Fire, Scheduler, next_run
from jarvis.gateway.schedule_rules import RuleError, parse_rule, to_cron
from tests.agent_harness import agent_settings
from tests.email_mail import ALICE, JARVIS
from tests.email_servers import PASSWORD, SmtpSink, free_port
from tests.email_setup import email_values, smtp, write_whitelist

__all__ = ["smtp"]

ROOT = Path(__file__).resolve().parent.parent
BERLIN = "Europe/Berlin"


class Clock:
    """A clock the test sets."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


def add(book: ScheduleBook, when: str, created: datetime, **fields: str) -> Schedule:
    return book.add(
        Schedule("S0", when, fields.pop("tz", BERLIN), "do it", created=created, **fields)
    )  # type: ignore[arg-type]


def minutes(start: datetime, end: datetime, step: int = 1) -> Iterator[datetime]:
    at = start
    while at < end:
        yield at
        at += timedelta(minutes=step)


# --- rules ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("when", "cron"),
    [
        ("every weekday at 09:00", "0 9 * * 1-5"),
        ("Every  day at 7:30", "30 7 * * *"),
        ("every monday at 9", "0 9 * * 1"),
        ("every sundays at 5:15 pm", "15 17 * * 0"),
        ("every weekend at 10am", "0 10 * * 0,6"),
        ("every hour", "0 * * * *"),
        ("every 15 minutes", "*/15 * * * *"),
        ("0 9 * * 1-5", "0 9 * * 1-5"),
    ],
)
def test_phrases_and_cron_become_the_same_rule(when: str, cron: str) -> None:
    assert to_cron(when) == cron


@pytest.mark.parametrize(
    "when", ["every blursday at 9", "every day at 25:00", "every 7 minutes", "61 * * * *", ""]
)
def test_a_when_that_cannot_be_read_is_one_line(when: str) -> None:
    with pytest.raises(RuleError) as err:
        to_cron(when)
    assert "\n" not in str(err.value) and str(err.value)


def test_an_unknown_zone_is_refused() -> None:
    with pytest.raises(RuleError, match="unknown time zone 'Mars/Base'"):
        parse_rule("every hour", "Mars/Base")


# --- firing across daylight saving ---------------------------------------------------
@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        # spring forward on Sunday 2026-03-29: 09:00 CET is 08:00 UTC, 09:00 CEST 07:00 UTC
        (
            datetime(2026, 3, 26, 0, 0, tzinfo=UTC),
            datetime(2026, 4, 1, 0, 0, tzinfo=UTC),
            ["2026-03-26 08:00", "2026-03-27 08:00", "2026-03-30 07:00", "2026-03-31 07:00"],
        ),
        # fall back on Sunday 2026-10-25: 09:00 CEST is 07:00 UTC, 09:00 CET 08:00 UTC
        (
            datetime(2026, 10, 22, 0, 0, tzinfo=UTC),
            datetime(2026, 10, 28, 0, 0, tzinfo=UTC),
            ["2026-10-22 07:00", "2026-10-23 07:00", "2026-10-26 08:00", "2026-10-27 08:00"],
        ),
    ],
    ids=["spring-forward", "fall-back"],
)
def test_a_weekday_schedule_fires_at_nine_local_across_a_dst_change(
    tmp_path: Path, start: datetime, end: datetime, expected: list[str]
) -> None:
    book = ScheduleBook(tmp_path)
    add(book, "every weekday at 09:00", created=start - timedelta(days=1))
    clock = Clock(start)
    scheduler = Scheduler(book, clock=clock)
    fired: list[tuple[datetime, Fire]] = []
    for at in minutes(start, end):  # one look a minute, as the daemon does
        clock.at = at
        fired += [(at, fire) for fire in scheduler.tick()]
        scheduler.commit()
    assert [f"{at:%Y-%m-%d %H:%M}" for at, _ in fired] == expected  # at the minute, not later
    assert all(at == fire.at for at, fire in fired)
    local = [fire.at.astimezone(parse_rule("0 9 * * *", BERLIN).tz) for _, fire in fired]
    assert {(t.hour, t.minute) for t in local} == {(9, 0)}
    assert all(t.weekday() < 5 for t in local)  # never on a Saturday or Sunday


def test_the_next_run_is_nine_local_after_the_change() -> None:
    [schedule] = parse_schedules(
        "## S1: every weekday at 09:00\n- tz: Europe/Berlin\n\nreport\n"
    ).entries()
    friday_noon = datetime(2026, 3, 27, 11, 0, tzinfo=UTC)
    assert next_run(schedule, friday_noon) == datetime(2026, 3, 30, 7, 0, tzinfo=UTC)


# --- stopped, restarted --------------------------------------------------------------
@pytest.mark.parametrize("catch_up", ["skip", "once"])
def test_runs_missed_while_stopped_follow_catch_up(tmp_path: Path, catch_up: str) -> None:
    monday = datetime(2026, 11, 23, 6, 0, tzinfo=UTC)
    book = ScheduleBook(tmp_path)
    add(book, "every day at 08:00", created=monday, tz="UTC", catch_up=catch_up)
    clock = Clock(monday + timedelta(hours=1, minutes=55))
    first = Scheduler(book, clock=clock)
    assert first.tick() == []
    clock.at = monday + timedelta(hours=2)
    assert [f.caught_up for f in first.tick()] == [False]  # Monday's 08:00, on time
    first.commit()

    clock.at = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)  # down Tuesday to Thursday noon
    second = Scheduler(book, clock=clock)
    fires = second.tick()
    second.commit()
    if catch_up == "skip":
        assert fires == []
    else:
        [fire] = fires  # one run for the three missed, at start
        assert fire.caught_up and fire.at == datetime(2026, 11, 26, 8, 0, tzinfo=UTC)
    assert second.tick() == []  # and nothing more now

    third = Scheduler(book, clock=clock)  # a restart right after: nothing fires twice
    assert third.tick() == []
    clock.at = datetime(2026, 11, 27, 8, 0, tzinfo=UTC)  # the next run comes on time
    assert [f.at for f in third.tick()] == [clock.at]


def test_a_run_fired_before_a_restart_is_not_fired_again(tmp_path: Path) -> None:
    book = ScheduleBook(tmp_path)
    start = datetime(2026, 11, 23, 7, 59, tzinfo=UTC)
    add(book, "every day at 08:00", created=start, tz="UTC", catch_up="once")
    clock = Clock(start)
    scheduler = Scheduler(book, clock=clock)
    clock.at = start + timedelta(minutes=1)
    [fire] = scheduler.tick()
    scheduler.commit()
    kept = json.loads((tmp_path / "schedules.state.json").read_text())
    assert list(kept["last"].values()) == ["2026-11-23T08:00:00+00:00"]
    clock.at = start + timedelta(minutes=30)
    assert Scheduler(book, clock=clock).tick() == []  # catch_up once, but nothing was missed
    assert fire.message_id == "s-S1-20261123T0800Z"


def test_a_paused_schedule_does_not_fire_and_resuming_brings_no_backlog(tmp_path: Path) -> None:
    book = ScheduleBook(tmp_path)
    start = datetime(2026, 11, 23, 0, 0, tzinfo=UTC)
    add(book, "every hour", created=start, tz="UTC", catch_up="once")
    clock = Clock(start)
    scheduler = Scheduler(book, clock=clock)
    book.change("S1", paused=True)
    for at in minutes(start, start + timedelta(hours=3, minutes=1), step=10):
        clock.at = at
        assert scheduler.tick() == []
    book.change("S1", paused=False)
    clock.at = start + timedelta(hours=3, minutes=5)
    assert scheduler.tick() == []  # the paused hours are not run now
    clock.at = start + timedelta(hours=4)
    assert len(scheduler.tick()) == 1


# --- the book ------------------------------------------------------------------------
GOOD = "## S1: every hour\n- tz: UTC\n- created: 2026-11-23 00:00:00 UTC\n\nfirst task\n"
BAD = "## S2: every hour\n- tz: Mars/Base\n- created: 2026-11-23 00:00:00 UTC\n\nbroken\n"
OTHER = "## S3: 30 * * * *\n- tz: UTC\n- created: 2026-11-23 00:00:00 UTC\n\nthird task\n"


def test_a_malformed_entry_gives_one_line_and_loses_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    book = ScheduleBook(tmp_path)
    text = f"# Schedules\n\n{GOOD}\n{BAD}\n{OTHER}"
    book.path.write_text(text, encoding="utf-8")
    clock = Clock(datetime(2026, 11, 23, 1, 45, tzinfo=UTC))
    scheduler = Scheduler(book, clock=clock)
    caplog.set_level(logging.WARNING)
    fired = []
    for at in minutes(clock.at, clock.at + timedelta(hours=1)):
        clock.at = at
        fired += [f.schedule.id for f in scheduler.tick()]
    assert fired == ["S1", "S3"]  # the others still run
    [problem] = book.problems()
    assert str(problem).startswith(f"{book.path}:")
    assert "unknown time zone 'Mars/Base'" in str(problem) and "\n" not in str(problem)
    said = [r.getMessage() for r in caplog.records if "Mars/Base" in r.getMessage()]
    assert len(said) == 1  # once, not once a minute
    assert book.path.read_text(encoding="utf-8") == text  # the daemon changed nothing
    settings = load_settings(tmp_path)
    said_by_doctor = check_schedules(settings)  # `jarvis doctor` says the same one line
    assert not said_by_doctor.ok and said_by_doctor.detail.count("schedules.md:") == 1
    assert "unknown time zone 'Mars/Base'" in said_by_doctor.detail
    added = add(book, "every day at 9", created=clock.at)
    assert added.id == "S4"  # a broken entry's id is not taken again
    assert BAD.strip() in book.path.read_text(encoding="utf-8")  # kept as it was
    assert book.change("S1", paused=None) is not None
    after = book.path.read_text(encoding="utf-8")
    assert BAD.strip() in after and "first task" not in after and "third task" in after


def test_a_written_schedule_reads_back_the_same(tmp_path: Path) -> None:
    book = ScheduleBook(tmp_path)
    created = datetime(2026, 11, 28, 9, 12, tzinfo=UTC)
    text = "Download the report.\n## not a header, a line of the task"
    made = book.add(
        Schedule("S0", "0 9 * * 1-5", BERLIN, text, "once", "file:report", True, created)
    )
    [back] = book.load().entries()
    assert back == made and back.text == text and book.problems() == []


# --- answers -------------------------------------------------------------------------
async def test_an_answer_lands_in_its_file(tmp_path: Path, fake_model, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    reply = ReplyReady(
        task_id="T007",
        channel="schedule",
        reply_to="file:report",
        message_ids=["s-S1-20261123T0800Z"],
        status="completed",
        text="saved report.pdf",
    )
    at = datetime(2026, 11, 23, 8, 3, tzinfo=UTC)
    said = await deliver_answer(settings, reply, "S1", at)
    await deliver_answer(settings, reply.model_copy(update={"task_id": "T008"}), "S1", at)
    path = answer_file(settings.data_dir, "report")
    assert said == f"written to {path}"
    text = path.read_text(encoding="utf-8")
    assert text.count("saved report.pdf") == 2
    assert "## [2026-11-23 08:03:00] S1, task T007: done" in text


# --- the command line ----------------------------------------------------------------
def jarvis(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`jarvis schedule ...` in a process of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JARVIS_")}
    env |= {"PYTHONPATH": str(ROOT), "TZ": "Europe/Berlin"}
    return subprocess.run(
        [sys.executable, "-m", "jarvis", "--data-dir", str(data), "schedule", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def here(capsys: pytest.CaptureFixture[str], data: Path, *argv: str) -> tuple[int, str, str]:
    """`jarvis schedule ...` parsed by the real parser, its handler called as jarvis.cli does."""
    args = build_parser().parse_args(["schedule", *argv, "--data-dir", str(data)])
    code = args.handler(args, load_settings(args.data_dir))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_command_line_adds_lists_pauses_and_says_bad_input_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    ok = jarvis(data, "add", "every weekday at 09:00", "Download the report", "--catch-up", "once")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("S1: every weekday at 09:00 (Europe/Berlin); next run ")
    [schedule] = ScheduleBook(data).load().entries()
    assert (schedule.tz, schedule.catch_up, schedule.text) == (
        BERLIN,
        "once",
        "Download the report",
    )
    proc = jarvis(data, "add", "every blursday at 9", "x")  # a real process: one line, exit 2
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        "jarvis schedule: 'every blursday at 9': 'blursday' is not a day "
        "(day, weekday, weekend, monday...)\n"
    )
    monkeypatch.setenv("TZ", "Europe/Berlin")
    bad = [
        (["add", "every day at 9", "x", "--tz", "Mars/Base"], "unknown time zone 'Mars/Base'"),
        (["add", "every day at 9", "x", "--answer-to", "sms:1"], "answer_to 'sms:1'"),
        (["add", "every day at 9", "x", "--answer-to", "email"], "the email channel is off"),
        (["add", "* * *", "x"], "cannot read '* * *'"),
        (["pause", "S9"], "no schedule S9"),
    ]
    for args, expected in bad:
        code, out, err = here(capsys, data, *args)
        assert code in (1, 2) and out == "", (args, code, out)
        assert err.count("\n") == 1 and expected in err, err
    assert len(ScheduleBook(data).load().entries()) == 1  # nothing bad was written
    assert here(capsys, data, "pause", "S1")[:2] == (0, "S1 paused: every weekday at 09:00\n")
    listed = json.loads(here(capsys, data, "list", "--json")[1])
    assert [(s["id"], s["paused"], s["next_run"]) for s in listed["schedules"]] == [
        ("S1", True, None)
    ]
    assert here(capsys, data, "resume", "s1")[0] == 0
    shown = here(capsys, data, "list")[1]
    assert shown.startswith("S1  every weekday at 09:00 (Europe/Berlin)  next ")
    assert here(capsys, data, "remove", "S1")[0] == 0
    assert ScheduleBook(data).load().entries() == []


async def test_an_answer_by_email_goes_to_the_whitelisted_owner_only(
    tmp_path: Path, smtp: SmtpSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JARVIS_EMAIL_PASSWORD", PASSWORD)
    data = tmp_path / "data"
    write_whitelist(data)
    no_mailbox = SimpleNamespace(port=free_port())  # no mail is read: only the sender is used
    settings = load_settings(data, email=email_values(no_mailbox, smtp))  # type: ignore[arg-type]
    reply = ReplyReady(
        task_id="T007",
        channel="schedule",
        reply_to="email",
        message_ids=["s-S1-20261123T0800Z"],
        status="completed",
        text="saved report.pdf",
    )
    at = datetime(2026, 11, 23, 8, 3, tzinfo=UTC)
    assert await deliver_answer(settings, reply, "S1", at) == f"mailed to {ALICE}"
    [mail] = smtp.wait_for(1)
    assert mail["To"] == ALICE and mail["From"] == JARVIS
    assert mail["Subject"] == "Jarvis: schedule S1, task T007: done"
    assert mail.get_content().strip() == "saved report.pdf"
    stranger = reply.model_copy(update={"reply_to": "email:mallory@example.net"})
    with pytest.raises(AnswerRefused, match="not in the email whitelist"):
        await deliver_answer(settings, stranger, "S1", at)
    off = settings.model_copy(
        update={"email": settings.email.model_copy(update={"enabled": False})}
    )
    with pytest.raises(AnswerRefused, match="the email channel is off"):
        await deliver_answer(off, reply, "S1", at)
    assert len(smtp.messages) == 1


def test_a_hand_written_schedule_without_created_counts_its_runs_from_when_it_is_seen(
    tmp_path: Path,
) -> None:
    book = ScheduleBook(tmp_path)
    book.path.write_text("## S1: every hour\n- tz: UTC\n- catch_up: once\n\nby hand\n")
    clock = Clock(datetime(2026, 11, 23, 10, 30, tzinfo=UTC))
    scheduler = Scheduler(book, clock=clock)
    assert scheduler.tick() == []  # no backlog from before anyone wrote it
    scheduler.commit()
    clock.at = datetime(2026, 11, 23, 11, 0, tzinfo=UTC)
    assert [f.at for f in Scheduler(book, clock=clock).tick()] == [clock.at]
    [problem] = parse_schedules("## S2: every hour\n- tz: UTC\n- colour: red\n\nx\n").malformed()
    assert problem.reason.startswith("unknown field 'colour'")
