"""The email channel against real servers: dovecot (IMAP, IDLE) and aiosmtpd (SMTP) on
loopback. Confirmation round trip, the attack table through the server, the size cap
read before the body, a dovecot restart under IDLE and a UIDVALIDITY change."""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from jarvis.config import Settings
from jarvis.events import EventBus
from jarvis.gateway.channels.email.channel import EmailChannel, queue_id
from jarvis.gateway.channels.email.fetch import HANDLED, QUEUED, SEEN
from jarvis.gateway.channels.email.state import MailboxState
from jarvis.gateway.queue import MessageQueue
from jarvis.gateway.todos import TodoList
from tests.email_mail import ALICE, headers, mail, new_id
from tests.email_servers import PASSWORD, Dovecot, SmtpSink
from tests.email_setup import channel_settings, dovecot, flags_by_message_id, smtp
from tests.test_email_auth import ATTACKS
from tests.test_serve import until

__all__ = ["dovecot", "smtp"]

CODE = re.compile(r"\b[A-Z2-9]{4}-[A-Z2-9]{4}\b")


@asynccontextmanager
async def running(settings: Settings) -> AsyncIterator[EmailChannel]:
    channel = EmailChannel(
        settings, MessageQueue(settings.data_dir), TodoList(settings.data_dir), EventBus()
    )
    await channel.start()
    try:
        await until(channel.fetcher.connected.is_set, timeout=15)
        yield channel
    finally:
        await channel.stop()


async def test_a_confirmed_mail_becomes_one_email_task_and_the_thread_is_kept(
    tmp_path: Path,
    dovecot: Dovecot,
    smtp: SmtpSink,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)  # imapclient's protocol trace included
    settings = channel_settings(tmp_path, dovecot, smtp, monkeypatch, "confirm")
    queue = MessageQueue(settings.data_dir)
    original = new_id()
    async with running(settings):
        dovecot.deliver(mail(headers(Message_ID=original)))
        [ask] = await asyncio.to_thread(smtp.wait_for, 1)
        assert (ask["To"], ask["In-Reply-To"]) == (ALICE, original)
        assert re.fullmatch(
            r"Re: Open the report \[confirm [A-Z2-9]{4}-[A-Z2-9]{4}\]", ask["Subject"]
        )
        assert ask["Auto-Submitted"] == "auto-replied"
        text = ask.get_content()
        assert "print page 3" in text
        [code] = CODE.findall(text)
        assert queue.pending() == []  # nothing runs before the code comes back
        confirm = new_id()
        dovecot.deliver(
            mail(
                headers(
                    Message_ID=confirm,
                    Subject=f"Re: {ask['Subject']}",  # a plain reply: the code is in it
                    In_Reply_To=ask["Message-ID"],
                    References=f"{original} {ask['Message-ID']}",
                ),
                body="Yes, go ahead.\n\n> Jarvis understood this task\n",
            )
        )
        await until(queue.pending, timeout=15)
        # the same code again (a replay with a new Message-ID) starts nothing
        dovecot.deliver(
            mail(
                headers(Subject="Re: Open the report", In_Reply_To=ask["Message-ID"]),
                body=f"{code}\n",
            )
        )
        await asyncio.to_thread(smtp.wait_for, 2)
    [message] = queue.pending()
    assert (message.id, message.channel, message.sender) == (queue_id(original), "email", ALICE)
    assert "<<<EMAIL\nPlease open the quarterly report and print page 3.\nEMAIL>>>" in message.text
    assert "the task's data" in message.text
    [task] = TodoList(settings.data_dir).all()
    assert (task.title, task.source, task.message_ids) == (
        "Email: Open the report",
        "email",
        [message.id],
    )
    assert task.description == message.text
    refused = smtp.messages[1]
    assert "already used" in refused.get_content() and refused["In-Reply-To"] is not None
    flags = flags_by_message_id(dovecot)
    assert {SEEN, QUEUED} <= flags[confirm]
    assert HANDLED in flags[original] and SEEN not in flags[original]
    assert len(smtp.messages) == 2
    ledger = (settings.data_dir / "email" / "ledger.json").read_text()
    assert code not in ledger  # only its hash is kept
    assert "LOGIN" in caplog.text and PASSWORD not in caplog.text


