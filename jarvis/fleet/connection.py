"""Reaching Redis: the URL (password from it or the environment, never in a log),
a client, and waiting for the server with backoff.

Side: both (the coordinator and the workers)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from jarvis.redaction import register

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger(__name__)

PASSWORD_ENV = "JARVIS_REDIS_PASSWORD"
"""A password for a URL that names none (so it need not be on a command line)."""
SCHEMES = ("redis", "rediss")
BACKOFF_START_S = 0.5
BACKOFF_MAX_S = 10.0


class FleetUrlError(ValueError):
    """A Redis URL that cannot be used (one line for the user)."""


def check_url(url: str) -> str:
    """``url`` checked (redis:// or rediss://, a host), with the password of
    ``JARVIS_REDIS_PASSWORD`` put in when the URL has none; its password registered as
    a secret, so no log, journal or report shows it."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise FleetUrlError(f"not a Redis URL: {shown(url)} ({exc})") from None
    if parts.scheme not in SCHEMES or not parts.hostname:
        raise FleetUrlError(f"not a Redis URL (redis://HOST:PORT/DB or rediss://): {shown(url)}")
    password = parts.password
    if password is None and os.environ.get(PASSWORD_ENV):
        password = os.environ[PASSWORD_ENV]
        user = parts.username or ""
        host = parts.hostname if port is None else f"{parts.hostname}:{port}"
        parts = parts._replace(netloc=f"{user}:{password}@{host}")
        url = urlunsplit(parts)
    if password:
        register(password)
    return url


def shown(url: str) -> str:
    """``url`` as it may be printed: without its password."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        host = parts.hostname or ""
        if parts.port is not None:
            host = f"{host}:{parts.port}"
        return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))
    except ValueError:
        return "(an unreadable URL)"


def client(url: str) -> Redis:
    """An asyncio client for ``url`` (bytes in, bytes out: artefacts are binary)."""
    from redis.asyncio import Redis

    return Redis.from_url(url, decode_responses=False, health_check_interval=15)


async def wait_for_redis(
    redis: Redis, url: str, say: Callable[[str], None], stopping: Callable[[], bool] = lambda: False
) -> bool:
    """PING until Redis answers, with backoff; ``say`` gets one line when the wait begins
    (what for) and one when it ends. False when ``stopping()`` turned true first."""
    from redis.exceptions import RedisError

    delay = BACKOFF_START_S
    told = False
    while not stopping():
        try:
            await redis.ping()
            if told:
                say(f"Redis at {shown(url)} is back")
            return True
        except (RedisError, OSError) as exc:
            line = f"waiting for Redis at {shown(url)} ({reason(exc)})"
            if not told:  # one line per outage; each retry goes to the debug log
                say(f"{line}; retrying with backoff up to {BACKOFF_MAX_S:.0f}s")
                told = True
            log.debug("%s; next try in %.1fs", line, delay)
        await asyncio.sleep(delay)
        delay = min(delay * 2, BACKOFF_MAX_S)
    return False


def reason(exc: BaseException) -> str:
    """A short reason for a Redis failure, without the URL's password."""
    from jarvis.redaction import redact

    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return redact(text)[:200]
