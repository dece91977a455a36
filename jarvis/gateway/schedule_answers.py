"""Where a scheduled run's answer goes: a file in the data dir, or mail to the owner.

``file:NAME`` appends the answer to ``DATA/answers/NAME.md`` (locked, crash-safe:
:mod:`jarvis.gateway.durable_append`). ``email`` and ``email:ADDRESS`` send it with the
email channel's sender (its SMTP settings, TLS and retries) to a sender of the whitelist
(``data/config/whitelist.json``): only when the email channel is on, and only to an address
the user allowed there (``email`` alone: the whitelist's one sender). Anything else is
refused with one line in the log; the answer is still on the event stream and in the task.
"""

from __future__ import annotations

import logging
from datetime import datetime
from email.message import EmailMessage
from email.utils import format_datetime, localtime
from pathlib import Path
from typing import TYPE_CHECKING

from jarvis.events import ReplyReady
from jarvis.gateway.durable_append import append, repair
from jarvis.gateway.locked_file import MarkdownFile
from jarvis.gateway.markdown import format_timestamp

if TYPE_CHECKING:
    from jarvis.config import Settings

log = logging.getLogger(__name__)

ANSWERS_DIR = "answers"
STATUS_WORDS = {
    "completed": "done",
    "failed": "failed",
    "cancelled": "cancelled",
    "needs_user": "asks you",
}


class AnswerRefused(ValueError):
    """An answer that may not go where the schedule says; the message is one line."""


def answer_file(data_dir: Path, name: str) -> Path:
    return Path(data_dir) / ANSWERS_DIR / f"{name}.md"


def entry(reply: ReplyReady, schedule_id: str, at: datetime) -> str:
    word = STATUS_WORDS.get(reply.status, reply.status)
    head = f"## [{format_timestamp(at)}] {schedule_id}, task {reply.task_id}: {word}"
    return f"{head}\n\n{reply.text.strip() or '(no text)'}\n\n"


def write_file(data_dir: Path, name: str, text: str) -> Path:
    """Append ``text`` to ``answers/NAME.md`` (under its lock, crash-safe)."""
    path = answer_file(data_dir, name)
    file = MarkdownFile(path)
    with file.locked():
        repair(path)
        append(path, text.encode("utf-8"))
    return path


def owner_address(settings: Settings, answer_to: str) -> str:
    """The whitelisted address ``email`` or ``email:ADDRESS`` names; AnswerRefused if the
    email channel is off or the address is not one the user allowed."""
    from jarvis.gateway.channels.email.settings import EmailError, load_whitelist

    if not settings.email.enabled:
        raise AnswerRefused(f"{answer_to}: the email channel is off (email.enabled)")
    try:
        senders = [s.address for s in load_whitelist(settings.data_dir).senders]
    except EmailError as exc:
        raise AnswerRefused(f"{answer_to}: {exc}") from None
    wanted = answer_to.partition(":")[2].strip().lower()
    if not wanted:
        if len(senders) != 1:
            raise AnswerRefused(
                f"email: the whitelist has {len(senders)} senders; name one (email:ADDRESS)"
            )
        return senders[0]
    if wanted not in senders:
        raise AnswerRefused(f"{answer_to}: that address is not in the email whitelist")
    return wanted


async def send_mail(settings: Settings, to: str, subject: str, body: str) -> None:
    """Mail ``body`` to ``to`` with the email channel's sender (raises EmailError)."""
    from jarvis.gateway.channels.email.reply import new_message_id, send

    msg = EmailMessage()
    msg["From"] = settings.email.address
    msg["To"] = to
    msg["Subject"] = subject
    msg["Date"] = format_datetime(localtime())
    msg["Message-ID"] = new_message_id(settings.email.address)
    msg["Auto-Submitted"] = "auto-generated"
    msg.set_content(body)
    await send(settings.email, msg)


async def deliver_answer(
    settings: Settings, reply: ReplyReady, schedule_id: str, at: datetime
) -> str:
    """Send ``reply`` where its ``reply_to`` (the schedule's ``answer_to``) says; what was
    done, in a few words. Raises AnswerRefused or EmailError."""
    where = reply.reply_to or "none"
    if where == "none":
        return "kept on the event stream only"
    if where.startswith("file:"):
        import asyncio

        text = entry(reply, schedule_id, at)
        path = await asyncio.to_thread(write_file, settings.data_dir, where[5:], text)
        return f"written to {path}"
    if where == "email" or where.startswith("email:"):
        to = owner_address(settings, where)
        word = STATUS_WORDS.get(reply.status, reply.status)
        subject = f"Jarvis: schedule {schedule_id}, task {reply.task_id}: {word}"
        await send_mail(settings, to, subject, reply.text.strip() or "(no text)")
        return f"mailed to {to}"
    raise AnswerRefused(f"answer_to {where!r} is not a place an answer can go")
