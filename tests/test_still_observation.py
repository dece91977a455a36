"""The settle's picture of a still screen as the next step's observation: made while the
settle waits, equal to a capture of the same screen, used only when nothing ran since."""

from __future__ import annotations

import base64
import itertools
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jarvis.agent.state import RunState
from jarvis.config import load_settings
from jarvis.desktop.screen import Observation, Screen
from jarvis.desktop.settle import Settler, wait_until_still
from tests.agent_harness import agent_settings, model_point, run_agent
from tests.fake_model import FakeModel, RecordedRequest, Reply, call
from tests.tkdriver import TkApp

VERIFIED = Reply(text='{"done": true, "reason": "done"}')


def test_on_unchanged_sees_each_still_run_from_its_first_frame() -> None:
    source = itertools.chain([b"a", b"a", b"b", b"b", b"b"], itertools.repeat(b"b"))
    seen: list[tuple[bytes, int]] = []
    result = wait_until_still(
        lambda: next(source),
        floor_ms=0,
        interval_ms=2,
        on_unchanged=lambda f, n: seen.append((f, n)),
    )
    assert not result.timed_out and result.frames == 5
    assert seen == [(b"a", 1), (b"b", 1), (b"b", 2)]


def test_the_kept_observation_is_taken_once_and_only_while_fresh() -> None:
    state = RunState(task="t", task_id="t-1")
    assert state.take_still(1.0) is None
    kept: Any = object()
    state.still = (time.monotonic(), kept)
    assert state.take_still(1.0) is kept
    assert state.take_still(1.0) is None  # once
    state.still = (time.monotonic() - 0.5, kept)
    assert state.take_still(0.025) is None  # ended longer ago than a settle interval


@pytest.fixture
def settler(xserver: object, tmp_path: Path) -> Iterator[Settler]:
    settings = load_settings(data_dir=tmp_path)
    with Screen.from_settings(settings) as screen:
        yield Settler(screen, settings)


def _same_picture(a: Observation, b: Observation) -> bool:
    return a.data == b.data and a.phash == b.phash and a.model_size == b.model_size


@pytest.mark.serial  # grabs 25 ms apart on the real screen
def test_a_still_screen_comes_with_its_observation(tkapp: TkApp, settler: Settler) -> None:
    tkapp.sync()
    result = settler.wait()
    assert not result.timed_out and result.still is not None
    still = result.still.result(timeout=5)
    fresh = settler.screen.capture()
    assert _same_picture(still, fresh)  # the same pixels, the same picture for the model
    assert still.screen_size == fresh.screen_size and still.origin == fresh.origin


@pytest.mark.serial  # the sampling against a real animation's frame times
def test_the_observation_is_the_final_frame_of_an_animation(tkapp: TkApp, settler: Settler) -> None:
    screen = settler.screen
    before = screen.capture()
    tkapp.animate(300)
    result = settler.wait()
    tkapp.wait_kind("animate_done", timeout=5)
    tkapp.sync()
    final = screen.capture()
    assert not result.timed_out and result.still is not None
    still = result.still.result(timeout=5)
    assert not _same_picture(still, before), "the square did not move"
    assert _same_picture(still, final), "the observation is not of the settled screen"


def test_closing_the_screen_while_it_makes_an_observation_returns(xserver: object) -> None:
    """The settled worker's observation hands its hashing to the other worker: closing
    must not wait for it while holding what it needs (it hung once)."""
    screen = Screen()
    prepared = [screen.prepare(screen.frame_digest()) for _ in range(3)]
    assert all(p is not None for p in prepared)
    closing = threading.Thread(target=screen.close)
    closing.start()
    closing.join(timeout=20)
    assert not closing.is_alive(), "Screen.close() hung"


def test_a_timed_out_settle_keeps_no_observation(tkapp: TkApp, settler: Settler) -> None:
    settler.ceiling_ms = 200
    tkapp.animate(600)
    result = settler.wait()
    assert result.timed_out and result.still is None
    tkapp.wait_kind("animate_done", timeout=10)


# ----------------------------------------------------------------- in the loop


def _counting_captures(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Record when each Screen.capture runs (the real capture still runs)."""
    calls: list[float] = []
    capture = Screen.capture

    def counted(self: Screen) -> Observation:
        calls.append(time.monotonic())
        return capture(self)

    monkeypatch.setattr(Screen, "capture", counted)
    return calls


def _image_data(request: RecordedRequest) -> bytes:
    images = [
        block
        for message in request.messages
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "image"
    ]
    return base64.b64decode(images[-1]["source"]["data"])


@pytest.mark.usefixtures("xserver")
async def test_the_step_after_a_settle_starts_from_its_picture(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Step 1 types into the box (each call settles); step 2's request carries the
    settle's picture: no capture ran for it, and it shows what step 1 typed."""
    tkapp.reset()
    # the picture is kept for two settle intervals: 200 ms here, so that a busy test
    # machine's bookkeeping between the steps does not outlast it
    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_interval_ms=100)
    captures = _counting_captures(monkeypatch)
    seen: list[int] = []
    box = model_point(tkapp, "box", settings)

    def finish(request: RecordedRequest) -> Reply:
        seen.append(len(captures))
        return Reply(text="Thought: done.", tool_calls=[call("finished", summary="typed")])

    fake_model.script(
        Reply(
            text="Thought: type into the box.",
            tool_calls=[call("click", x=box[0], y=box[1]), call("type", text="still")],
        ),
        finish,
        VERIFIED,
    )
    outcome, _ = await run_agent(settings, "type still into the box")
    assert outcome.status == "finished", outcome.summary
    assert tkapp.entry_text() == "still"
    assert seen == [1]  # only step 1's capture ran before step 2 was decided
    with Screen() as screen:
        now = screen.capture()
    assert _image_data(fake_model.requests[1]) == now.data  # the screen after the typing


@pytest.mark.usefixtures("xserver")
async def test_a_call_after_the_settle_makes_the_next_step_capture(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call that does not settle (wait) ran after the click's settle: the next step
    captures the screen again rather than use the settle's picture."""
    tkapp.reset()
    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_interval_ms=100)
    captures = _counting_captures(monkeypatch)
    seen: list[int] = []
    box = model_point(tkapp, "box", settings)

    def finish(request: RecordedRequest) -> Reply:
        seen.append(len(captures))
        return Reply(text="Thought: done.", tool_calls=[call("finished", summary="clicked")])

    fake_model.script(
        Reply(
            text="Thought: click, then wait.",
            tool_calls=[call("click", x=box[0], y=box[1]), call("wait", ms=1)],
        ),
        finish,
        VERIFIED,
    )
    outcome, _ = await run_agent(settings, "click the box and wait")
    assert outcome.status == "finished", outcome.summary
    assert seen == [2]  # step 1's capture and step 2's own
