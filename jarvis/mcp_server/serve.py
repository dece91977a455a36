"""``jarvis mcp serve``: run the MCP server over stdio, or over streamable HTTP.

It finds the ``jarvis serve`` of the data dir as the TUI does (``DATA/serve.lock``), or
starts one as the TUI does and stops it on exit (``--no-start`` refuses to). Over stdio,
stdout is the protocol's: everything said goes to stderr.

Over HTTP (``--http HOST:PORT``, loopback unless a host is named; port 0 picks a free one)
the endpoint is ``/mcp``, and every request must carry ``Authorization: Bearer TOKEN`` with
the MCP server's own token, ``DATA/config/mcp_token`` (0600, made at the first start). It is
not the daemon's API token on purpose: a client holding it reaches the tools listed in
:mod:`jarvis.mcp_server.tools` and nothing else, whereas the API token could approve held
calls or stop the daemon. ``Host`` must name this server and a foreign ``Origin`` is refused
(the MCP specification's guard against DNS rebinding), by the API's own checks
(:mod:`jarvis.mcp_server.http_guard`, which refuses in a form MCP clients show: a 401 is
"missing or wrong token", never the start of an OAuth flow).

The server answers both of the SDK client's ways in: the 2026 ``server/discover`` probe
(the client's default mode) and the older ``initialize`` handshake (``mode="legacy"``),
over stdio and HTTP alike.

Exit codes: 0 the client went away (stdin closed) or Ctrl-C, 1 no daemon could be found or
started, 2 a bad ``--http``.
"""

from __future__ import annotations

import argparse
import socket
import sys
from pathlib import Path
from typing import Any

from jarvis.config import Settings

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
TOKEN_FILE = Path("config") / "mcp_token"
ENDPOINT = "/mcp"


def add_serve(sub: Any) -> None:
    """The ``serve`` sub-command of ``jarvis mcp``."""
    serve = sub.add_parser(
        "serve",
        help="be an MCP server: other agents give Jarvis desktop tasks (stdio, or --http)",
        description=(
            "Serve the tools run_task, get_task, list_tasks, cancel_task, answer and "
            "screenshot to an MCP client, through the control API of the data dir's "
            "`jarvis serve` (started here when none runs)."
        ),
    )
    serve.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="streamable HTTP at http://HOST:PORT/mcp instead of stdio (loopback unless a "
        "host is named; bearer token in DATA/config/mcp_token)",
    )
    serve.add_argument("--url", help="the API of a running serve (default: from serve.lock)")
    serve.add_argument(
        "--no-start", action="store_true", help="only use a running serve; never start one"
    )
    serve.set_defaults(handler=cmd_mcp_serve)


def say(text: str) -> None:
    print(f"jarvis mcp serve: {text}", file=sys.stderr, flush=True)


def cmd_mcp_serve(args: argparse.Namespace, settings: Settings) -> int:
    from jarvis.api.settings import HttpAddress, parse_http
    from jarvis.tui.launcher import LaunchError, find_serve, start_gateway, stop_gateway

    address: HttpAddress | None = None
    if args.http is not None:
        try:
            address = parse_http(args.http)
        except ValueError as exc:
            print(f"jarvis: --http: {exc}", file=sys.stderr)
            return EXIT_USAGE
        if address is None:
            print("jarvis: --http: give HOST:PORT (leave it out for stdio)", file=sys.stderr)
            return EXIT_USAGE
    try:
        target = find_serve(settings, args.url)
        if target is None:
            if args.no_start:
                print(f"jarvis: no `jarvis serve` runs for {settings.data_dir}", file=sys.stderr)
                return EXIT_FAILED
            say(f"starting the gateway for {settings.data_dir} ...")
            target = start_gateway(settings)
    except LaunchError as exc:
        print(f"jarvis: {exc}", file=sys.stderr)
        return EXIT_FAILED
    say(f"using {target.label}")
    try:
        sock = None if address is None else _listen(address)
        _serve(settings, target, address, sock)
    except OSError as exc:
        where = f"{address.url_host}:{address.port}" if address else "stdio"
        print(f"jarvis: cannot listen on {where}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        pass
    finally:
        if target.process is not None:
            say(f"stopped the gateway (exit {stop_gateway(target.process)})")
    return EXIT_OK


def _listen(address: Any) -> socket.socket:
    family = socket.AF_INET6 if ":" in address.host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address.host.strip("[]"), address.port))
        sock.listen(64)
    except OSError:
        sock.close()
        raise
    return sock


def _serve(settings: Settings, target: Any, address: Any, sock: socket.socket | None) -> None:
    import anyio

    from jarvis.mcp_server.link import DaemonLink
    from jarvis.mcp_server.tools import build_server

    async def main() -> None:
        link = DaemonLink(settings.data_dir, target.url, target.token, target.socket)
        server = build_server(link)
        try:
            if address is None:
                await server.run_stdio_async()
            else:
                assert sock is not None
                await _serve_http(settings, server, address, sock)
        finally:
            await link.aclose()

    anyio.run(main)


async def _serve_http(settings: Settings, server: Any, address: Any, sock: socket.socket) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    from jarvis.api.auth import allowed_hosts, load_or_create_token
    from jarvis.mcp_server.http_guard import McpGuard

    token = load_or_create_token(settings.data_dir, TOKEN_FILE)
    port = int(sock.getsockname()[1])
    allowed = allowed_hosts(address.host, port, address.explicit, False)
    security = TransportSecuritySettings(
        allowed_hosts=sorted(allowed), allowed_origins=sorted(f"http://{h}" for h in allowed)
    )
    app = server.streamable_http_app(
        streamable_http_path=ENDPOINT, transport_security=security, host=address.host
    )
    if not address.loopback:
        say(f"warning: listening on {address.host}, not only on this machine")
    say(
        f"streamable HTTP at http://{address.url_host}:{port}{ENDPOINT} "
        f"(bearer token in {settings.data_dir / TOKEN_FILE})"
    )
    config = uvicorn.Config(
        McpGuard(app, token, allowed), log_level="warning", lifespan="on", timeout_keep_alive=30
    )
    await uvicorn.Server(config).serve([sock])
