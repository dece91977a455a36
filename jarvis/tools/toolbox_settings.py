"""Settings of the tools beyond the desktop (``settings.toolbox``) and a channel's tool lists
(``settings.channels.NAME.tools``; formerly ``settings.tools.per_channel``).

This module imports nothing from :mod:`jarvis.config`, which imports it.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

DEFAULT_WEB_MAX_BYTES = 2 * 1024 * 1024
DEFAULT_WEB_MAX_CHARS = 5_000


class WorkspaceSettings(BaseModel):
    """Where ``read_file``, ``write_file`` and ``list_dir`` work, and how much they move."""

    dir: Path | None = Field(
        None, description="the workspace folder; default DATA_DIR/workspace (relative to DATA_DIR)"
    )
    read_only: bool = Field(False, description="refuse every write_file")
    max_read_bytes: int = Field(1_000_000, ge=1, description="largest file read_file returns")
    max_write_bytes: int = Field(1_000_000, ge=1, description="largest content write_file takes")
    max_entries: int = Field(500, ge=1, description="most entries list_dir returns")


class WebSettings(BaseModel):
    """How ``web_fetch`` reaches the web."""

    max_bytes: int = Field(DEFAULT_WEB_MAX_BYTES, ge=1, description="largest body read")
    max_chars: int = Field(DEFAULT_WEB_MAX_CHARS, ge=100, description="text returned, at most")
    timeout_s: float = Field(10.0, gt=0, description="whole fetch, redirects included")
    max_redirects: int = Field(5, ge=0)
    allow_private: list[str] = Field(
        default_factory=list,
        description="hosts, IPs or CIDR networks reachable although private or loopback",
    )
    user_agent: str = "Jarvis-web_fetch/0.1 (+desktop agent; one page for its user)"


class McpSettings(BaseModel):
    """The MCP client: servers come from ``DATA_DIR/config/mcp.json``."""

    enabled: bool = True
    config_file: Path | None = Field(None, description="default DATA_DIR/config/mcp.json")
    timeout_s: float = Field(30.0, gt=0, description="a call's ceiling, unless the server sets one")
    start_timeout_s: float = Field(20.0, gt=0, description="connect and list tools, at most")
    restart_backoff_s: float = Field(0.5, gt=0, description="first wait before a restart")
    restart_backoff_max_s: float = Field(30.0, gt=0)
    health_interval_s: float = Field(5.0, gt=0, description="ping a quiet server this often")


class SkillsSettings(BaseModel):
    """Code tools in ``DATA_DIR/skills/*_skill.py`` (and ``jarvis.skills`` entry points)."""

    enabled: bool = True
    dir: Path | None = Field(None, description="default DATA_DIR/skills")
    entry_points: bool = True
    reload_interval_s: float = Field(1.0, gt=0, description="how often serve looks for changes")


class ToolboxSettings(BaseModel):
    """Workspace file tools, web_fetch, MCP servers and skills."""

    workspace: WorkspaceSettings = Field(default_factory=WorkspaceSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    skills: SkillsSettings = Field(default_factory=SkillsSettings)


class ChannelPolicy(BaseModel):
    """What tasks from one channel (``via:`` of their messages) may use.

    ``allow`` (``None``: every tool) and ``deny`` narrow the provider's lists; they never
    widen them. ``web_hosts``: the hosts ``web_fetch`` may reach for this channel (``None``:
    any public host; ``[]``: none). ``read_only``: the workspace is read-only.
    """

    allow: list[str] | None = None
    deny: list[str] = Field(default_factory=list)
    web_hosts: list[str] | None = None
    read_only: bool = False


def default_channels() -> dict[str, ChannelPolicy]:
    """Email tasks write no file and fetch only allowlisted hosts (none by default)."""
    return {"email": ChannelPolicy(deny=["write_file"], web_hosts=[], read_only=True)}
