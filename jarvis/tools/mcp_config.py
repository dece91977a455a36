"""``DATA_DIR/config/mcp.json``: MCP servers in the ``mcpServers`` format (Claude Desktop,
Cursor), and the registry names of their tools.

    {"mcpServers": {
        "files": {"command": "npx",
                  "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
                  "env": {"DEBUG": "0"}},
        "calendar": {"url": "https://mcp.example.com/mcp",
                     "headers": {"Authorization": "Bearer ..."}},
        "legacy": {"url": "http://127.0.0.1:9000/sse", "type": "sse"}
    }}

A server with ``command`` runs over stdio; one with ``url`` over streamable HTTP, or over
SSE when ``type`` (or ``transport``) says ``sse`` or the URL ends in ``/sse``. Optional
keys: ``cwd``, ``timeout`` (seconds per call), ``disabled``, ``protocol`` (``auto``:
try the 2026 protocol, fall back to the handshake; ``legacy``: the handshake only).
Other keys (``autoApprove``...) are ignored. Environment values and headers are secrets:
they are never printed or logged.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_BAD = re.compile(r"[^a-zA-Z0-9_-]")
SEPARATOR = "__"
MAX_NAME = 64


class McpServerConfig(BaseModel):
    """One entry of ``mcpServers``."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    type: str | None = None
    transport_name: str | None = Field(None, alias="transport")
    timeout: float | None = Field(None, gt=0, description="seconds per call")
    disabled: bool = False
    protocol: Literal["auto", "legacy"] = "auto"

    @model_validator(mode="after")
    def _one_way(self) -> McpServerConfig:
        if bool(self.command) == bool(self.url):
            raise ValueError("give either 'command' (stdio) or 'url' (HTTP), not both or neither")
        if self.url and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"'url' must be http:// or https://, got {self.url!r}")
        return self

    @property
    def transport(self) -> Literal["stdio", "http", "sse"]:
        if self.command:
            return "stdio"
        kind = (self.type or self.transport_name or "").lower()
        if kind == "sse" or (not kind and (self.url or "").rstrip("/").endswith("/sse")):
            return "sse"
        return "http"

    def describe(self) -> str:
        """Where the server is, without secrets (no env values, no header values)."""
        if self.command:
            return " ".join([self.command, *self.args])
        return f"{self.url} ({self.transport})"


class McpConfig(BaseModel):
    servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    problems: list[str] = Field(default_factory=list)
    """Entries that could not be used, one sentence each (the others still load)."""


def mcp_config_path(data_dir: Path, configured: Path | None = None) -> Path:
    if configured is None:
        return data_dir / "config" / "mcp.json"
    return configured if configured.is_absolute() else data_dir / configured


def load_mcp_config(path: Path) -> McpConfig:
    """The servers of ``path`` (none when it does not exist); a bad entry is a problem,
    a bad file is one problem and no servers."""
    if not path.exists():
        return McpConfig()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return McpConfig(problems=[f"{path}: cannot be read as JSON: {exc}"])
    entries = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        return McpConfig(problems=[f"{path}: needs an object 'mcpServers'"])
    config = McpConfig()
    for name, entry in entries.items():
        if not NAME_RE.match(str(name)) or SEPARATOR in str(name):
            config.problems.append(
                f"{path}: server name {name!r} must be letters, digits, '_' or '-' "
                f"(no '{SEPARATOR}'), at most {MAX_NAME}"
            )
            continue
        try:
            server = McpServerConfig.model_validate(entry)
        except ValidationError as exc:
            reasons = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
            config.problems.append(f"{path}: server '{name}': {reasons}")
            continue
        if not server.disabled:
            config.servers[str(name)] = server
    return config


def tool_name(server: str, tool: str) -> str:
    """``SERVER__TOOL`` made to fit ``^[a-zA-Z0-9_-]{1,64}$``: other characters become
    ``_``; a name that had to change or is too long gets a short hash of the original, so
    two tools never share a name by accident and the same tool always gets the same one."""
    raw = f"{server}{SEPARATOR}{tool}"
    clean = _BAD.sub("_", raw)
    if clean == raw and len(raw) <= MAX_NAME:
        return raw
    digest = hashlib.sha256(raw.encode("utf-8")).hexdigest()[:8]
    return f"{clean[: MAX_NAME - len(digest) - 1]}_{digest}"
