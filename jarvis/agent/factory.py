"""Assemble an Agent from the settings: one provider, one screen, one registry per run."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING

from jarvis.agent.agent import Agent
from jarvis.agent.brain import Brain
from jarvis.agent.cerebellum import Cerebellum
from jarvis.agent.hippocampus import Hippocampus, LongTerm
from jarvis.agent.safety_checks import approver
from jarvis.config import Settings
from jarvis.desktop.backend import Where, open_desktop, waits_for_consent
from jarvis.desktop.desktop import Desktop
from jarvis.events import AgentWarning, EventBus
from jarvis.llm.base import Provider
from jarvis.llm.computer_tool import zoom_enabled
from jarvis.llm.factory import make_provider
from jarvis.llm.grounding import make_grounder
from jarvis.llm.profiles.select import screen_sizer
from jarvis.runs.records import RunRecorder, StepHooks
from jarvis.safety.approvals import ApprovalGate, ApprovalStore
from jarvis.safety.channel_policy import refused_approvers
from jarvis.safety.takeover import ScreenHold, interrupt_typing
from jarvis.tools.computer import build_registry
from jarvis.tools.context import ToolContext
from jarvis.tools.grounded import NAME as CLICK_TARGET
from jarvis.tools.grounded import register_grounder_tool
from jarvis.tools.memory import register_memory_tools
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.toolbox import open_toolbox
from jarvis.tools.zoom import register_zoom_tool

if TYPE_CHECKING:
    from jarvis.memory.long_term import LongTermMemory
    from jarvis.memory.recall import MemoryBridge

log = logging.getLogger(__name__)


async def _desktop_on(settings: Settings, where: Where, bus: EventBus) -> Desktop:
    """The Desktop on ``where``; one that may wait for the portal's consent dialog is
    opened off the event loop, and the wait is told as a warning event."""
    opener = functools.partial(
        open_desktop,
        settings,
        where,
        sizer=screen_sizer(settings),
        notify=lambda line: bus.emit(AgentWarning(message=line)),
    )
    return await asyncio.to_thread(opener) if waits_for_consent(where) else opener()


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
    where: Where,
    on_verified: Callable[[str, str], Awaitable[None]] | None = None,
) -> AsyncIterator[Agent]:
    """An Agent wired to the desktop on ``where`` (an X display or a Wayland compositor:
    :func:`~jarvis.desktop.backend.open_desktop` opens the one that drives it); closes
    the desktop, memory and provider afterwards.

    Risky calls wait at ``approvals`` (default: a gate nobody answers but the API); a
    ``registry`` handed in brings its own gate, and a ``provider`` handed in its own
    approver for OpenAI's safety checks and Gemini's safety decisions (made with
    ``approve=approver(gate)`` for the same gate; without one nobody is there and they are
    denied). With ``settings.long_term_memory`` and no
    ``long_term`` given, the on-disk vector memory is opened and the `remember` tool is
    offered (when its embedding model cannot load, the task runs without long-term memory
    and the log says so once). The tools beyond the desktop (workspace files, web_fetch,
    skills, MCP servers) are opened on the registry too. ``on_verified`` is awaited when a
    finish is verified (see :class:`Agent`).
    """
    async with AsyncExitStack() as stack:
        memory = None  # opened in a thread while the rest is built
        if long_term is None and settings.long_term_memory:
            memory = opening_long_term(settings, stack)
        gate = approvals or ApprovalGate(
            settings.safety, ApprovalStore(bus), channels=settings.channels
        )
        registry = registry or build_registry(settings, approvals=gate)
        await open_toolbox(settings, registry, stack)  # files, web_fetch, skills, MCP
        zoom = zoom_enabled(
            settings.model, settings.native_computer_tool, settings.computer_tool_version
        )
        if zoom and settings.provider == "anthropic" and registry.get("zoom") is None:
            register_zoom_tool(registry)  # Claude's computer_20251124 `zoom` action
        if settings.grounder is not None and registry.get(CLICK_TARGET) is None:
            grounder = make_grounder(settings, bus)  # the planner names, it points
            stack.push_async_callback(grounder.aclose)
            register_grounder_tool(registry, grounder, settings.max_side)
        desktop = await _desktop_on(settings, where, bus)
        stack.callback(desktop.close)
        if memory is not None:  # its `remember` tool after those above, in the order it had
            long_term = offer_long_term(await memory, settings, registry)
        recorder = None
        if settings.runs.record_steps:  # steps/NNNN/ beside the run's journal
            recorder = RunRecorder.for_settings(settings, bus, desktop)
            stack.callback(recorder.close)
        if provider is None:  # last: its SDK may still be loading (cli's preload_sdk)
            made = make_provider(settings, bus, approve=approver(gate))
            stack.push_async_callback(made.aclose)  # ours; a provider handed in is the caller's
            provider = made
        yield agent_on(
            settings, bus, desktop, provider, registry, long_term, todos, recorder, on_verified
        )


async def open_long_term(
    settings: Settings, stack: AsyncExitStack, registry: ToolRegistry
) -> MemoryBridge | None:
    """Open the on-disk vector memory (closed with ``stack``) and offer the `remember`
    tool on ``registry``; the bridge gives the agent its recall.

    Long-term memory is an optional part: when its embedding model cannot load, this
    says so once (a warning) and returns None, and the work goes on without it. Its
    modules (chromadb, the embedding model) load here, only when it is on.
    """
    return offer_long_term(await opening_long_term(settings, stack), settings, registry)


def opening_long_term(
    settings: Settings, stack: AsyncExitStack
) -> asyncio.Task[LongTermMemory | None]:
    """Start opening the on-disk vector memory in a thread, its modules (chromadb, the
    embedding model) loaded there too, while the caller goes on (it takes seconds). The
    task's memory is closed with ``stack``, also when nobody awaited it. None when the
    embedding model cannot load (said once, as a warning)."""
    task = asyncio.create_task(asyncio.to_thread(_open_memory, settings))

    async def close() -> None:
        with contextlib.suppress(Exception):  # told where it was awaited
            memory = await task
            if memory is not None:
                memory.close()

    stack.push_async_callback(close)
    return task


def _open_memory(settings: Settings) -> LongTermMemory | None:
    try:
        from jarvis.memory.long_term import LongTermMemory
    except RuntimeError as exc:  # an import cycle met the main thread's imports: once more
        if type(exc).__name__ != "_DeadlockError":
            raise
        from jarvis.memory.long_term import LongTermMemory
    from jarvis.memory.embedding import EmbeddingUnavailable

    try:
        return LongTermMemory.from_settings(settings)
    except EmbeddingUnavailable as exc:
        log.warning("long-term memory is off: %s", exc)
        return None


def offer_long_term(
    memory: LongTermMemory | None, settings: Settings, registry: ToolRegistry
) -> MemoryBridge | None:
    """The agent's recall from ``memory``, with the `remember` tool on ``registry``."""
    if memory is None:
        return None
    from jarvis.memory.recall import MemoryBridge

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
    on_verified: Callable[[str, str], Awaitable[None]] | None = None,
) -> Agent:
    """An Agent that works on ``desktop`` (its screen, input, settle and stop event), paused
    by a person's takeover through the desktop's hold (its input refuses, the loop waits)."""
    hold = ScreenHold(
        bus,
        settings.takeover.idle_end_s,
        refused_approvers(settings.channels),
        stop_typing=lambda: interrupt_typing(desktop.where),  # where it types now
        held=desktop.hold,
    )

    def context_for(task_id: str, channels: tuple[str, ...] = ()) -> ToolContext:
        return ToolContext.for_task(
            settings,
            task_id,
            screen=desktop.screen,
            input=desktop.input,
            bus=bus,
            provider=provider.name,
            stop=desktop.stop,
            channels=channels,
            elements=desktop.elements,
            windows=desktop.windows,
            masks=desktop.screen.masks,
        )

    return Agent(
        settings=settings,
        brain=Brain(provider, desktop.screen, settings, bus, desktop.elements),
        cerebellum=Cerebellum(registry, provider.name),
        hippocampus=Hippocampus(settings.data_dir, long_term),
        settler=desktop.settler,
        context_factory=context_for,
        bus=bus,
        todos=todos,
        stop=desktop.stop,  # set by Agent.cancel: input and settle stop between pieces
        recorder=recorder,
        desktop=desktop,
        on_verified=on_verified,
        screen_hold=hold,
    )
