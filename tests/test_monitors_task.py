"""A scripted task on two monitors: the agent drags a window from one monitor to the other.

Everything is real but the model: Xorg with the dummy driver and two monitors of
different sizes, one above the other (tests/test_monitors.py's layout), a real window
that moves when its title bar is dragged (tests/moveapp.py), the whole agent loop with
``monitor = 0`` (the model sees both monitors in one picture), the Anthropic SDK against
the scripted model over loopback HTTP.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from PIL import Image

from jarvis.agent.factory import build_agent
from jarvis.desktop.input import Input
from jarvis.events import EventBus
from jarvis.geometry import Size, fit_size, screen_to_model
from tests.agent_harness import TEST_KEY, agent_settings
from tests.fake_model import FakeModel, Reply, call
from tests.test_monitors import HEADS, LOWER, UPPER
from tests.xservers import DummyXorg, dummy_xorg_missing

pytestmark = pytest.mark.skipif(dummy_xorg_missing() is not None, reason=str(dummy_xorg_missing()))

MOVEAPP = Path(__file__).with_name("moveapp.py")
START = (400, 1300)  # the window's top-left, on the lower monitor
BAR_GRIP = (200, 20)  # a point of its title bar, from its top-left
TARGET = (700, 280)  # where the window should end up: inside the upper monitor
TASK = "Move the 'Drag me' window from the lower monitor to the upper one."


@pytest.fixture(scope="module")
def xorg() -> Iterator[DummyXorg]:
    with DummyXorg([LOWER, UPPER]) as server:
        yield server


def read_event(out: IO[str], timeout: float = 15) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([out], [], [], deadline - time.monotonic())
        if ready:
            line = out.readline()
            if not line:
                raise AssertionError("the window's app exited")
            return dict(json.loads(line))
    raise AssertionError(f"no event from the window's app within {timeout} s")


@pytest.fixture
def window(xorg: DummyXorg) -> Iterator[tuple[subprocess.Popen[str], dict[str, Any]]]:
    proc = subprocess.Popen(
        [sys.executable, str(MOVEAPP), str(START[0]), str(START[1])],
        env={**xorg.where.env(), **xorg.env()},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    try:
        assert proc.stdout is not None
        ready = read_event(proc.stdout)
        assert ready["kind"] == "ready" and ready["box"][:2] == list(START)
        yield proc, ready
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=10)


def on(head: Any, box: list[int]) -> bool:
    x, y, w, h = box
    return (
        head.left <= x
        and x + w <= head.left + head.width
        and (head.top <= y and y + h <= head.top + head.height)
    )


async def test_a_scripted_task_moves_a_window_to_the_other_monitor(
    xorg: DummyXorg,
    window: tuple[subprocess.Popen[str], dict[str, Any]],
    fake_model: FakeModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proc, ready = window
    assert on(LOWER, ready["box"])
    settings = agent_settings(tmp_path, fake_model, monkeypatch, monitor=0)
    whole = Size(HEADS[0].width, HEADS[0].height)
    model = fit_size(whole, settings.max_side)
    grip = (START[0] + BAR_GRIP[0], START[1] + BAR_GRIP[1])
    goal = (TARGET[0] + BAR_GRIP[0], TARGET[1] + BAR_GRIP[1])
    sx, sy = screen_to_model(*grip, model, whole)
    ex, ey = screen_to_model(*goal, model, whole)
    fake_model.script(
        Reply(
            text="Thought: drag the window's title bar up onto monitor 2.",
            tool_calls=[call("drag", startX=sx, startY=sy, endX=ex, endY=ey)],
        ),
        Reply(text="Thought: done.", tool_calls=[call("finished", summary="window moved")]),
        Reply(text='{"done": true, "reason": "the window is on the upper monitor"}'),
    )
    async with build_agent(settings, EventBus(), where=xorg.where) as agent:
        outcome = await asyncio.wait_for(agent.run(TASK), timeout=120)
    assert outcome.status == "finished", outcome
    assert proc.stdout is not None
    moved = read_event(proc.stdout)
    assert moved["kind"] == "moved"
    assert on(UPPER, moved["box"]), moved
    # each end of the drag lands within 1 px of its point, so the move within 2 px
    assert abs(moved["box"][0] - TARGET[0]) <= 2 and abs(moved["box"][1] - TARGET[1]) <= 2
    system = fake_model.requests[0].all_text()
    assert "The desktop has 2 monitors; the screenshot shows all of them together" in system


def first_image_size(body: dict[str, Any]) -> tuple[int, int]:
    """The pixel size of the first screenshot in an Anthropic request body."""
    for message in body["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "image":
                data = base64.b64decode(block["source"]["data"])
                return Image.open(io.BytesIO(data)).size
    raise AssertionError("no image in the request")


def test_run_with_monitor_2_sees_and_acts_on_that_monitor_only(
    xorg: DummyXorg, fake_model: FakeModel, tmp_path: Path
) -> None:
    """``jarvis run --monitor 2``: this task's screenshots are of monitor 2, the model is
    told so, and its clicks land there."""
    middle = (640, 512)  # the middle of monitor 2's 1280x1024 picture
    fake_model.script(
        Reply(text="Thought: click the middle.", tool_calls=[call("click", x=640, y=512)]),
        Reply(text="Thought: done.", tool_calls=[call("finished", summary="clicked")]),
        Reply(text='{"done": true, "reason": "clicked"}'),
    )
    env = {
        **xorg.where.env(),
        "ANTHROPIC_API_KEY": TEST_KEY,
        "ANTHROPIC_BASE_URL": fake_model.anthropic_base_url,
        "JARVIS_MAX_RETRIES": "0",
        "JARVIS_LONG_TERM_MEMORY": "false",
    }
    data = tmp_path / "data"
    command = [sys.executable, "-m", "jarvis", "run", "Click the middle of the screen."]
    flags = ["--provider", "anthropic", "--monitor", "2", "--data-dir", str(data)]
    proc = subprocess.run(
        [*command, *flags],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first = fake_model.requests[0]
    assert first_image_size(first.body) == (1280, 1024)  # monitor 2 at its own size
    assert "the screenshot shows monitor 2 of 2 only (1280x1024)" in first.all_text()
    verify = fake_model.requests[-1]  # the check of the finish, on a fresh screenshot
    assert first_image_size(verify.body) == (1280, 1024)
    assert "the screenshot shows monitor 2 of 2 only (1280x1024)" in verify.all_text()
    inp = Input(failsafe=False, display=xorg.where)
    try:  # the pointer stays where the click was: the middle of monitor 2
        assert inp.position() == (UPPER.left + middle[0], UPPER.top + middle[1])
    finally:
        inp.close()
