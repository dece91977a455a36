"""``jarvis mcp list``: start each MCP server of ``mcp.json``, show its state and tools.
(``jarvis mcp serve``, Jarvis as an MCP server, is in :mod:`jarvis.mcp_server.serve`.)

Exit 0 when every server answered, 1 when one did not (or the file has a bad entry).
Environment values and header values of the servers are never printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from jarvis.config import Settings

EXIT_OK, EXIT_FAILED = 0, 1


def register(subparsers: Any) -> None:
    from jarvis.mcp_server.serve import add_serve

    mcp = subparsers.add_parser(
        "mcp", help="MCP: list the MCP servers Jarvis uses; serve Jarvis to MCP clients"
    )
    sub = mcp.add_subparsers(dest="mcp_command", metavar="SUBCOMMAND")
    listing = sub.add_parser("list", help="start each server of config/mcp.json; show its tools")
    listing.add_argument("--json", action="store_true", help="one JSON object instead of text")
    listing.set_defaults(handler=cmd_mcp_list)
    add_serve(sub)
    mcp.set_defaults(handler=_usage(mcp))


def _usage(parser: argparse.ArgumentParser) -> Any:
    def show(args: argparse.Namespace, settings: Settings) -> int:
        parser.print_help()
        return 2

    return show


async def server_status(settings: Settings) -> tuple[list[dict[str, Any]], list[str]]:
    """Each server's status after it had ``start_timeout_s`` to come up; and the problems
    of the config file."""
    from jarvis.tools.mcp_bridge import McpManager
    from jarvis.tools.registry import ToolRegistry

    async with McpManager.running(settings) as manager:
        manager.attach(ToolRegistry(settings))
        await manager.wait_ready(settings.toolbox.mcp.start_timeout_s)
        return manager.status(), list(manager.config.problems)


def cmd_mcp_list(args: argparse.Namespace, settings: Settings) -> int:
    servers, problems = asyncio.run(server_status(settings))
    if args.json:
        print(json.dumps({"servers": servers, "problems": problems}, indent=2))
    else:
        if not servers and not problems:
            print("no MCP servers (add them to config/mcp.json under 'mcpServers')")
        for server in servers:
            state = server["state"]
            error = f": {server['error']}" if server["error"] else ""
            print(f"{server['name']}  {state}{error}  [{server['where']}]")
            for tool in server["tools"]:
                print(f"    {tool}")
        for problem in problems:
            print(f"problem: {problem}")
    bad = problems or any(s["state"] != "ready" for s in servers)
    return EXIT_FAILED if bad else EXIT_OK
