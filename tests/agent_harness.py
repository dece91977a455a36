"""Helpers for running the real agent on Xvfb against the scripted model.

Everything is real but the model: the Tk app on the session's Xvfb, mss, pyautogui
and xdotool, the provider SDKs over loopback HTTP, step records on disk.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from jarvis.agent.agent import TaskOutcome
from jarvis.agent.factory import build_agent
from jarvis.config import Settings, load_settings
from jarvis.desktop.screen import Size, fit_size, screen_to_model
from jarvis.desktop.x11 import XDisplay
from jarvis.events import EventBus, EventRecorder
from tests.fake_model import FakeModel
from tests.tkdriver import TkApp

TEST_KEY = "sk-test-e2e-0123456789abcdef"


def agent_settings(
    tmp_path: Path,
    fake_model: FakeModel,
    monkeypatch: pytest.MonkeyPatch,
    provider: str = "anthropic",
    **overrides: Any,
) -> Settings:
    """Settings for a test run: temp data dir, the fake model's URL and a test key in env."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_model.anthropic_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_model.openai_base_url)
    values: dict[str, Any] = {
        "provider": provider,
        "max_retries": 0,
        "settle_ceiling_ms": 1500,
        "long_term_memory": False,  # tests/test_memory_loop.py runs the loop with memory
    }
    values.update(overrides)
    return load_settings(tmp_path / "data", **values)


def model_point(app: TkApp, widget: str, settings: Settings) -> tuple[int, int]:
    """Where ``widget``'s centre is in the model's screenshot space."""
    screen = Size(*app.screen)
    model = fit_size(screen, settings.max_side)
    x, y = app.widget_center(widget)
    return screen_to_model(x, y, model, screen)


async def run_agent(
    settings: Settings, task: str, bus: EventBus | None = None
) -> tuple[TaskOutcome, EventRecorder]:
    bus = bus or EventBus()
    recorder = EventRecorder(bus)
    async with build_agent(settings, bus, where=XDisplay.from_env()) as agent:
        outcome = await asyncio.wait_for(agent.run(task), timeout=120)
    return outcome, recorder


def step_files(settings: Settings) -> list[Path]:
    return steps_under(settings.data_dir)


def steps_under(data_dir: Path) -> list[Path]:
    """The step records in a data dir, oldest first."""
    return sorted((data_dir / "memory" / "steps").rglob("*.json"))


def screenshot_files(settings: Settings) -> list[Path]:
    return sorted(
        p for p in (settings.data_dir / "memory" / "screenshots").rglob("*") if p.is_file()
    )
