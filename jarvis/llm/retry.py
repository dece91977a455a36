"""When to retry a model call and how long to wait: pure functions shared by the adapters."""

from __future__ import annotations

import random
import re
import socket
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

# 408 request timeout, 409 conflict (Anthropic's lock contention), 429 rate limit,
# 5xx server errors and Anthropic's 529 "overloaded".
RETRYABLE_STATUS = frozenset({408, 409, 429})


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUS or status >= 500


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter; ``retry-after`` from the server wins but is capped.

    ``base_delay_s`` is the first delay; each retry doubles it up to ``max_delay_s``.
    Tests pass a tiny base so they stay fast.
    """

    max_retries: int = 4
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    max_retry_after_s: float = 60.0

    def delay(
        self,
        attempt: int,
        retry_after: float | None = None,
        rand: Callable[[], float] = random.random,
    ) -> float:
        """Seconds to wait before retry number ``attempt + 1`` (``attempt`` counts from 0)."""
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_retry_after_s)
        backoff = min(self.max_delay_s, self.base_delay_s * (2**attempt))
        # "equal jitter": at least half the backoff, so retries never bunch up at zero
        return backoff / 2 + backoff / 2 * rand()


def parse_retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date), else None."""
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


_TOOLS_WORD = re.compile(r"\btools?\b|tool[_ ]?(use|call|choice)|function[_ ]?call", re.I)
_REJECTION = re.compile(
    r"not support|unsupported|does not support|doesn't support|not enabled|not allowed|"
    r"unknown (field|parameter|argument)|unrecognized|extra (inputs|fields)|not permitted|invalid",
    re.I,
)


def rejects_tools(status: int, message: str) -> bool:
    """True when an error response says the endpoint cannot do native tool calling."""
    if status not in (400, 404, 422, 501):
        return False
    return bool(_TOOLS_WORD.search(message) and _REJECTION.search(message))


def error_text(body: object, fallback: str) -> str:
    """The human-readable message of an API error body ({"error": {"message": ...}})."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    if isinstance(body, str) and body.strip():
        return body.strip()[:500]
    return fallback


_CONNECT_ERRORS = ("ConnectError", "ConnectTimeout")  # httpx's and httpx2's, by name


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its causes, outermost first."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def connect_failure(exc: BaseException) -> bool:
    """True when a connection could not be made at all: the name did not resolve, the
    port refused, or TLS failed (a stream that broke off later is not this)."""
    return any(
        isinstance(e, (socket.gaierror, ConnectionRefusedError, ssl.SSLError))
        or type(e).__name__ in _CONNECT_ERRORS
        for e in _chain(exc)
    )


def root_cause_text(exc: BaseException) -> str:
    """The innermost cause, as "Type: message" (e.g. ConnectionRefusedError: [Errno 111]
    ...), which says more than the wrappers' "Connection error." around it."""
    root = _chain(exc)[-1]
    return f"{type(root).__name__}: {root}"


def cause_text(exc: BaseException) -> str:
    """What went wrong on the wire: the error's message plus its underlying cause."""
    own = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
    cause = exc.__cause__ or exc.__context__
    if cause is None or str(cause) in own:
        return str(own)
    return f"{own} ({type(cause).__name__}: {cause})"
