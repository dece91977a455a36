"""One MCP server, kept running: connect, list tools, follow list changes, restart.

:class:`McpConnection` owns a supervisor task. It connects with the official SDK's
``Client`` (stdio, streamable HTTP or SSE), lists the tools, and stays connected until the
server goes away: a call that finds the connection closed, or a ping that fails while
idle. Then it reconnects (a stdio server is started again) after a backoff that doubles
from ``restart_backoff_s`` up to ``restart_backoff_max_s`` and resets once a connection
has worked. While it is down, calls fail at once with :class:`ServerUnavailable`.

Tool list changes arrive as ``notifications/tools/list_changed`` (handshake protocol) or
on a ``subscriptions/listen`` stream (2026 protocol); either way the tools are listed
again and ``on_tools`` is called.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from pathlib import Path
from typing import Any, Literal, TextIO

import mcp_types
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from jarvis.tools.mcp_config import McpServerConfig
from jarvis.tools.toolbox_settings import McpSettings

log = logging.getLogger(__name__)

State = Literal["starting", "ready", "down", "stopped"]


class ServerUnavailable(Exception):
    """The server is not connected (not started yet, crashed, restarting)."""


class ServerLost(Exception):
    """The connection closed during a call (the server crashed or went away)."""


class McpConnection:
    """A supervised connection to one MCP server (see the module doc)."""

    def __init__(
        self,
        name: str,
        config: McpServerConfig,
        settings: McpSettings,
        *,
        log_dir: Path | None = None,
        on_tools: Callable[[McpConnection], None] | None = None,
    ) -> None:
        self.name = name
        self.config = config
        self.settings = settings
        self.log_dir = log_dir
        self.on_tools = on_tools
        self.state: State = "starting"
        self.error: str | None = None
        self.tools: list[mcp_types.Tool] = []
        self.starts = 0
        self.protocol: str | None = None
        self._client: Client | None = None
        self._lost = asyncio.Event()
        self._relist = asyncio.Event()
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._busy = 0

    @property
    def timeout_s(self) -> float:
        return self.config.timeout or self.settings.timeout_s

    # -- lifecycle --
    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._supervise(), name=f"mcp-{self.name}")

    async def stop(self) -> None:
        self.state = "stopped"
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def wait_ready(self, timeout: float) -> bool:
        """True once connected (or already), False at the timeout or when it failed first."""
        try:
            async with asyncio.timeout(timeout):
                async with self._changed:
                    await self._changed.wait_for(lambda: self.state != "starting")
        except TimeoutError:
            return False
        return self.state == "ready"

    async def wait_for(self, predicate: Callable[[McpConnection], bool], timeout: float) -> bool:
        """Until ``predicate(self)`` holds after a state or tool change, or the timeout."""
        try:
            async with asyncio.timeout(timeout):
                async with self._changed:
                    await self._changed.wait_for(lambda: predicate(self))
        except TimeoutError:
            return False
        return True

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    # -- calls --
    async def call(self, tool: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        """Call one tool; the caller bounds the time (a cancel tells the server)."""
        client = self._client
        if self.state != "ready" or client is None:
            raise ServerUnavailable(self._why_down())
        self._busy += 1
        try:
            return await client.call_tool(tool, arguments)
        except MCPError as exc:
            if exc.code == mcp_types.CONNECTION_CLOSED:
                self._mark_lost("the connection closed during a call")
                raise ServerLost(str(exc)) from exc
            raise
        except (OSError, EOFError) as exc:
            self._mark_lost(f"{type(exc).__name__}: {exc}")
            raise ServerLost(str(exc)) from exc
        finally:
            self._busy -= 1

    def _why_down(self) -> str:
        if self.state == "starting":
            return f"MCP server '{self.name}' is still starting"
        detail = f": {self.error}" if self.error else ""
        return f"MCP server '{self.name}' is not running{detail}; it is restarted automatically"

    def _mark_lost(self, why: str) -> None:
        if self.state == "ready":
            log.warning("MCP server %s lost: %s", self.name, why)
            self.state, self.error = "down", why
        self._lost.set()

    # -- the supervisor --
    async def _supervise(self) -> None:
        backoff = self.settings.restart_backoff_s
        while True:
            self._lost.clear()
            worked = False
            try:
                worked = await self._connect_and_serve()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the boundary: any failure to run becomes "down"
                error = _describe(exc)
                same = error == self.error  # reported once; retries of the same log quietly
                self.error = error
                (log.info if same else log.warning)("MCP server %s is down: %s", self.name, error)
            self._client = None
            self.state = "down"
            await self._notify()
            if worked:
                backoff = self.settings.restart_backoff_s
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self.settings.restart_backoff_max_s)

    async def _connect_and_serve(self) -> bool:
        """Connect, list, serve until lost; True when the connection came up."""
        async with AsyncExitStack() as stack:
            client = Client(
                self._transport(stack),
                mode=self.config.protocol,
                message_handler=self._on_message,
                cache=None,
            )
            self.starts += 1
            async with asyncio.timeout(self.settings.start_timeout_s):
                await stack.enter_async_context(client)
                self._client = client
                self.protocol = client.session.protocol_version
                await self._list()
            self.state, self.error = "ready", None
            log.info("MCP server %s ready: %d tool(s)", self.name, len(self.tools))
            await self._notify()
            helpers = [asyncio.create_task(self._relister()), asyncio.create_task(self._health())]
            if self.protocol in MODERN_PROTOCOL_VERSIONS:
                helpers.append(asyncio.create_task(self._listen(client)))
            try:
                await self._lost.wait()
            finally:
                for helper in helpers:
                    helper.cancel()
                await asyncio.gather(*helpers, return_exceptions=True)
            return True

    def _transport(self, stack: AsyncExitStack) -> AbstractAsyncContextManager[Any]:
        config = self.config
        if config.transport == "stdio":
            assert config.command is not None
            params = StdioServerParameters(
                command=config.command, args=config.args, env=config.env or None, cwd=config.cwd
            )
            return stdio_client(params, errlog=self._errlog(stack))
        assert config.url is not None
        if config.transport == "sse":
            return sse_client(config.url, headers=config.headers or None)
        http = create_mcp_http_client(headers=config.headers or None)
        return streamable_http_client(config.url, http_client=http)

    def _errlog(self, stack: AsyncExitStack) -> TextIO:
        """The server's stderr goes to ``DATA/logs/mcp-NAME.log`` (or nowhere)."""
        if self.log_dir is None:
            return stack.enter_context(open("/dev/null", "w", encoding="utf-8"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        path = self.log_dir / f"mcp-{self.name}.log"
        return stack.enter_context(path.open("a", encoding="utf-8"))

    async def _list(self) -> None:
        assert self._client is not None
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(100):  # a server that pages forever cannot hang us
            params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
            result = await self._client.session.list_tools(params=params)
            tools.extend(result.tools)
            cursor = result.next_cursor
            if not cursor:
                break
        self.tools = tools
        if self.on_tools is not None:
            self.on_tools(self)
        await self._notify()

    async def _on_message(self, message: Any) -> None:
        """Runs inside the SDK's read loop: only flag work, never call the server here."""
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._relist.set()
        elif isinstance(message, Exception):
            log.info("MCP server %s: transport error: %s", self.name, message)

    async def _relister(self) -> None:
        while True:
            await self._relist.wait()
            self._relist.clear()
            try:
                await self._list()
            except MCPError as exc:
                if exc.code == mcp_types.CONNECTION_CLOSED:
                    self._mark_lost("the connection closed while listing tools")
                    return
                log.warning("MCP server %s: listing tools failed: %s", self.name, exc)

    async def _listen(self, client: Client) -> None:
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    self._relist.set()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # listen is best effort: pings still watch the server
            log.info("MCP server %s: change stream ended: %s", self.name, exc)

    async def _health(self) -> None:
        """While idle, check the server answers; one that does not is gone."""
        while True:
            await asyncio.sleep(self.settings.health_interval_s)
            if self._busy:
                continue
            problem = await self.check_alive()
            if problem is not None:
                self._mark_lost(problem)
                return

    async def check_alive(self) -> str | None:
        """None when the server answers a request in time, else what went wrong.

        The handshake protocol has ``ping``; the 2026 protocol removed it, so there the
        tool list is asked for (which also catches a missed change). An error answer is
        still an answer: only a closed connection, a transport error or silence count.
        """
        client = self._client
        if client is None:
            return "not connected"
        try:
            async with asyncio.timeout(self.settings.health_interval_s):
                if self.protocol in MODERN_PROTOCOL_VERSIONS:
                    await self._list()
                else:
                    await client.session.send_ping()
        except asyncio.CancelledError:
            raise
        except MCPError as exc:
            if exc.code == mcp_types.CONNECTION_CLOSED:
                return "the connection closed"
            return None
        except Exception as exc:  # any other failure: the server is not answering
            return f"no answer: {_describe(exc)}"
        return None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    if isinstance(exc, TimeoutError):
        return "did not answer in time"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
