"""Cerebellum: offers the tool definitions and runs the model's calls through the ToolRegistry."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

from jarvis.desktop.screen import Observation
from jarvis.desktop.settle import SettleResult
from jarvis.llm.types import ToolCall, ToolSpec
from jarvis.tools.context import ToolContext
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.results import ToolResult

Settle = Callable[[], Awaitable[SettleResult]]


@dataclass
class Action:
    """What one reply's calls did."""

    results: list[ToolResult] = field(default_factory=list)
    act_ms: float = 0.0
    settle_ms: float = 0.0
    settle_timeouts: int = 0
    executed: int = 0
    still: Future[Observation] | None = None
    """The still screen's observation when the last call run was followed by a settle that
    made one (no call ran after it)."""

    @property
    def all_failed(self) -> bool:
        return bool(self.results) and not any(r.ok for r in self.results)


class Cerebellum:
    def __init__(self, registry: ToolRegistry, provider_name: str) -> None:
        self.registry = registry
        self.provider_name = provider_name

    def definitions(self, channels: Sequence[str] = ()) -> list[ToolSpec]:
        """The tools offered for a task from ``channels`` (the channel policy narrows them)."""
        return self.registry.specs(self.provider_name, channels)

    async def act(self, calls: list[ToolCall], context: ToolContext, settle: Settle) -> Action:
        """Run calls in order. After a failure, a control tool or a `screenshot` (the model
        asked to look before going on) the rest are not run. The screen settles after a
        tool that says it needs that (:attr:`~jarvis.tools.tool.Tool.settles`).

        Every call gets a result, so the model sees what happened to each of them.
        """
        action = Action()
        stop_reason: str | None = None
        for call in calls:
            if stop_reason:
                action.results.append(ToolResult.not_run(stop_reason))
                continue
            tool = self.registry.get(call.name)  # before the call: an MCP tool may go meanwhile
            started = time.perf_counter()
            result = await self.registry.execute_call(call, context)
            action.act_ms += (time.perf_counter() - started) * 1000
            action.results.append(result)
            action.executed += 1
            action.still = None
            if result.ok and tool is not None and tool.settles:
                settled = await settle()
                action.settle_ms += settled.waited_ms
                action.settle_timeouts += int(settled.timed_out)
                action.still = settled.still
            if not result.ok:
                stop_reason = f"an earlier call ({call.name}) failed"
            elif tool is not None and tool.control:
                stop_reason = f"{call.name} ended this step"
            elif context.take_screenshot_request():
                stop_reason = "you asked for a screenshot; decide again with the new one"
        return action
