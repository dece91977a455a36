"""Mail Jarvis never answers: automated mail and its own messages (no loops).

Pure functions on the parsed message; each returns the reason to drop it, or None.
"""

from __future__ import annotations

import re
from collections.abc import Container
from email.message import EmailMessage

OWN_PREFIX = "jarvis."
"""Message-IDs Jarvis makes start with ``<jarvis.``."""
_OOO = re.compile(
    r"^\s*(auto(matic)?[ -]?(reply|response|antwort)|out of (the )?office|"
    r"abwesenheit|absence|r[ée]ponse automatique|vacation)",
    re.IGNORECASE,
)


def header_value(msg: EmailMessage, name: str) -> str:
    """The header's value; "" when absent, or when the email package fails on it (its
    parsers raise on some malformed values, e.g. ``Message-ID: <@x>``)."""
    try:
        value = msg.get(name)
        return "" if value is None else str(value).strip()
    except Exception:  # the email package's parser bugs: treated as no usable value
        return ""


def automated_reason(msg: EmailMessage) -> str | None:
    """Auto-Submitted, Precedence, list mail, bounces and out-of-office replies."""
    auto = header_value(msg, "auto-submitted").lower()
    if auto and auto.split(";")[0].strip() != "no":
        return f"automated mail (Auto-Submitted: {auto})"
    precedence = header_value(msg, "precedence").lower()
    if precedence in ("bulk", "list", "junk"):
        return f"automated mail (Precedence: {precedence})"
    for name in ("list-unsubscribe", "list-id", "x-autoreply", "x-autorespond"):
        if msg.get(name) is not None:
            return f"automated mail ({name} header)"
    sender = " ".join(header_value(msg, name).lower() for name in ("from", "sender", "return-path"))
    if "mailer-daemon" in sender or "postmaster@" in sender:
        return "a bounce (MAILER-DAEMON)"
    if header_value(msg, "return-path") == "<>":
        return "a bounce (empty Return-Path)"
    if msg.get_content_type() == "multipart/report":
        return "a delivery or read report"
    if _OOO.match(header_value(msg, "subject")):
        return "an out-of-office reply"
    return None


def message_id(msg: EmailMessage) -> str | None:
    """The Message-ID as written, angle brackets included; None when absent or blank."""
    value = header_value(msg, "message-id")
    return value if re.fullmatch(r"<[^<>\s]+>", value) else None


def own_reason(msg: EmailMessage, sent: Container[str]) -> str | None:
    """Mail whose Message-ID Jarvis itself made or sent."""
    mid = message_id(msg)
    if mid is None:
        return "no usable Message-ID"
    if mid in sent or mid.lower().startswith("<" + OWN_PREFIX):
        return "Jarvis's own message (a loop)"
    return None


def drop_reason(msg: EmailMessage, sent: Container[str]) -> str | None:
    return own_reason(msg, sent) or automated_reason(msg)
