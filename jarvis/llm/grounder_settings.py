"""Settings of a grounding model beside the planner (``settings.grounder``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class GrounderSettings(BaseModel):
    """A grounding model beside the planner (the planner's `click_target` tool asks it)."""

    model_config = ConfigDict(extra="forbid")
    provider: Literal["openai", "anthropic"] = Field(
        "openai", description="openai: any OpenAI-compatible server (vLLM, SGLang, ...)"
    )
    model: str = Field(min_length=1, description="the served model name, e.g. HelloKKMe/GTA1-7B")
    base_url: str | None = Field(None, description="its endpoint, e.g. http://gpu:8000/v1")
    api_key_env: str = Field(
        "JARVIS_GROUNDER_API_KEY",
        description="the environment variable holding its key ('EMPTY' when unset, as vLLM takes)",
    )
    profile: str | None = Field(None, description="its model profile; None: by model name")
    max_tokens: int = Field(512, ge=16)
