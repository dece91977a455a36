"""The FastAPI app: the guard in front, the ``/api`` routes, the login link, the web panel,
and the API's docs at ``/docs`` (Swagger UI from ``static/swagger/``, no CDN)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Request, Response
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel

from jarvis import __version__
from jarvis.a2a.mount import mount_a2a
from jarvis.api.approvals import mount_safety
from jarvis.api.auth import Guard, bearer_ok, cookie_ok
from jarvis.api.recordings import mount_recordings
from jarvis.api.routes import Daemon, router, set_cookie
from jarvis.api.schedules import router as schedules_router

PANEL_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
LOGIN_FAILED = """<!doctype html><meta charset="utf-8"><title>Jarvis: login</title>
<p>This login link was already used, or it is wrong. Open the panel and paste the token from
<code>DATA/config/api_token</code>, or run <code>jarvis login</code> for a new link.</p>
<p><a href="/">Open the panel</a></p>"""


class Session(BaseModel):
    logged_in: bool
    """True for a browser with the session cookie (or a client with the token)."""


FAVICON = (
    b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
    b'<rect width="16" height="16" rx="3" fill="#1f4b99"/>'
    b'<text x="8" y="12" font-size="11" text-anchor="middle" fill="#fff" '
    b'font-family="sans-serif">J</text></svg>'
)
"""The panel's icon (browsers ask for /favicon.ico on every load)."""
SWAGGER = "/static/swagger"
"""swagger-ui-dist's files in the package (static/swagger/SOURCE.txt says which)."""
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
        docs_url=None,  # served below from the package's own copy of Swagger UI
        redoc_url=None,  # ReDoc would come from a CDN
    )
    app.state.daemon = daemon
    app.include_router(router)
    app.include_router(schedules_router)
    mount_safety(app, daemon.service)
    mount_a2a(app, daemon.service)
    mount_recordings(app, daemon.service)
    panel = static_dir()
    app.mount("/static", StaticFiles(directory=panel), name="static")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        """Swagger UI for ``/openapi.json``; every file it loads is served from here."""
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=f"{app.title}: docs",
            swagger_js_url=f"{SWAGGER}/swagger-ui-bundle.js",
            swagger_css_url=f"{SWAGGER}/swagger-ui.css",
            swagger_favicon_url=f"{SWAGGER}/favicon-32x32.png",
            swagger_ui_parameters={"validatorUrl": None},  # no online validator badge
        )

    @app.get("/", include_in_schema=False)
    async def index() -> Response:
        html = (panel / "index.html").read_text(encoding="utf-8")
        return HTMLResponse(html, headers=PANEL_HEADERS)

    @app.get("/api/session", tags=["panel"])
    async def session(request: Request) -> Session:
        """Whether this browser is logged in (always 200: the panel asks before it loads,
        so a first visit logs no 401)."""
        headers = request.headers
        known = bearer_ok(headers.get("authorization"), daemon.token)
        return Session(logged_in=known or cookie_ok(headers.get("cookie"), daemon.token))

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> Response:
        return Response(FAVICON, media_type="image/svg+xml", headers=PANEL_HEADERS)

    @app.get("/login", include_in_schema=False)
    async def login_link(request: Request, code: str = "") -> Response:
        """The one-time link printed by ``jarvis serve``: sets the session cookie."""
        if not daemon.codes.redeem(code):
            return HTMLResponse(LOGIN_FAILED, status_code=401, headers=PANEL_HEADERS)
        response = RedirectResponse("/", status_code=303, headers=PANEL_HEADERS)
        set_cookie(response, daemon.token)
        return response

    return Guard(app, daemon.token, allowed_hosts)
