"""MCP servers' tools in the ToolRegistry, as ``SERVER__TOOL``, under the one policy.

:class:`McpManager` starts one :class:`McpConnection` per server of ``mcp.json`` and keeps
the registries it is attached to in step with each server's tool list (tools a server
adds or drops at run time come and go). A tool's arguments are checked against the
server's JSON schema by the registry before the call (-32602 naming the field); a server
that is down or crashes during the call gives -32005; a call that hangs ends at the
tool's timeout (the server's ``timeout``, else ``toolbox.mcp.timeout_s``) with -32003.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import mcp_types
from mcp.shared.exceptions import MCPError

from jarvis.config import Settings
from jarvis.tools.context import ToolContext
from jarvis.tools.mcp_client import McpConnection, ServerLost, ServerUnavailable
from jarvis.tools.mcp_config import (
    McpConfig,
    load_mcp_config,
    mcp_config_path,
    tool_name,
)
from jarvis.tools.mcp_results import describe_arguments_schema, to_tool_result
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.results import INTERNAL, INVALID_PARAMS, ToolFailure, ToolResult

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Entry:
    server: str
    tool: str
    schema: dict[str, Any]
    description: str


class McpManager:
    """The MCP servers of one data dir and the registries that offer their tools."""

    def __init__(self, settings: Settings, config: McpConfig | None = None) -> None:
        self.settings = settings
        path = mcp_config_path(settings.data_dir, settings.toolbox.mcp.config_file)
        self.config = config if config is not None else load_mcp_config(path)
        self.connections: dict[str, McpConnection] = {
            name: McpConnection(
                name,
                server,
                settings.toolbox.mcp,
                log_dir=settings.data_dir / "logs",
                on_tools=self._tools_changed,
            )
            for name, server in self.config.servers.items()
        }
        self._registries: list[ToolRegistry] = []
        self._entries: dict[str, _Entry] = {}
        for problem in self.config.problems:
            log.warning("mcp.json: %s", problem)

    @classmethod
    @asynccontextmanager
    async def running(
        cls, settings: Settings, config: McpConfig | None = None
    ) -> AsyncIterator[McpManager]:
        """Start every server (without waiting for them); stop them all on exit."""
        manager = cls(settings, config)
        manager.start()
        try:
            yield manager
        finally:
            await manager.stop()

    def start(self) -> None:
        for connection in self.connections.values():
            connection.start()

    async def stop(self) -> None:
        await asyncio.gather(*(c.stop() for c in self.connections.values()))

    async def wait_ready(self, timeout: float) -> dict[str, bool]:
        """Each server's readiness after waiting at most ``timeout`` for all of them."""
        names = list(self.connections)
        ready = await asyncio.gather(*(self.connections[n].wait_ready(timeout) for n in names))
        return dict(zip(names, ready, strict=True))

    # -- the registry side --
    def attach(self, registry: ToolRegistry) -> None:
        """Offer the servers' tools on ``registry`` (now and as they change)."""
        self._registries.append(registry)
        for name, entry in self._entries.items():
            self._register(registry, name, entry)

    def _tools_changed(self, connection: McpConnection) -> None:
        """A server listed its tools: add the new ones, drop the gone, update the changed."""
        fresh = self._entries_of(connection)
        for name, entry in list(self._entries.items()):
            if entry.server == connection.name and fresh.get(name) != entry:
                del self._entries[name]
                for registry in self._registries:
                    registry.unregister(name)
        for name, entry in fresh.items():
            if name in self._entries:
                continue
            self._entries[name] = entry
            for registry in self._registries:
                self._register(registry, name, entry)

    def _entries_of(self, connection: McpConnection) -> dict[str, _Entry]:
        entries: dict[str, _Entry] = {}
        for tool in connection.tools:
            name = tool_name(connection.name, tool.name)
            other = self._entries.get(name)
            if name in entries or (other is not None and other.server != connection.name):
                log.warning(
                    "MCP tool %s.%s: the name %s is taken", connection.name, tool.name, name
                )
                continue
            entries[name] = _Entry(
                server=connection.name,
                tool=tool.name,
                schema=describe_arguments_schema(tool.input_schema),
                description=_description(connection.name, tool),
            )
        return entries

    def _register(self, registry: ToolRegistry, name: str, entry: _Entry) -> None:
        if name in registry:
            existing = registry.get(name)
            if existing is None or existing.origin != f"mcp:{entry.server}":
                log.warning("MCP tool %s not offered: a tool of that name exists", name)
                return
            registry.unregister(name)
        connection = self.connections[entry.server]

        async def call(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            return await self.call(name, entry.server, entry.tool, args)

        try:
            registry.register_schema(
                name,
                call,
                entry.schema,
                entry.description,
                timeout_s=connection.timeout_s,
                origin=f"mcp:{entry.server}",
            )
        except ValueError as exc:  # a schema that is not a schema: the tool is not offered
            log.warning("MCP tool %s not offered: %s", name, exc)

    async def call(self, name: str, server: str, tool: str, args: dict[str, Any]) -> ToolResult:
        connection = self.connections[server]
        try:
            result = await connection.call(tool, args)
        except ServerUnavailable as exc:
            raise ToolFailure(INTERNAL, f"'{name}' cannot run: {exc}") from exc
        except ServerLost as exc:
            raise ToolFailure(
                INTERNAL,
                f"MCP server '{server}' stopped during the call to '{name}' ({exc}); "
                "it is being restarted",
            ) from exc
        except MCPError as exc:
            code = INVALID_PARAMS if exc.code == mcp_types.INVALID_PARAMS else INTERNAL
            raise ToolFailure(
                code, f"'{name}': the server answered error {exc.code}: {exc}"
            ) from exc
        return to_tool_result(name, result)

    def status(self) -> list[dict[str, Any]]:
        """Each server: name, where, state, error, starts, tools (registry names)."""
        out = []
        for name, connection in self.connections.items():
            out.append(
                {
                    "name": name,
                    "where": connection.config.describe(),
                    "transport": connection.config.transport,
                    "state": connection.state,
                    "error": connection.error,
                    "starts": connection.starts,
                    "protocol": connection.protocol,
                    "tools": sorted(n for n, e in self._entries.items() if e.server == name),
                }
            )
        return out


def _description(server: str, tool: mcp_types.Tool) -> str:
    text = (tool.description or tool.title or tool.name).strip()
    return f"{text}\n(MCP server '{server}', tool '{tool.name}')"
