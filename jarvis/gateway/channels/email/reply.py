"""Replies on the thread, over SMTP with TLS (aiosmtplib).

:func:`compose` is pure: ``To`` the sender, ``Subject: Re: ...``, ``In-Reply-To`` the
mail answered, ``References`` the thread, a fresh Message-ID that Jarvis remembers (its
own mail coming back is dropped), and ``Auto-Submitted: auto-replied`` (RFC 3834) so that
well-behaved autoresponders do not answer it.
"""

from __future__ import annotations

import logging
import re
import secrets
from email.message import EmailMessage
from email.utils import format_datetime, localtime

import aiosmtplib

from jarvis.gateway.channels.email.filter import OWN_PREFIX
from jarvis.gateway.channels.email.settings import EmailError, EmailSettings
from jarvis.gateway.channels.email.state import Thread

log = logging.getLogger(__name__)


def new_message_id(address: str) -> str:
    domain = address.rpartition("@")[2] or "jarvis.invalid"
    return f"<{OWN_PREFIX}{secrets.token_hex(12)}@{domain}>"


def re_subject(subject: str) -> str:
    subject = re.sub(r"[\r\n]+", " ", subject).strip()
    if re.match(r"re\s*:", subject, re.IGNORECASE):
        return subject
    return f"Re: {subject}" if subject else "Re: your task"


def compose(sender: str, thread: Thread, body: str, tag: str = "") -> EmailMessage:
    """A reply on ``thread``; ``tag`` is added to the subject (a confirmation code there
    comes back in the subject of a plain reply)."""
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = thread.address
    msg["Subject"] = f"{re_subject(thread.subject)} {tag}".strip()
    msg["Date"] = format_datetime(localtime())
    msg["Message-ID"] = new_message_id(sender)
    if thread.message_id:
        msg["In-Reply-To"] = thread.message_id
    if thread.references:
        msg["References"] = " ".join(thread.references)
    msg["Auto-Submitted"] = "auto-replied"
    msg.set_content(body)
    return msg


async def send(settings: EmailSettings, msg: EmailMessage) -> None:
    """Send over SMTP: implicit TLS or STARTTLS (plaintext only to loopback in tests)."""
    problem = settings.transport_problem(settings.smtp_host, settings.smtp_security)
    if problem:
        raise EmailError(f"not sending: {problem}")
    kind, secret = settings.secret()
    user = settings.username if settings.smtp_username is None else settings.smtp_username
    tls = settings.smtp_security != "plain"

    async def token() -> str:
        return secret

    try:
        await aiosmtplib.send(
            msg,
            hostname=settings.smtp_host,
            port=settings.smtp_port,
            username=user or None,
            password=secret if kind == "password" and user else None,
            oauth_token_generator=token if kind == "oauth2" else None,
            use_tls=settings.smtp_security == "tls",
            start_tls=settings.smtp_security == "starttls",
            tls_context=settings.ssl_context() if tls else None,
            timeout=settings.timeout_s,
        )
    except (aiosmtplib.SMTPException, OSError) as exc:
        raise EmailError(f"SMTP {settings.smtp_host}:{settings.smtp_port}: {exc}") from None
    log.info("sent %s to %s", msg["Message-ID"], msg["To"])
