"""Settings of the safety features (``settings.safety``).

This module imports nothing from :mod:`jarvis.config`, which imports it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, field_validator

NEVER_UNATTENDED = frozenset({"email"})
"""Channels whose tasks are never approved without a person, whatever the settings say."""
NEVER_APPROVE = frozenset({"email", "a2a", "mcp"})
"""Channels by which no approval is ever answered, whatever the settings say."""
NO_SECRETS = frozenset({"email", "a2a", "mcp"})
"""Channels whose tasks get no secret unless their block says ``secrets: true``."""

DEFAULT_TEXT_PATTERNS = [
    r"\brm\s+(-[a-zA-Z]*\s+)*-[a-zA-Z]*[rRf]",  # rm -rf, rm -r, rm -f, rm -v -r
    r"\bsudo\b",
    r"\bsu\s+(-|root\b)",
    r"\bmkfs(\.\w+)?\b",
    r"\bdd\s+.*\bif=",
    r"\b(curl|wget)\b[^\n|]*\|\s*(sudo\s+)?(ba|z|k|da)?sh\b",
    r"\bgit\s+push\b.*(\s--force\b|\s-f\b|\s--force-with-lease\b)",
    r"\bgit\s+(reset\s+--hard|clean\s+-[a-zA-Z]*f)",
    r"\bchmod\s+(-R\s+)?[0-7]*777\b",
    r"\bchown\s+-R\b",
    r":\(\)\s*\{\s*:\|:&\s*\};\s*:",  # the fork bomb
    r">\s*/dev/(sd[a-z]|nvme\d|mmcblk\d)",
    r"(?m)^\s*(sudo\s+)?(shutdown|reboot|poweroff|halt|init\s+[06])\b",
    r"\bDROP\s+(TABLE|DATABASE)\b",
]
DEFAULT_HOTKEYS = [
    "alt+f4",
    "ctrl+alt+backspace",
    "ctrl+alt+delete",
    "super+l",
    "ctrl+alt+l",
]
DEFAULT_TOOLS = ["*__send*", "*__delete*", "*__remove*", "*__pay*", "*__purchase*"]


class ApprovalRules(BaseModel):
    """Which calls wait for a person (``safety.approve``)."""

    tools: list[str] = Field(
        default_factory=lambda: list(DEFAULT_TOOLS),
        description="tool names or shell-style patterns (MCP tools are SERVER__TOOL)",
    )
    text_patterns: list[str] = Field(
        default_factory=lambda: list(DEFAULT_TEXT_PATTERNS),
        description="regular expressions (case-insensitive) matched against typed text",
    )
    hotkeys: list[str] = Field(
        default_factory=lambda: list(DEFAULT_HOTKEYS),
        description="chords like alt+f4; order and aliases do not matter",
    )
    model_marked: bool = Field(
        True,
        description="the model's `call_user` with `risky: true` is an approval request",
    )

    @field_validator("text_patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        import re

        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(
                    f"text pattern {pattern!r} is not a regular expression: {exc}"
                ) from exc
        return patterns


class ChannelApprovalRules(ApprovalRules):
    """More calls that wait for a person when a task comes from one channel
    (``channels.NAME.approve``; before, ``safety.approve_per_channel.NAME``): added to
    ``safety.approve``, never removed."""

    tools: list[str] = Field(default_factory=list, description="as in safety.approve")
    text_patterns: list[str] = Field(default_factory=list, description="as in safety.approve")
    hotkeys: list[str] = Field(default_factory=list, description="as in safety.approve")
    model_marked: bool = Field(False, description="as in safety.approve")


class SandboxSettings(BaseModel):
    """The private virtual display of ``jarvis run --sandbox``."""

    enabled: bool = Field(False, description="run every `jarvis run` task on a private display")
    channels: list[str] = Field(
        default_factory=list,
        description="deprecated: use channels.NAME.private_display",
    )
    size: str = Field("1280x800", pattern=r"^[1-9][0-9]{2,4}x[1-9][0-9]{2,4}$")
    window_manager: list[str] | None = Field(
        default_factory=lambda: ["matchbox-window-manager", "-use_titlebar", "no"],
        description="command of a light window manager; null for none",
    )
    apps: list[list[str]] = Field(
        default_factory=list, description="commands started on the display before the task"
    )
    start_timeout_s: float = Field(10.0, gt=0)


class SecretsSettings(BaseModel):
    """Where ``jarvis secrets`` keeps values and how long a typed secret's field stays
    masked in the model's screenshots (DESIGN.md section 17)."""

    store: Literal["auto", "keyring", "file"] = Field(
        "auto", description="auto: the OS keyring when one works, else the encrypted file"
    )
    key_env: str = Field(
        "JARVIS_SECRETS_KEY", description="the variable holding the encrypted file's passphrase"
    )
    key_file: Path | None = Field(
        None, description="a file holding the passphrase instead (keep it outside the data dir)"
    )
    mask_s: float = Field(900.0, gt=0, description="how long a typed secret's field is masked")


class SafetySettings(BaseModel):
    """Kill switch, approvals, budget and sandbox (DESIGN.md section 9)."""

    kill_hotkey: str | None = Field(
        "ctrl+alt+escape", description="global X hotkey that cancels the task; null disables"
    )
    approve: ApprovalRules = Field(default_factory=ApprovalRules)
    approve_per_channel: dict[str, ChannelApprovalRules] = Field(
        default_factory=dict,
        description="deprecated: use channels.NAME.approve",
    )
    approval_timeout_s: float = Field(120.0, gt=0, description="unanswered means denied")
    unattended: list[str] = Field(
        default_factory=list,
        description="deprecated: use channels.NAME.unattended",
    )
    max_cost_usd: float | None = Field(None, gt=0, description="a task ends at this cost")
    max_tokens_total: int | None = Field(
        None,
        ge=1,
        description="a task ends when its tokens (input, output and cache) reach this",
    )
    budget_wrap_up_at: float = Field(
        0.8, gt=0, lt=1, description="share of the budget at which the model is told to finish"
    )
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    secrets: SecretsSettings = Field(default_factory=SecretsSettings)

    @field_validator("unattended")
    @classmethod
    def _never_email(cls, channels: list[str]) -> list[str]:
        bad = sorted(set(channels) & NEVER_UNATTENDED)
        if bad:
            raise ValueError(f"tasks from {', '.join(bad)} can never run unattended")
        return channels