async def test_the_attack_table_through_the_server_starts_nothing_and_answers_nobody(
    tmp_path: Path, dovecot: Dovecot, smtp: SmtpSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = channel_settings(tmp_path, dovecot, smtp, monkeypatch, "none")
    queue = MessageQueue(settings.data_dir)
    for _, raw, _ in ATTACKS:
        dovecot.deliver(raw)
    sentinel = new_id()
    dovecot.deliver(mail(headers(Message_ID=sentinel)))
    async with running(settings):
        await until(queue.pending, timeout=20)
    [message] = queue.pending()
    assert message.id == queue_id(sentinel)
    assert smtp.messages == []
    flags = flags_by_message_id(dovecot)
    assert sum(QUEUED in f for f in flags.values()) == 1
    assert QUEUED in flags[sentinel]


async def test_a_10_mb_mail_is_refused_without_its_body_being_read(
    tmp_path: Path, dovecot: Dovecot, smtp: SmtpSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = channel_settings(tmp_path, dovecot, smtp, monkeypatch, "none")
    big = new_id()
    body = ("x" * 998 + "\n") * 10_500  # about 10 MB
    dovecot.deliver(mail(headers(Message_ID=big), body=body))
    async with running(settings):
        [refusal] = await asyncio.to_thread(smtp.wait_for, 1)
    assert "above the limit" in refusal.get_content() and refusal["In-Reply-To"] == big
    assert MessageQueue(settings.data_dir).pending() == []
    await until(lambda: dovecot.bytes_sent_to_clients(), timeout=10)
    assert max(dovecot.bytes_sent_to_clients()) < 100_000  # the header only, never the body
    assert HANDLED in flags_by_message_id(dovecot)[big]


async def test_idle_survives_a_dovecot_restart(
    tmp_path: Path, dovecot: Dovecot, smtp: SmtpSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = channel_settings(tmp_path, dovecot, smtp, monkeypatch, "none")
    queue = MessageQueue(settings.data_dir)
    async with running(settings) as channel:
        first = new_id()
        dovecot.deliver(mail(headers(Message_ID=first)))
        await until(lambda: len(queue.pending()) == 1, timeout=15)
        await asyncio.to_thread(dovecot.restart)
        second = new_id()
        dovecot.deliver(mail(headers(Message_ID=second)))
        await until(lambda: len(queue.pending()) == 2, timeout=20)
        assert channel.fetcher.connected.is_set()
    assert [m.id for m in queue.pending()] == [queue_id(first), queue_id(second)]


async def test_a_uidvalidity_change_takes_a_new_baseline_and_queues_nothing_twice(
    tmp_path: Path, dovecot: Dovecot, smtp: SmtpSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = channel_settings(tmp_path, dovecot, smtp, monkeypatch, "none")
    queue = MessageQueue(settings.data_dir)
    state = MailboxState(settings.data_dir / "email" / "state.json")
    first = new_id()
    dovecot.deliver(mail(headers(Message_ID=first)))
    async with running(settings):
        await until(lambda: len(queue.pending()) == 1, timeout=15)
    before = state.get("INBOX")
    assert before is not None and before.last_uid == 1
    dovecot.stop()
    dovecot.new_uidvalidity()
    second = new_id()
    dovecot.deliver(mail(headers(Message_ID=second)))
    dovecot.start()
    async with running(settings) as channel:
        await until(lambda: len(queue.pending()) == 2, timeout=15)
        assert channel.fetcher.baselines == 1
    after = state.get("INBOX")
    assert after is not None and after.uidvalidity != before.uidvalidity
    assert [m.id for m in queue.pending()] == [queue_id(first), queue_id(second)]


async def test_without_idle_the_channel_polls(
    tmp_path: Path, dovecot: Dovecot, smtp: SmtpSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    from imapclient import IMAPClient

    has = IMAPClient.has_capability
    monkeypatch.setattr(
        IMAPClient, "has_capability", lambda self, cap: cap.upper() != "IDLE" and has(self, cap)
    )
    idles: list[int] = []
    monkeypatch.setattr(IMAPClient, "idle", lambda self: idles.append(1))
    settings = channel_settings(tmp_path, dovecot, smtp, monkeypatch, "none", poll_interval_s=0.2)
    queue = MessageQueue(settings.data_dir)
    async with running(settings):
        mid = new_id()
        dovecot.deliver(mail(headers(Message_ID=mid)))
        await until(queue.pending, timeout=15)
    assert [m.id for m in queue.pending()] == [queue_id(mid)] and idles == []


async def test_the_first_look_skips_mail_already_read_now_and_later(
    tmp_path: Path, dovecot: Dovecot, smtp: SmtpSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = channel_settings(tmp_path, dovecot, smtp, monkeypatch, "none")
    queue = MessageQueue(settings.data_dir)
    unread, read = new_id(), new_id()
    dovecot.deliver(mail(headers(Message_ID=unread)))
    dovecot.deliver(mail(headers(Message_ID=read)), seen=True)
    async with running(settings):
        await until(queue.pending, timeout=15)
        later = new_id()
        dovecot.deliver(mail(headers(Message_ID=later)))
        await until(lambda: len(queue.pending()) == 2, timeout=15)
    assert [m.id for m in queue.pending()] == [queue_id(unread), queue_id(later)]
    assert flags_by_message_id(dovecot)[read] == {SEEN}


async def test_idle_is_renewed_on_time_and_still_hears_new_mail(
    tmp_path: Path, dovecot: Dovecot, smtp: SmtpSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    from imapclient import IMAPClient

    idle = IMAPClient.idle
    started: list[float] = []

    def counted(self: IMAPClient) -> object:
        started.append(time.monotonic())
        return idle(self)

    monkeypatch.setattr(IMAPClient, "idle", counted)
    settings = channel_settings(tmp_path, dovecot, smtp, monkeypatch, "none", idle_renew_s=0.3)
    queue = MessageQueue(settings.data_dir)
    async with running(settings):
        await until(lambda: len(started) >= 4, timeout=15)
        mid = new_id()
        dovecot.deliver(mail(headers(Message_ID=mid)))
        await until(queue.pending, timeout=15)
    gaps = [b - a for a, b in itertools.pairwise(started)][:3]
    assert all(g >= 0.29 for g in gaps)  # renewed after idle_renew_s, not in a busy loop
    assert [m.id for m in queue.pending()] == [queue_id(mid)]


async def test_mail_landing_just_before_idle_starts_is_not_left_waiting(
    tmp_path: Path, dovecot: Dovecot, smtp: SmtpSink, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dovecot does not announce in IDLE a mail that arrived after the last command and
    before IDLE; without the short IDLE after activity it would wait for dovecot's 30 s
    check (or the 9 min renewal)."""
    from imapclient import IMAPClient

    settings = channel_settings(tmp_path, dovecot, smtp, monkeypatch, "none")
    queue = MessageQueue(settings.data_dir)
    first, racing = new_id(), new_id()
    idle = IMAPClient.idle

    def deliver_then_idle(self: IMAPClient) -> object:
        if len(queue.pending()) == 1 and racing not in flags_by_message_id(dovecot):
            dovecot.deliver(mail(headers(Message_ID=racing)))
            time.sleep(0.3)  # let the server see it before IDLE starts: the race, made certain
        return idle(self)

    monkeypatch.setattr(IMAPClient, "idle", deliver_then_idle)
    dovecot.deliver(mail(headers(Message_ID=first)))
    async with running(settings):
        await until(lambda: len(queue.pending()) == 2, timeout=10)
    assert [m.id for m in queue.pending()] == [queue_id(first), queue_id(racing)]
