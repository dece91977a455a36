"""The second factor: DMARC vouches for a domain, this vouches for the person.

``confirm``: Jarvis answers with the task as it understood it and a one-time code; the task
runs when an authenticated mail from the same sender brings the code back within the time
limit (only the code's hash is stored). ``token``: a TOTP code (pyotp) in the subject, each
time step usable once. ``none``: the whitelist entry says so.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

import pyotp

from jarvis.gateway.channels.email.state import Confirmation

ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
_CODE = re.compile(r"\b([A-HJ-NP-Z2-9]{4})-([A-HJ-NP-Z2-9]{4})\b")
_TOTP = re.compile(r"(?<![\d])(\d{6})(?![\d])")
TOTP_STEP_S = 30


def new_code() -> str:
    chars = "".join(secrets.choice(ALPHABET) for _ in range(8))
    return f"{chars[:4]}-{chars[4:]}"


def hash_code(code: str) -> str:
    return hashlib.sha256(code.strip().upper().encode()).hexdigest()


def codes_in(text: str) -> list[str]:
    return [f"{a}-{b}" for a, b in _CODE.findall(text.upper())]


def confirmation_for(
    confirmations: list[Confirmation], address: str, text: str, now: float
) -> tuple[Confirmation | None, str | None]:
    """The pending confirmation whose code ``text`` brings back from ``address``."""
    hashes = {hash_code(c) for c in codes_in(text)}
    if not hashes:
        return None, "no confirmation code in the mail"
    mine = [c for c in confirmations if c.address == address and c.code_hash in hashes]
    if not mine:
        return None, "the code matches no pending confirmation of this sender"
    match = mine[0]
    if match.used:
        return None, "the code was already used"
    if now > match.expires:
        return None, "the code expired"
    return match, None


def totp_check(
    secret: str, subject: str, last_step: int | None, now: float
) -> tuple[int | None, str | None]:
    """The TOTP time step the subject's code belongs to (now, one before or one after),
    refusing a step at or before the last one used: each code works once."""
    if not secret:
        return None, "no TOTP secret configured for this sender"
    found = _TOTP.findall(subject)
    if not found:
        return None, "no TOTP code in the subject"
    totp = pyotp.TOTP(secret)
    step_now = int(now // TOTP_STEP_S)
    for code in found:
        for step in (step_now, step_now - 1, step_now + 1):
            if hmac.compare_digest(totp.at(step * TOTP_STEP_S), code):
                if last_step is not None and step <= last_step:
                    return None, "the TOTP code was already used"
                return step, None
    return None, "the TOTP code is wrong or expired"


def without_totp(subject: str) -> str:
    return re.sub(r"\s+", " ", _TOTP.sub("", subject)).strip(" :-")
