"""The FastAPI app: the guard in front, the ``/api`` routes, the login link, the web panel."""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from jarvis import __version__
from jarvis.a2a.mount import mount_a2a
from jarvis.api.approvals import mount_safety, stop_running
from jarvis.api.auth import Guard
from jarvis.api.routes import Daemon, router, set_cookie

PANEL_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
LOGIN_FAILED = """<!doctype html><meta charset="utf-8"><title>Jarvis: login</title>
<p>This login link was already used, or it is wrong. Open the panel and paste the token from
<code>DATA/config/api_token</code>, or restart <code>jarvis serve</code> for a new link.</p>
<p><a href="/">Open the panel</a></p>"""
NO_TELEMETRY = {
    "tracing": False,
    "metrics": False,
    "logs": False,
    "operation_spans": False,
    "auto_configure": False,
}


def static_dir() -> Path:
    return Path(str(resources.files("jarvis.api") / "static"))


def create_app(daemon: Daemon, allowed_hosts: frozenset[str]) -> Guard:
    """The ASGI app: :class:`~jarvis.api.auth.Guard` around FastAPI."""
    app = FastAPI(
        title="Jarvis control API",
        version=__version__,
        description="The daemon's tasks, events and controls. Auth: Bearer token from "
        "DATA/config/api_token. Events: GET /api/events (Server-Sent Events).",
        telemetry=NO_TELEMETRY,  # type: ignore[arg-type]
    )
    app.state.daemon = daemon
    app.include_router(router)
    mount_safety(app, daemon.gateway.approvals, functools.partial(stop_running, daemon.gateway))
    mount_a2a(app, daemon.gateway)
    panel = static_dir()
    app.mount("/static", StaticFiles(directory=panel), name="static")

    @app.get("/", include_in_schema=False)
    async def index() -> Response:
        html = (panel / "index.html").read_text(encoding="utf-8")
        return HTMLResponse(html, headers=PANEL_HEADERS)

    @app.get("/login", include_in_schema=False)
    async def login_link(request: Request, code: str = "") -> Response:
        """The one-time link printed by ``jarvis serve``: sets the session cookie."""
        if not daemon.codes.redeem(code):
            return HTMLResponse(LOGIN_FAILED, status_code=401, headers=PANEL_HEADERS)
        response = RedirectResponse("/", status_code=303, headers=PANEL_HEADERS)
        set_cookie(response, daemon.token)
        return response

    return Guard(app, daemon.token, allowed_hosts)
