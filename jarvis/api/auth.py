"""Who may talk to the API: the token, the browser's cookie, and the Host and Origin checks.

- The token is made at the first start in ``DATA/config/api_token`` (mode 0600; a looser
  mode is tightened, with a warning). Every API request carries it as
  ``Authorization: Bearer TOKEN``, or the browser's session cookie.
- The browser gets the cookie from a one-time login link (``/login?code=...``) printed
  by ``jarvis serve``, or by posting the token to ``/api/login``. The cookie is HttpOnly
  and SameSite=Strict; its value is derived from the token, so it survives a restart and
  dies with a new token.
- ``Host`` must name this server (a loopback name, or the host given explicitly), so a
  rebound DNS name cannot reach it; an ``Origin`` (or ``Sec-Fetch-Site: cross-site``)
  from elsewhere is refused, and a request authenticated only by the cookie must show a
  matching ``Origin`` before it may change anything (CSRF).

Each check is a small pure function; :class:`Guard` (an ASGI middleware in front of
everything) applies them, and fails closed: every path needs the token but the few public
ones (the panel's page and files, the login).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import secrets
import socket
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from jarvis.api.settings import LOOPBACK_NAMES
from jarvis.discovery import TOKEN_FILE

log = logging.getLogger(__name__)

COOKIE = "jarvis_session"
MIN_TOKEN_LEN = 32
PUBLIC_PATHS = (
    "/",
    "/login",
    "/api/login",
    "/api/session",
    "/favicon.ico",
    "/.well-known/agent-card.json",
)
"""The A2A Agent Card is public by the protocol; the A2A endpoint ``/a2a`` is not."""
PUBLIC_PREFIXES = ("/static/",)
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
WEBSOCKET_PREFIX = "/api/vnc/"
"""The only WebSockets served (the live view's relay); a WebSocket on any other path, or
one that fails a check, is closed before it is accepted."""


def load_or_create_token(data_dir: Path, name: Path = TOKEN_FILE) -> str:
    """The API token of this data dir (or the token in ``name`` under it, such as the MCP
    server's), made (0600) at the first call."""
    path = data_dir / name
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_token(path)
    token = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(token + "\n")
    log.info("made a new token in %s", path)
    return token


def _read_token(path: Path) -> str:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        log.warning("%s was readable by others (mode %o); now 0600", path, mode)
        os.chmod(path, 0o600)
    token = path.read_text(encoding="utf-8").strip()
    if len(token) < MIN_TOKEN_LEN or any(c.isspace() for c in token):
        raise ValueError(
            f"{path} does not hold a usable token (at least {MIN_TOKEN_LEN} characters, "
            "no spaces); delete it and a new one is made at the next start"
        )
    return token


def cookie_value(token: str) -> str:
    """The session cookie's value for ``token``."""
    return hmac.new(token.encode(), b"jarvis web session", hashlib.sha256).hexdigest()


def bearer_ok(header: str | None, token: str) -> bool:
    """``Authorization: Bearer TOKEN`` with exactly this token (compared in constant time)."""
    if not header:
        return False
    scheme, _, value = header.strip().partition(" ")
    given = value.strip().encode()
    return scheme.lower() == "bearer" and hmac.compare_digest(given, token.encode())


def cookie_ok(cookie_header: str | None, token: str) -> bool:
    """A ``Cookie`` header carrying this token's session cookie."""
    if not cookie_header:
        return False
    expected = cookie_value(token).encode()
    for part in cookie_header.split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE and hmac.compare_digest(value.strip().encode(), expected):
            return True
    return False


def allowed_hosts(host: str, port: int | None, explicit: bool, unix: bool) -> frozenset[str]:
    """The ``Host`` header values this server answers to."""
    names = {n for n in LOOPBACK_NAMES if not (n.startswith("::"))}
    if explicit and host in ("0.0.0.0", "::", ""):  # every interface: this machine's name
        names.update({socket.gethostname(), socket.getfqdn()})
    elif explicit:
        names.add(f"[{host}]" if ":" in host else host)
    out: set[str] = set()
    for name in names:
        if port is not None:
            out.add(f"{name}:{port}")
            if port == 80:
                out.add(name)
        if unix:
            out.add(name)
    return frozenset(n.lower() for n in out)


def host_ok(host: str | None, allowed: Iterable[str]) -> bool:
    return bool(host) and host.strip().lower() in allowed  # type: ignore[union-attr]


def origin_ok(origin: str | None, allowed: Iterable[str]) -> bool:
    """No Origin (not a browser's cross-origin request), or ``http://`` + an allowed host."""
    if origin is None:
        return True
    origin = origin.strip().lower()
    return origin.startswith("http://") and origin[len("http://") :] in allowed


@dataclass
class LoginCodes:
    """One-time login codes: each opens one browser session, then is gone."""

    _codes: set[str] = field(default_factory=set)

    def issue(self) -> str:
        code = secrets.token_urlsafe(24)
        self._codes.add(code)
        return code

    def redeem(self, code: str | None) -> bool:
        if not code:
            return False
        for known in list(self._codes):
            if hmac.compare_digest(known.encode(), code.encode()):
                self._codes.discard(known)
                return True
        return False


@dataclass(frozen=True)
class Refusal:
    status: int
    detail: str


def check(
    method: str,
    path: str,
    headers: dict[str, str],
    token: str,
    allowed: frozenset[str],
) -> Refusal | None:
    """Why a request is refused (None: let it through). ``headers`` have lower-case names."""
    if not host_ok(headers.get("host"), allowed):
        return Refusal(403, "this server does not answer to that Host")
    origin = headers.get("origin")
    if not origin_ok(origin, allowed) or headers.get("sec-fetch-site") == "cross-site":
        return Refusal(403, "requests from other sites are refused")
    if path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES):
        return None
    if bearer_ok(headers.get("authorization"), token):
        return None
    if cookie_ok(headers.get("cookie"), token):
        if method not in SAFE_METHODS and origin is None:
            return Refusal(403, "a browser request that changes something must carry Origin")
        return None
    return Refusal(401, "missing or wrong token (Authorization: Bearer TOKEN)")


class Guard:
    """ASGI middleware applying :func:`check` to every HTTP request."""

    def __init__(self, app: ASGIApp, token: str, allowed: frozenset[str]) -> None:
        self.app = app
        self.token = token
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if scope["type"] == "websocket":  # only the live view; a cookie needs Origin (CSWSH)
            refusal = check("WEBSOCKET", scope["path"], headers, self.token, self.allowed)
            if refusal is None and scope["path"].startswith(WEBSOCKET_PREFIX):
                await self.app(scope, receive, send)
            else:  # refused before the handshake: the client sees 403
                await send({"type": "websocket.close", "code": 1008})
            return
        refusal = check(scope["method"], scope["path"], headers, self.token, self.allowed)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        await send_refusal(send, refusal, {"detail": refusal.detail}, b"Bearer")


async def send_refusal(
    send: Send, refusal: Refusal, answer: dict[str, Any], challenge: bytes
) -> None:
    """Answer ``refusal`` with the JSON ``answer``; a 401 carries ``challenge`` as its
    ``WWW-Authenticate`` (the API's and the MCP server's guards)."""
    body = json.dumps(answer).encode()
    extra: list[tuple[bytes, bytes]] = []
    if refusal.status == 401:
        extra.append((b"www-authenticate", challenge))
    start: Message = {
        "type": "http.response.start",
        "status": refusal.status,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"),
            *extra,
        ],
    }
    await send(start)
    await send({"type": "http.response.body", "body": body})
