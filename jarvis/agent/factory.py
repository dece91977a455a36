"""Assemble an Agent from the settings: one provider, one screen, one registry per run."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from jarvis.agent.agent import Agent
from jarvis.agent.brain import Brain
from jarvis.agent.cerebellum import Cerebellum
from jarvis.agent.hippocampus import Hippocampus, LongTerm
from jarvis.config import Settings
from jarvis.desktop.input import Input
from jarvis.desktop.screen import Screen
from jarvis.desktop.settle import Settler
from jarvis.events import EventBus
from jarvis.llm.base import Provider
from jarvis.llm.factory import make_provider
from jarvis.tools.computer import build_registry
from jarvis.tools.context import ToolContext
from jarvis.tools.registry import ToolRegistry


@asynccontextmanager
async def build_agent(
    settings: Settings,
    bus: EventBus,
    *,
    provider: Provider | None = None,
    registry: ToolRegistry | None = None,
    long_term: LongTerm | None = None,
    todos: Callable[[], str] | None = None,
) -> AsyncIterator[Agent]:
    """An Agent wired to the real desktop; closes the screen and the provider afterwards."""
    provider = provider or make_provider(settings, bus)
    registry = registry or build_registry(settings)
    screen = Screen.from_settings(settings)
    input_ = Input.from_settings(settings)

    def context_for(task_id: str) -> ToolContext:
        return ToolContext.for_task(
            settings, task_id, screen=screen, input=input_, bus=bus, provider=provider.name
        )

    agent = Agent(
        settings=settings,
        brain=Brain(provider, screen, settings, bus),
        cerebellum=Cerebellum(registry, provider.name),
        hippocampus=Hippocampus(settings.data_dir, long_term),
        settler=Settler(screen, settings),
        context_factory=context_for,
        bus=bus,
        todos=todos,
    )
    try:
        yield agent
    finally:
        screen.close()
        close = getattr(provider, "aclose", None)
        if close is not None:
            await close()
