"""Requests to the control API: the client (bearer token, TCP or the daemon's Unix socket,
keep-alive shorter than the server's), an answer's body, and one line for every failure
(the daemon's own ``detail``; the token is never in it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

TIMEOUT = httpx.Timeout(10.0, read=None)  # the event stream waits as long as it is quiet
LIMITS = httpx.Limits(keepalive_expiry=2.0)
"""An idle connection is dropped well before the server closes it (its keep-alive is
30 s): a request never goes out on a connection the server is closing (a ReadError)."""


class ApiError(Exception):
    """The daemon refused a request or could not be reached: one line; ``status`` is the
    HTTP status when the daemon answered."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def async_client(
    base_url: str,
    token: str,
    *,
    socket: Path | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    timeout: httpx.Timeout = TIMEOUT,
) -> httpx.AsyncClient:
    """A client of the daemon at ``base_url`` (through ``socket`` when given)."""
    if transport is None and socket is not None:
        transport = httpx.AsyncHTTPTransport(uds=str(socket), limits=LIMITS)
    return httpx.AsyncClient(
        base_url=base_url.rstrip("/"),
        headers={"authorization": f"Bearer {token}"},
        timeout=timeout,
        limits=LIMITS,
        transport=transport,
    )


def sync_client(
    base_url: str, token: str, *, socket: Path | None = None, timeout: float = 10.0
) -> httpx.Client:
    """The same, blocking (a one-shot command: ``jarvis stop``)."""
    transport = None if socket is None else httpx.HTTPTransport(uds=str(socket))
    return httpx.Client(
        base_url=base_url.rstrip("/"),
        headers={"authorization": f"Bearer {token}"},
        timeout=timeout,
        transport=transport,
    )


def response_body(response: httpx.Response) -> Any:
    """A daemon answer's body: None when empty, parsed JSON, else the raw bytes."""
    if not response.content:
        return None
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.json()
    return response.content


def detail(response: httpx.Response) -> str:
    """What the daemon said went wrong, in one line (FastAPI's ``detail``; of a 422, the
    first problem in words)."""
    try:
        said = response.json().get("detail")
    except (ValueError, AttributeError):
        said = None
    if isinstance(said, list):
        first = said[0] if said and isinstance(said[0], dict) else {}
        where = ".".join(str(p) for p in first.get("loc", [])[1:])
        said = f"{where}: {first.get('msg', 'invalid')}" if where else first.get("msg")
    return str(said) if said else f"{response.status_code} {response.reason_phrase}"


def what_failed(exc: httpx.HTTPError) -> str:
    """A transport failure in one line: its kind and the first line of its text."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__} {text}".strip()
