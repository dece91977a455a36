"""Run the real agent with its journal, as `jarvis run` does, for the run-record tests."""

from __future__ import annotations

import asyncio

from jarvis.agent.agent import TaskOutcome
from jarvis.agent.factory import build_agent
from jarvis.config import Settings
from jarvis.desktop.x11 import XDisplay
from jarvis.events import EventBus
from jarvis.runs.journal import JournalWriter


async def run_journaled(settings: Settings, task: str, bus: EventBus | None = None) -> TaskOutcome:
    """One task through ``build_agent`` with a JournalWriter on the bus (channel "cli")."""
    bus = bus or EventBus()
    journal = JournalWriter.for_settings(settings, bus, channel="cli")
    try:
        async with build_agent(settings, bus, where=XDisplay.from_env()) as agent:
            return await asyncio.wait_for(agent.run(task), timeout=120)
    finally:
        journal.close()
