"""An MCP server written with the `mcp` SDK (MCPServer) for the tests, over stdio or
streamable HTTP (uvicorn on a loopback socket it binds itself).

    python -m tests.mcp_servers.demo_server stdio
    python -m tests.mcp_servers.demo_server http [PORT]   # prints "PORT <n>" once listening
    python -m tests.mcp_servers.demo_server sse [PORT]    # the older SSE transport

Tools: echo, add (structured), picture (a PNG), schedule (a schema with an enum and a
range), env_names (what it inherited), fail (isError), crash (the process exits
mid-call), hang (never answers) and grow (adds the tool `late` at run time and tells
the client the list changed).
"""

from __future__ import annotations

import contextlib
import io
import os
import socket
import sys
from typing import Annotated, Literal

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from pydantic import Field

server = MCPServer("demo")
STARTS_FILE = os.environ.get("DEMO_STARTS_FILE")


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text}"


@server.tool()
def add(a: int, b: int) -> dict[str, int]:
    """Add two integers."""
    return {"sum": a + b}


@server.tool()
def picture(color: Literal["red", "green", "blue"] = "red") -> Image:
    """A 64x48 PNG filled with one color."""
    from PIL import Image as PILImage

    buffer = io.BytesIO()
    PILImage.new("RGB", (64, 48), color).save(buffer, format="PNG")
    return Image(data=buffer.getvalue(), format="png")


@server.tool()
def schedule(day: Literal["mon", "tue", "wed"], hour: Annotated[int, Field(ge=0, le=23)]) -> str:
    """Book a slot."""
    return f"booked {day} {hour}:00"


@server.tool()
def env_names() -> list[str]:
    """The names of the environment variables this server was started with."""
    return sorted(os.environ)


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the reason."""
    raise ToolError(f"cannot do it: {reason}")


@server.tool()
def crash() -> str:
    """The server process dies while answering."""
    os._exit(3)


@server.tool()
async def hang() -> str:
    """Never answers."""
    await anyio.sleep(3600)
    return "never"


def late(word: str) -> str:
    """A tool added at run time."""
    return f"late: {word}"


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool `late` and tell the client the tool list changed."""
    if "late" not in {t.name for t in await server.list_tools()}:
        server.add_tool(late)
    await ctx.notify_tools_changed()
    with contextlib.suppress(Exception):  # a modern session has no legacy notification
        await ctx.session.send_tool_list_changed()
    return "grown"


def _count_start() -> None:
    if STARTS_FILE:
        with open(STARTS_FILE, "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()}\n")


def serve_http(port: int, kind: str = "http") -> None:
    import uvicorn

    app = server.sse_app() if kind == "sse" else server.streamable_http_app()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    anyio.run(uvicorn.Server(config).serve, [sock])


if __name__ == "__main__":
    _count_start()
    if len(sys.argv) > 1 and sys.argv[1] in ("http", "sse"):
        serve_http(int(sys.argv[2]) if len(sys.argv) > 2 else 0, sys.argv[1])
    else:
        server.run("stdio")
