"""The brake from the first second (issue 40): `jarvis run` grabs the kill switch before
the agent's heavy parts load, says so, and a press from then on ends the run cancelled
before any action. A real `jarvis run` process on Xvfb with the scripted model behind the
real SDK; the press is a real key chord through XTEST."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from jarvis.agent.factory import build_agent
from jarvis.desktop.x11 import XDisplay
from jarvis.events import EventBus
from jarvis.safety.killswitch import EarlyBrake
from tests.agent_harness import TEST_KEY, agent_settings
from tests.fake_model import FakeModel, Reply, call
from tests.test_cli_run import run_env
from tests.test_killswitch import _press

pytestmark = pytest.mark.usefixtures("xserver")


def pointer() -> tuple[int, int]:
    out = subprocess.run(
        ["xdotool", "getmouselocation", "--shell"], capture_output=True, text=True, check=True
    ).stdout
    found = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    return int(found["X"]), int(found["Y"])


def test_a_press_once_the_brake_is_armed_ends_the_run_before_any_action(
    xserver: Any, fake_model: FakeModel, tmp_path: Path
) -> None:
    held = threading.Event()  # the model's answer waits until the test has pressed
    fake_model.set_default(
        Reply(text="Thought: move", tool_calls=[call("mouse_move", x=700, y=500)], hold=held)
    )
    subprocess.run(["xdotool", "mousemove", "5", "5"], check=True, timeout=10)
    argv = [sys.executable, "-m", "jarvis", "run", "move the mouse"]
    launched = time.monotonic()
    proc = subprocess.Popen(
        [*argv, "--data-dir", str(tmp_path / "data")],
        env=run_env(xserver, fake_model),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # the run's first line: nothing loads before the brake
        assert first == "brake armed: ctrl+alt+escape stops the run\n", first
        # the press half a second after launch (the moment), or at the grab when
        # a loaded machine armed it later: a press before the grab reaches the focused app
        time.sleep(max(0.0, launched + 0.5 - time.monotonic()))
        _press("ctrl+alt+Escape")
        out, err = proc.communicate(timeout=90)
    finally:
        held.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert proc.returncode == 130, first + out + err
    assert "cancelled" in out and "hotkey" in out, out
    assert "✓ mouse_move" not in out and pointer() == (5, 5)  # no action was taken
    assert TEST_KEY not in out + err


async def test_a_press_before_the_agent_exists_cancels_the_run_before_its_first_step(
    xserver: Any, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The early brake keeps a press made while the agent is still being built; the real
    agent it is handed to ends its run cancelled by the hotkey before a step: the model is
    never asked."""
    fake_model.set_default(Reply(tool_calls=[call("mouse_move", x=700, y=500)]))
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    brake = EarlyBrake()
    brake.stop.set()  # as the grab's thread does: input stops
    brake.cancel("hotkey")  # no agent yet: kept
    async with build_agent(settings, EventBus(), where=XDisplay.from_env()) as agent:
        brake.hand_to(agent)
        outcome = await asyncio.wait_for(agent.run("move the mouse"), 60)
        assert brake.stop is agent.stop
    assert (outcome.status, outcome.stopped_by, outcome.steps) == ("cancelled", "hotkey", 0)
    assert fake_model.requests == []
    assert pointer() != (700, 500)
