"""One policy block per channel (``settings.channels.NAME``), and the old keys it replaces.

A channel is any source of tasks: inbox, tui, web, api, email, a2a, mcp, schedule (the
daemon's own clock: ``jarvis schedule``), and any added later (a plugin, or a bridge that
posts to ``POST /api/messages``). Its block says what its tasks may do; every part only
narrows what the global settings allow::

    "channels": {
      "email": {"tools": {"deny": ["write_file"], "web_hosts": [], "read_only": true},
                "approve": {"tools": ["click"]}, "private_display": true},
      "api":   {"unattended": true, "rate_limit": {"max_messages": 30, "window_s": 60}}
    }

- ``tools``: allow/deny lists, ``web_fetch`` hosts, a read-only workspace (email has a
  default entry unless its block sets ``tools``);
- ``approve``: more calls held for a person, on top of ``safety.approve``;
- ``may_approve``: whether an answer to an approval may come by this channel (never for
  email, a2a or mcp: a file that says so is refused);
- ``unattended``: held calls of its tasks run without asking (never for email);
- ``private_display``: each of its tasks runs on a private virtual display of its own;
- ``rate_limit``: messages the gateway takes from it per window;
- ``secrets``: its tasks may type stored secrets (``type_secret``, ``type_totp``); null:
  yes, except email, a2a and mcp.

The old keys (``tools.per_channel``, ``safety.approve_per_channel``, ``safety.unattended``,
``safety.sandbox.channels``) are still read for one release: :func:`fold_legacy` moves them
into the blocks (a block's own part wins) and :func:`legacy_warnings` says, one line per key,
which new key to use. This module imports nothing from :mod:`jarvis.config`, which imports it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field

from jarvis.safety.settings import (
    NEVER_APPROVE,
    NEVER_UNATTENDED,
    NO_SECRETS,
    ChannelApprovalRules,
)
from jarvis.tools.toolbox_settings import ChannelPolicy

NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")
"""A channel name: what a message's ``via:`` says."""

LEGACY = {
    "tools.per_channel": "channels.NAME.tools",
    "safety.approve_per_channel": "channels.NAME.approve",
    "safety.unattended": "channels.NAME.unattended",
    "safety.sandbox.channels": "channels.NAME.private_display",
}
"""Each old key and the part of a channel's block that replaces it."""


class RateLimit(BaseModel):
    """How many messages the gateway takes from one channel in a sliding window."""

    model_config = ConfigDict(extra="forbid")

    max_messages: int = Field(ge=1)
    window_s: float = Field(60.0, gt=0)


class ChannelSettings(BaseModel):
    """The policy of one channel (see the module doc)."""

    model_config = ConfigDict(extra="forbid")

    tools: ChannelPolicy | None = Field(
        None, description="narrower tool lists for its tasks; null: no narrowing (email: default)"
    )
    approve: ChannelApprovalRules = Field(
        default_factory=ChannelApprovalRules,
        description="calls held for a person on top of safety.approve",
    )
    may_approve: bool | None = Field(
        None, description="answers to approvals may come by it; null: yes, except email/a2a/mcp"
    )
    unattended: bool = Field(False, description="held calls run without asking (never email)")
    private_display: bool = Field(False, description="its tasks run on a private display")
    rate_limit: RateLimit | None = Field(None, description="messages taken per window")
    secrets: bool | None = Field(
        None, description="its tasks may type stored secrets; null: yes, except email/a2a/mcp"
    )


def check_blocks(blocks: Mapping[str, ChannelSettings]) -> None:
    """Raise ValueError (one sentence naming the field) for a block that widens what may
    never be widened, or a name that cannot be a channel."""
    for name, block in blocks.items():
        if not NAME.fullmatch(name):
            raise ValueError(
                f"channels.{name}: a channel name is lower-case letters, digits, - and _"
            )
        if block.may_approve and name in NEVER_APPROVE:
            raise ValueError(f"channels.{name}.may_approve cannot be true: {name} never approves")
        if block.unattended and name in NEVER_UNATTENDED:
            raise ValueError(
                f"channels.{name}.unattended cannot be true: tasks from {name} never run unattended"
            )


def fold_legacy(
    blocks: Mapping[str, ChannelSettings],
    *,
    per_channel: Mapping[str, ChannelPolicy] | None = None,
    approve_per_channel: Mapping[str, ChannelApprovalRules] | None = None,
    unattended: Iterable[str] = (),
    private_display: Iterable[str] = (),
) -> dict[str, ChannelSettings]:
    """The blocks with the old keys' values moved in; a part a block sets itself wins."""
    out = {name: block.model_copy() for name, block in blocks.items()}

    def block(name: str) -> ChannelSettings:
        return out.setdefault(name, ChannelSettings())

    for name, tools in (per_channel or {}).items():
        if block(name).tools is None:
            out[name].tools = tools
    for name, rules in (approve_per_channel or {}).items():
        if "approve" not in block(name).model_fields_set:
            out[name].approve = rules
    for name in unattended:
        if "unattended" not in block(name).model_fields_set:
            out[name].unattended = True
    for name in private_display:
        if "private_display" not in block(name).model_fields_set:
            out[name].private_display = True
    return out


def legacy_warnings(used: Iterable[str]) -> list[str]:
    """One line per old key in ``used`` (keys of :data:`LEGACY`), naming the new key."""
    return [
        f"settings: {key} is deprecated and read for one release only; use {LEGACY[key]}"
        for key in LEGACY
        if key in set(used)
    ]


def refused_approvers(blocks: Mapping[str, ChannelSettings]) -> frozenset[str]:
    """Channels by which no answer to an approval is taken: email, a2a and mcp, and every
    channel whose ``may_approve`` is false."""
    return NEVER_APPROVE | {name for name, b in blocks.items() if b.may_approve is False}


def secrets_refused(blocks: Mapping[str, ChannelSettings], channels: Iterable[str]) -> str | None:
    """Why a task from ``channels`` may not use a stored secret (``None``: it may): a
    channel whose block says ``secrets: false``, or email, a2a and mcp unless theirs says
    ``secrets: true``."""
    for name in channels:
        block = blocks.get(name)
        allowed = block.secrets if block is not None else None
        if allowed is None:
            allowed = name not in NO_SECRETS
        if not allowed:
            return (
                f"tasks from channel '{name}' may not use stored secrets "
                f"(channels.{name}.secrets is not true)"
            )
    return None
