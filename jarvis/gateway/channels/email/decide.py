"""One mail's fate, decided from its bytes and what the ledger remembers; no side effects.

Order: filter (automated, our own) -> authenticate -> what it is (an answer to a question
Jarvis asked, a confirmation code, or a new task) -> second factor -> limits -> parse.
Mail that fails the filter or authentication gets no reply (``reply`` is False): an
attacker learns nothing and no backscatter goes to forged addresses.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from email import message_from_bytes
from email import policy as email_policy
from email.message import EmailMessage
from typing import Literal, ParamSpec, cast

from jarvis.gateway.channels.email import limits
from jarvis.gateway.channels.email.authenticate import DnsFunc, Identity, authenticate
from jarvis.gateway.channels.email.filter import drop_reason, message_id
from jarvis.gateway.channels.email.parse import body_text
from jarvis.gateway.channels.email.second_factor import (
    confirmation_for,
    totp_check,
    without_totp,
)
from jarvis.gateway.channels.email.settings import EmailSettings, Whitelist
from jarvis.gateway.channels.email.state import Confirmation, LedgerData, Thread

log = logging.getLogger(__name__)
P = ParamSpec("P")
Kind = Literal["drop", "reject", "refuse", "confirm", "task", "answer"]


@dataclass
class Decision:
    kind: Kind
    reason: str = ""
    identity: Identity | None = None
    thread: Thread | None = None
    text: str = ""
    """The task or answer text (the mail's own words, parsed and capped)."""
    task_id: str | None = None
    """For an answer: the task that asked."""
    confirmation: Confirmation | None = None
    totp_step: int | None = None
    msg: EmailMessage | None = field(default=None, repr=False)

    @property
    def reply(self) -> bool:
        """Whether the sender hears back (only authenticated senders ever do)."""
        return self.kind in ("refuse", "confirm")

    def describe(self) -> str:
        if self.kind == "task":
            return "accepted as a task"
        if self.kind == "answer":
            return f"accepted as the answer to task {self.task_id}"
        if self.kind == "confirm":
            return "authenticated; a confirmation code would be sent first"
        told = " (the sender is told)" if self.reply else ""
        return f"rejected{told}: {self.reason}"  # one word for every "no task"


def parse_message(raw: bytes) -> EmailMessage:
    return cast(EmailMessage, message_from_bytes(raw, policy=email_policy.default))


def references(msg: EmailMessage) -> list[str]:
    ids: list[str] = []
    for name in ("in-reply-to", "references"):
        for value in msg.get_all(name) or []:
            ids += re.findall(r"<[^<>\s]+>", str(value))
    return ids


def thread_of(msg: EmailMessage, identity: Identity) -> Thread:
    mid = message_id(msg) or ""
    refs = [r for r in references(msg) if r != mid][-20:]
    subject = re.sub(r"\s+", " ", str(msg.get("subject") or "")).strip()
    return Thread(
        address=identity.address,
        message_id=mid,
        subject=subject,
        references=[*refs, mid] if mid else refs,
    )


def _fails_closed(check: Callable[P, Decision]) -> Callable[P, Decision]:
    """The boundary of :func:`decide`: any failure of the checks is a rejection."""

    @functools.wraps(check)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> Decision:
        try:
            return check(*args, **kwargs)
        except Exception as exc:  # the boundary: any failure of the checks is a rejection
            log.warning("email: checking a mail failed (%s: %s); rejected", type(exc).__name__, exc)
            return Decision("reject", f"the mail could not be checked ({type(exc).__name__})")

    return guarded


@_fails_closed
def decide(
    raw: bytes,
    whitelist: Whitelist,
    ledger: LedgerData,
    settings: EmailSettings,
    now: float,
    *,
    secrets_env: dict[str, str] | None = None,
    dnsfunc: DnsFunc | None = None,
    headers_only: bool = False,
    size: int | None = None,
) -> Decision:
    """What to do with one mail. ``headers_only``: the body was not fetched (too large).

    Fails closed: an error anywhere in the checks (the email package raises on some
    malformed headers, e.g. ``Message-ID: <@x>``) rejects the mail without a reply, so a
    hostile mail can neither pass nor jam the mailbox."""
    try:
        msg = parse_message(raw)
    except Exception as exc:  # the email package raises rarely, but never let it through
        return Decision("reject", f"the mail does not parse: {exc}")
    reason = drop_reason(msg, ledger.sent)
    if reason:
        return Decision("drop", reason, msg=msg)
    identity, reason = authenticate(
        msg,
        raw,
        whitelist,
        dkim_local=settings.dkim_local and not headers_only,
        dnsfunc=dnsfunc,
    )
    if identity is None:
        return Decision("reject", reason or "not authenticated", msg=msg)
    thread = thread_of(msg, identity)
    size_problem = limits.size_reason(
        size if size is not None else len(raw), settings.max_size_bytes
    )
    if size_problem:
        return Decision("refuse", size_problem, identity=identity, thread=thread, msg=msg)
    mail = _Mail(msg, identity, thread, body_text(msg, settings.body_cap_bytes))
    return _what_it_is(mail, ledger, settings, now, secrets_env)


@dataclass
class _Mail:
    """An authenticated mail within the size limit, as the later checks read it."""

    msg: EmailMessage
    identity: Identity
    thread: Thread
    text: str
    """The body text (parsed and capped)."""

    def refuse(self, reason: str) -> Decision:
        """No task, and the sender is told why."""
        return Decision("refuse", reason, identity=self.identity, thread=self.thread, msg=self.msg)


def _what_it_is(
    mail: _Mail,
    ledger: LedgerData,
    settings: EmailSettings,
    now: float,
    secrets_env: dict[str, str] | None,
) -> Decision:
    """An answer to a question Jarvis asked, a confirmation code, or a new task."""
    refs = set(references(mail.msg))
    asked = next((ledger.questions[r] for r in refs if r in ledger.questions), None)
    if asked is not None:
        if not mail.text:
            return mail.refuse("the answer has no text")
        return Decision(
            "answer",
            identity=mail.identity,
            msg=mail.msg,
            thread=mail.thread,
            text=mail.text,
            task_id=asked,
        )
    address = mail.identity.address
    mine = [c for c in ledger.confirmations if c.address == address]
    replying = any(c.sent_id in refs for c in mine)
    subject_and_text = f"{mail.thread.subject}\n{mail.text}"
    if replying or (mine and confirmation_for(mine, address, subject_and_text, now)[0]):
        found, why = confirmation_for(mine, address, subject_and_text, now)
        if found is None:
            return mail.refuse(why or "no valid code")
        rate = limits.rate_reason(ledger.tasks.get(address, []), now, settings.tasks_per_hour)
        if rate:
            return mail.refuse(rate)
        return Decision(
            "task",
            identity=mail.identity,
            msg=mail.msg,
            thread=found.thread,
            text=found.text,
            confirmation=found,
        )
    return _new_task(mail, ledger, settings, now, secrets_env)


def _new_task(
    mail: _Mail,
    ledger: LedgerData,
    settings: EmailSettings,
    now: float,
    secrets_env: dict[str, str] | None,
) -> Decision:
    """A new task: it needs text, room in the sender's rate, and the second factor."""
    identity, thread = mail.identity, mail.thread
    if not mail.text:
        return mail.refuse("the mail has no text to act on")
    rate = limits.rate_reason(ledger.tasks.get(identity.address, []), now, settings.tasks_per_hour)
    if rate:
        return mail.refuse(rate)
    factor = identity.sender.second_factor
    if factor == "token":
        env = secrets_env if secrets_env is not None else {}
        secret = env.get(identity.sender.totp_secret_env or "", "")
        step, why = totp_check(secret, thread.subject, ledger.totp_used.get(identity.address), now)
        if step is None:
            return Decision("reject", why or "TOTP failed", identity=identity, msg=mail.msg)
        thread.subject = without_totp(thread.subject)
        return Decision(
            "task",
            identity=mail.identity,
            msg=mail.msg,
            thread=thread,
            text=mail.text,
            totp_step=step,
        )
    if factor == "confirm":
        pending = limits.pending_reason(
            ledger.confirmations, identity.address, now, settings.max_pending_confirmations
        )
        if pending:
            return mail.refuse(pending)
        return Decision(
            "confirm", identity=mail.identity, msg=mail.msg, thread=thread, text=mail.text
        )
    return Decision("task", identity=mail.identity, msg=mail.msg, thread=thread, text=mail.text)
