"""Is this mail really from a person on the whitelist? Pure functions, failing closed.

Each check takes the parsed message (or its raw bytes) and returns ``None`` when it holds,
or the reason it does not. :func:`authenticate` runs them all; the first reason wins.

1. Headers: exactly one of each single-instance header; exactly one From with exactly
   one mailbox, no group, no parser defect, and a second parser agreeing on the address;
   a Sender, if any, equal to From; the address on the whitelist.
2. The receiving server's ``Authentication-Results`` headers (of the configured
   authserv-id; the topmost one, read together with the ones right after it when it sits
   directly below a ``Received`` header: :func:`~.auth_results.trusted_values`; headers of
   other ids, and those further down, are ignored) parse cleanly, agree with each other,
   and show ``dmarc=pass`` with ``header.from`` equal to the From domain, or, with no DMARC
   result, ``dkim=pass`` with ``header.d`` equal to it. Quoted property values count as
   their text.
3. Optionally the aligned DKIM signature verifies locally (dkimpy); it must when no
   trusted ``Authentication-Results`` header exists.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import parseaddr
from typing import Any

from jarvis.gateway.channels.email.auth_results import (
    Header,
    disagreement,
    dkim_domain,
    parse,
    trusted_values,
)
from jarvis.gateway.channels.email.settings import Sender, Whitelist

SINGLE = ("from", "sender", "to", "subject", "date", "message-id", "content-type")
DnsFunc = Callable[..., Any]


@dataclass(frozen=True)
class Identity:
    """Who an authenticated mail is from."""

    address: str
    domain: str
    sender: Sender


def duplicate_reason(msg: EmailMessage) -> str | None:
    for name in SINGLE:
        count = len(msg.get_all(name) or [])
        if count > 1:
            return f"{count} {name} headers"
    return None


def from_address(msg: EmailMessage) -> tuple[str | None, str | None]:
    """``(address, None)`` for exactly one clean mailbox in one From, else ``(None, reason)``."""
    raws = msg.get_all("from") or []
    if len(raws) != 1:
        return None, "no From header" if not raws else f"{len(raws)} From headers"
    header = raws[0]
    try:
        groups = header.groups
        defects = list(header.defects)
    except AttributeError:
        return None, "the From header does not parse"
    if defects:
        return None, f"the From header does not parse cleanly ({defects[0]})"
    if any(group.display_name is not None for group in groups):
        return None, "From holds a group"
    mailboxes = [m for group in groups for m in group.addresses]
    if len(mailboxes) != 1:
        return None, f"From holds {len(mailboxes)} mailboxes"
    spec = mailboxes[0].addr_spec
    if not re.fullmatch(r"[^@\s\"<>()\\,;:]+@[A-Za-z0-9.-]+", spec) or ".." in spec:
        return None, f"From address {spec!r} is not a plain address"
    _, second = parseaddr(str(header))
    if second.lower() != spec.lower():
        return None, "two address parsers disagree about From"
    return spec.lower(), None


def sender_reason(msg: EmailMessage, address: str) -> str | None:
    raws = msg.get_all("sender") or []
    if not raws:
        return None
    header = raws[0]
    try:
        mailboxes = header.addresses
        defects = header.defects
    except AttributeError:
        return "the Sender header does not parse"
    if defects or len(mailboxes) != 1 or mailboxes[0].addr_spec.lower() != address:
        return "Sender differs from From"
    return None


def header_reason(msg: EmailMessage, whitelist: Whitelist) -> tuple[Identity | None, str | None]:
    reason = duplicate_reason(msg)
    if reason:
        return None, reason
    address, reason = from_address(msg)
    if address is None:
        return None, reason
    reason = sender_reason(msg, address)
    if reason:
        return None, reason
    sender = whitelist.find(address)
    if sender is None:
        return None, f"{address} is not on the whitelist"
    return Identity(address, address.rpartition("@")[2], sender), None


# --- Authentication-Results --------------------------------------------------------
def clean_parse(value: str) -> Header | None:
    """The parsed header when every part of it follows the grammar; None otherwise."""
    return parse(value)


def authres_reason(values: str | Sequence[str], domain: str) -> str | None:
    """Do these trusted headers (one, or the receiver's run read together) show an aligned
    DMARC or DKIM pass for ``domain``?"""
    headers = []
    for value in [values] if isinstance(values, str) else values:
        header = parse(value)
        if header is None:
            return "the trusted Authentication-Results header does not parse cleanly"
        headers.append(header)
    reason = disagreement(headers)
    if reason:
        return reason
    results = [r for h in headers for r in h.results]
    dmarc = [r for r in results if r.method == "dmarc"]
    for r in dmarc:
        if r.result == "pass" and r.prop("header.from") == domain:
            return None
    if any(r.result != "none" for r in dmarc):
        return f"no aligned dmarc=pass for {domain}"
    for r in results:
        if r.method == "dkim" and r.result == "pass" and dkim_domain(r) == domain:
            return None
    return f"no aligned dmarc=pass or dkim=pass for {domain}"


# --- local DKIM ----------------------------------------------------------------------
def dkim_reason(raw: bytes, domain: str, dnsfunc: DnsFunc | None = None) -> str | None:
    """A DKIM signature with ``d=`` equal to ``domain`` verifies (dkimpy; DNS for the key)."""
    import dkim

    signatures = _signature_domains(raw)
    if not signatures:
        return "no DKIM signature"
    for index, d in enumerate(signatures):
        if d != domain:
            continue
        checker = dkim.DKIM(raw)
        try:
            if dnsfunc is None:
                ok = checker.verify(idx=index)
            else:
                ok = checker.verify(idx=index, dnsfunc=dnsfunc)
        except Exception:  # dkimpy raises for malformed signatures and DNS failures
            ok = False
        if ok:
            return None
    return f"no valid DKIM signature of {domain}"


def _signature_domains(raw: bytes) -> list[str]:
    from email import message_from_bytes
    from email import policy as email_policy

    msg = message_from_bytes(raw, policy=email_policy.compat32)
    out = []
    for sig in msg.get_all("DKIM-Signature") or []:
        tags = dict(part.strip().split("=", 1) for part in str(sig).split(";") if "=" in part)
        out.append(re.sub(r"\s+", "", tags.get("d", "")).lower())
    return out


def authenticate(
    msg: EmailMessage,
    raw: bytes,
    whitelist: Whitelist,
    *,
    dkim_local: bool = False,
    dnsfunc: DnsFunc | None = None,
) -> tuple[Identity | None, str | None]:
    """``(identity, None)`` when every check holds; ``(None, first reason)`` otherwise."""
    identity, reason = header_reason(msg, whitelist)
    if identity is None:
        return None, reason
    items = [(name, str(value)) for name, value in msg.items()]
    values, missing = trusted_values(items, whitelist.authserv_ids)
    if values:
        reason = authres_reason(values, identity.domain)
        if reason:
            return None, reason
    elif not dkim_local:
        return None, missing
    if dkim_local:
        reason = dkim_reason(raw, identity.domain, dnsfunc)
        if reason:
            return None, reason
    return identity, None
