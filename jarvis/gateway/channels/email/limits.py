"""The channel's limits, as pure functions: each returns the reason to refuse, or None."""

from __future__ import annotations

from jarvis.gateway.channels.email.state import Confirmation

HOUR_S = 3600.0


def size_reason(size: int, cap: int) -> str | None:
    if size > cap:
        return f"the mail is {size} bytes, above the limit of {cap}"
    return None


def rate_reason(times: list[float], now: float, per_hour: int) -> str | None:
    recent = [t for t in times if now - t < HOUR_S]
    if len(recent) >= per_hour:
        return f"{len(recent)} tasks in the last hour; the limit is {per_hour}"
    return None


def pending_reason(
    confirmations: list[Confirmation], address: str, now: float, most: int
) -> str | None:
    waiting = [c for c in confirmations if c.address == address and not c.used and now <= c.expires]
    if len(waiting) >= most:
        return f"{len(waiting)} tasks already wait for confirmation; the limit is {most}"
    return None
