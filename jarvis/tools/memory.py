"""The `remember` tool: the model stores what the user told it to keep in mind."""

from __future__ import annotations

import asyncio
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from jarvis.memory.records import Memory, MemoryType
from jarvis.tools.context import ToolContext
from jarvis.tools.registry import ToolRegistry


class RememberArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(
        min_length=1,
        max_length=1000,
        description="the fact to keep, in one self-contained sentence",
    )
    type: Literal["preference", "skill"] = Field(
        "preference",
        description="preference: something the user likes, wants or told you; "
        "skill: how to do something on this computer",
    )
    importance: int = Field(5, ge=0, le=10, description="0 trivial .. 10 essential")


class Remembers(Protocol):
    """Where `remember` stores: the local store's bridge, or a fleet worker's relay to the
    coordinator's store. Blocking; may raise ToolFailure or OSError."""

    def remember(
        self, content: str, memory_type: MemoryType, importance: float, task_id: str
    ) -> Memory: ...


def register_memory_tools(registry: ToolRegistry, bridge: Remembers) -> None:
    """Add `remember`, bound to one long-term store."""

    async def remember(args: RememberArgs, ctx: ToolContext) -> dict[str, Any]:
        """Remember a preference the user states (or a useful procedure) for future tasks."""
        memory = await asyncio.to_thread(
            bridge.remember, args.content, args.type, float(args.importance), ctx.task_id
        )
        return {"stored": memory.id, "type": memory.type}

    registry.register("remember", remember, RememberArgs, audit_fields=("type",))
