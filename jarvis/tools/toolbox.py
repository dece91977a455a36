"""The tools beyond the desktop, opened for one agent: workspace files, web_fetch, skills
(with a watcher that reloads changed files) and MCP servers (started, and stopped with
the agent). ``jarvis run`` and ``jarvis serve`` both get them through
:func:`jarvis.agent.factory.build_agent`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

from jarvis.config import Settings
from jarvis.tools.files import register_file_tools
from jarvis.tools.mcp_config import load_mcp_config, mcp_config_path
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.skills import SkillManager
from jarvis.tools.web import register_web_tools

if TYPE_CHECKING:
    from jarvis.tools.mcp_bridge import McpManager

log = logging.getLogger(__name__)


async def open_toolbox(
    settings: Settings, registry: ToolRegistry, stack: AsyncExitStack
) -> tuple[McpManager | None, SkillManager | None]:
    """Register the file tools and web_fetch on ``registry``, load skills and start MCP
    servers; everything started is stopped by ``stack``."""
    if "read_file" not in registry:
        register_file_tools(registry)
    if "web_fetch" not in registry:
        register_web_tools(registry, settings.toolbox.web)
    skills: SkillManager | None = None
    if settings.toolbox.skills.enabled:
        skills = SkillManager(settings, registry)
        if settings.toolbox.skills.entry_points:
            await asyncio.to_thread(skills.load_entry_points)
        skills.apply(await asyncio.to_thread(skills.plan))
        watcher = asyncio.create_task(skills.watch(), name="skills-watch")
        stack.push_async_callback(_cancel, watcher)
    manager: McpManager | None = None
    mcp = settings.toolbox.mcp
    path = mcp_config_path(settings.data_dir, mcp.config_file)
    config = load_mcp_config(path) if mcp.enabled else None
    if config is not None and (config.servers or config.problems):
        from jarvis.tools.mcp_bridge import McpManager  # the mcp SDK: only when configured

        manager = McpManager(settings, config)
        if manager.connections:
            manager.attach(registry)
            manager.start()
            stack.push_async_callback(manager.stop)
            ready = await manager.wait_ready(settings.toolbox.mcp.start_timeout_s)
            for name, ok in ready.items():
                if not ok:
                    log.warning("MCP server %s is not ready; its tools come when it is", name)
    return manager, skills


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
