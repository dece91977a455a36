"""The A2A routes on the control API's FastAPI app.

``GET /.well-known/agent-card.json`` is public (the protocol's rule; the Guard lets it
through), ``POST /a2a`` (JSON-RPC, A2A 1.0 and 0.3 clients) needs the daemon's token and
passes the API's Host and Origin checks like every other route.
"""

from __future__ import annotations

from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import create_jsonrpc_routes
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from jarvis.a2a.card import RPC_PATH, agent_card
from jarvis.a2a.daemon import A2ADaemon
from jarvis.a2a.handler import JarvisHandler
from jarvis.gateway.service import DaemonService

CARD_PATH = AGENT_CARD_WELL_KNOWN_PATH


def mount_a2a(app: FastAPI, service: DaemonService) -> JarvisHandler:
    daemon = A2ADaemon(service)
    handler = JarvisHandler(daemon)

    @app.get(CARD_PATH, include_in_schema=False)
    async def card(request: Request) -> JSONResponse:
        """The public Agent Card, its interface URL on the address the client used."""
        host = request.headers.get("host", "127.0.0.1")
        found = agent_card(daemon.settings, f"http://{host}")
        return JSONResponse(agent_card_to_dict(found), headers={"cache-control": "no-store"})

    app.router.routes.extend(create_jsonrpc_routes(handler, RPC_PATH, enable_v0_3_compat=True))
    return handler
