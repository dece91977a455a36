"""RFC 6238 time-based one-time passwords (and the RFC 4226 HOTP they are built on)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import struct
import time
from typing import Literal

Algorithm = Literal["sha1", "sha256", "sha512"]


class SeedError(ValueError):
    """A TOTP seed that is not base32."""


def decode_seed(seed: str) -> bytes:
    """The key bytes of a base32 seed (spaces and case ignored, padding optional)."""
    clean = "".join(seed.split()).upper().rstrip("=")
    try:
        return base64.b32decode(clean + "=" * (-len(clean) % 8))
    except (binascii.Error, ValueError) as exc:
        raise SeedError("a TOTP seed is base32 (letters A-Z and digits 2-7)") from exc


def hotp(key: bytes, counter: int, digits: int = 6, algorithm: Algorithm = "sha1") -> str:
    """RFC 4226: the ``digits``-digit code for ``counter``."""
    mac = hmac.new(key, struct.pack(">Q", counter), getattr(hashlib, algorithm)).digest()
    offset = mac[-1] & 0x0F
    number = struct.unpack(">I", mac[offset : offset + 4])[0] & 0x7FFFFFFF
    return str(number % 10**digits).zfill(digits)


def totp(
    key: bytes,
    at: float | None = None,
    *,
    period: int = 30,
    digits: int = 6,
    algorithm: Algorithm = "sha1",
) -> str:
    """RFC 6238: the code for the time ``at`` (default now), T0 = 0."""
    moment = time.time() if at is None else at
    return hotp(key, int(moment // period), digits, algorithm)


def seconds_left(at: float | None = None, period: int = 30) -> float:
    """How long the code of ``at`` (default now) stays valid."""
    moment = time.time() if at is None else at
    return period - moment % period
