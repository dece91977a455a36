"""Assemble an Agent from the settings: one provider, one screen, one registry per run."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager

from jarvis.agent.agent import Agent
from jarvis.agent.brain import Brain
from jarvis.agent.cerebellum import Cerebellum
from jarvis.agent.hippocampus import Hippocampus, LongTerm
from jarvis.agent.safety_checks import route_safety_checks
from jarvis.config import Settings
from jarvis.desktop.desktop import Desktop
from jarvis.desktop.x11 import XDisplay
from jarvis.events import EventBus
from jarvis.llm.base import Provider
from jarvis.llm.computer_tool import zoom_enabled
from jarvis.llm.factory import make_provider
from jarvis.llm.openai_actions import deny_unattended
from jarvis.llm.profiles.select import screen_sizer
from jarvis.memory.embedding import EmbeddingUnavailable
from jarvis.memory.long_term import LongTermMemory
from jarvis.memory.recall import MemoryBridge
from jarvis.runs.records import RunRecorder, StepHooks
from jarvis.safety.approvals import ApprovalGate, ApprovalStore
from jarvis.tools.computer import build_registry
from jarvis.tools.context import ToolContext
from jarvis.tools.memory import register_memory_tools
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.toolbox import open_toolbox
from jarvis.tools.zoom import register_zoom_tool

log = logging.getLogger(__name__)


@asynccontextmanager
async def build_agent(
    settings: Settings,
    bus: EventBus,
    *,
    provider: Provider | None = None,
    registry: ToolRegistry | None = None,
    long_term: LongTerm | None = None,
    todos: Callable[[], str] | None = None,
    approvals: ApprovalGate | None = None,
) -> AsyncIterator[Agent]:
    """An Agent wired to the real desktop; closes the screen, memory and provider afterwards.

    With ``settings.long_term_memory`` and no ``long_term`` given, the on-disk vector
    memory is opened and the `remember` tool is offered (when its embedding model cannot
    load, the task runs without long-term memory and the log says so once). The tools beyond
    the desktop (workspace files, web_fetch, skills, MCP servers) are opened on the registry too.
    """
    async with AsyncExitStack() as stack:
        if provider is None:  # ours to close; a provider handed in stays the caller's
            made = make_provider(settings, bus)
            stack.push_async_callback(made.aclose)
            provider = made
        registry = registry or build_registry(settings)
        if registry.approvals is None:  # risky calls wait for a person (safety.approve)
            registry.approvals = approvals or ApprovalGate(
                settings.safety, ApprovalStore(bus), channels=settings.channels
            )
        if route_safety_checks(provider, registry.approvals):  # OpenAI's, held the same way
            stack.callback(setattr, provider, "approve", deny_unattended)
        await open_toolbox(settings, registry, stack)  # files, web_fetch, skills, MCP
        zoom = zoom_enabled(
            settings.model, settings.native_computer_tool, settings.computer_tool_version
        )
        if zoom and settings.provider == "anthropic" and registry.get("zoom") is None:
            register_zoom_tool(registry)  # Claude's computer_20251124 `zoom` action
        if long_term is None and settings.long_term_memory:
            long_term = await open_long_term(settings, stack, registry)
        desktop = Desktop.open(settings, sizer=screen_sizer(settings))  # this process's display
        stack.callback(desktop.close)
        recorder = None
        if settings.runs.record_steps:  # steps/NNNN/ beside the run's journal
            recorder = RunRecorder.for_settings(settings, bus, desktop.screen.capture)
            stack.callback(recorder.close)
        yield agent_on(settings, bus, desktop, provider, registry, long_term, todos, recorder)


async def open_long_term(
    settings: Settings, stack: AsyncExitStack, registry: ToolRegistry
) -> MemoryBridge | None:
    """Open the on-disk vector memory (closed with ``stack``) and offer the `remember`
    tool on ``registry``; the bridge gives the agent its recall.

    Long-term memory is an optional part: when its embedding model cannot load, this
    says so once (a warning) and returns None, and the work goes on without it.
    """
    try:
        memory = await asyncio.to_thread(LongTermMemory.from_settings, settings)
    except EmbeddingUnavailable as exc:
        log.warning("long-term memory is off: %s", exc)
        return None
    stack.callback(memory.close)
    bridge = MemoryBridge(memory, top_k=settings.memory_top_k)
    register_memory_tools(registry, bridge)
    return bridge


def agent_on(
    settings: Settings,
    bus: EventBus,
    desktop: Desktop,
    provider: Provider,
    registry: ToolRegistry,
    long_term: LongTerm | None = None,
    todos: Callable[[], str] | None = None,
    recorder: StepHooks | None = None,
) -> Agent:
    """An Agent that works on ``desktop`` (its screen, input, settle and stop event)."""

    def context_for(task_id: str) -> ToolContext:
        return ToolContext.for_task(
            settings,
            task_id,
            screen=desktop.screen,
            input=desktop.input,
            bus=bus,
            provider=provider.name,
            stop=desktop.stop,
        )

    def reopen_desktop() -> None:
        """Onto the display the process's DISPLAY names now (a channel's private one)."""
        where = XDisplay.from_env()
        desktop.screen.reopen(where)
        desktop.input.reopen(where)

    return Agent(
        settings=settings,
        brain=Brain(provider, desktop.screen, settings, bus),
        cerebellum=Cerebellum(registry, provider.name),
        hippocampus=Hippocampus(settings.data_dir, long_term),
        settler=desktop.settler,
        context_factory=context_for,
        bus=bus,
        todos=todos,
        stop=desktop.stop,  # set by Agent.cancel: input and settle stop between pieces
        recorder=recorder,
        reopen_desktop=reopen_desktop,
    )
