"""Settings of which tools the model may call and how often (``settings.tools``)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from jarvis.tools.toolbox_settings import ChannelPolicy, default_channels


class ToolLimit(BaseModel):
    """Rate limit and cooldown for one tool."""

    max_calls: int | None = Field(None, ge=1, description="calls allowed per window")
    window_s: float = Field(60.0, gt=0)
    cooldown_s: float = Field(0.0, ge=0, description="minimum gap between two calls")
    timeout_s: float | None = Field(None, gt=0, description="ceiling for one call of this tool")


class ToolPolicy(BaseModel):
    """Which tools the model may call, and how often."""

    allow: list[str] | None = Field(None, description="if set, only these tools are offered")
    deny: list[str] = Field(default_factory=list)
    per_provider: dict[str, ToolPolicyOverride] = Field(default_factory=dict)
    per_channel: dict[str, ChannelPolicy] = Field(
        default_factory=default_channels,
        description="deprecated: use channels.NAME.tools",
    )
    limits: dict[str, ToolLimit] = Field(default_factory=dict)
    timeout_s: float = Field(30.0, gt=0, description="ceiling for one tool call")


class ToolPolicyOverride(BaseModel):
    allow: list[str] | None = None
    deny: list[str] = Field(default_factory=list)


ToolPolicy.model_rebuild()
