"""The guard in front of ``jarvis mcp serve --http``: the API's checks
(:func:`jarvis.api.auth.check`: Host, Origin, the bearer token), refused in a form MCP
clients report.

An MCP client reads a refused POST's body when it is a JSON-RPC error and shows its
message ("missing or wrong token ..."); any other body becomes a bare "Server returned an
error response". So a refusal is a JSON-RPC error (code -32001, with the request's id when
it can be read) that also carries the API's ``detail``. The 401's ``WWW-Authenticate``
names no authorization server (no ``resource_metadata``) and says ``error="invalid_token"``:
this server takes one fixed token, and no OAuth flow can get one.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from jarvis.api.auth import Refusal, check, send_refusal

REFUSED = -32001
"""The JSON-RPC error code of a refused request (the server-defined range)."""
MAX_PEEK = 64 * 1024
"""The most of a refused request's body read to find its JSON-RPC id."""


class McpGuard:
    """ASGI middleware: a request passes :func:`check`, or gets a JSON-RPC refusal."""

    def __init__(self, app: ASGIApp, token: str, allowed: frozenset[str]) -> None:
        self.app = app
        self.token = token
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = check(scope["method"], scope["path"], headers, self.token, self.allowed)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        request_id = await _request_id(receive) if scope["method"] == "POST" else None
        await refuse(send, refusal, request_id)


async def refuse(send: Send, refusal: Refusal, request_id: Any = None) -> None:
    """Answer with ``refusal`` as a JSON-RPC error the client shows."""
    error = {"code": REFUSED, "message": refusal.detail}
    answer = {"jsonrpc": "2.0", "id": request_id, "error": error, "detail": refusal.detail}
    said = refusal.detail.replace('"', "'")
    challenge = f'Bearer realm="jarvis-mcp", error="invalid_token", error_description="{said}"'
    await send_refusal(send, refusal, answer, challenge.encode())


async def _request_id(receive: Receive) -> Any:
    """The id of the JSON-RPC request in the body (None when it cannot be read)."""
    body = b""
    while len(body) <= MAX_PEEK:
        message = await receive()
        if message["type"] != "http.request":
            return None
        body += message.get("body", b"")
        if not message.get("more_body", False):
            break
    else:
        return None
    try:
        found = json.loads(body)
    except ValueError:
        return None
    request_id = found.get("id") if isinstance(found, dict) else None
    return request_id if isinstance(request_id, str | int) else None
