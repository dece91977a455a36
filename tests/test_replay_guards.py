"""The replay's guards for key calls and secret-cut calls, with the window lookups stubbed
(the display-level cases are in tests/test_replay.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from jarvis.desktop.screen import Observation, Size
from jarvis.desktop.windows import UNKNOWN, WindowInfo
from jarvis.events import EventBus
from jarvis.runs.placement import Stop
from jarvis.runs.replay import Replayer
from jarvis.runs.step_file import CallFile, Monitor, StepFile

EDITOR = WindowInfo(id=5, title="notes.txt - Mousepad", wm_class="Mousepad")
TERMINAL = WindowInfo(id=9, title="Terminal", wm_class="XTerm")


class FakeWindows:
    def __init__(self, focus: WindowInfo) -> None:
        self.focus = focus

    def focused(self) -> WindowInfo:
        return self.focus

    def at(self, x: int, y: int) -> WindowInfo:
        return self.focus


def replayer(focus: WindowInfo) -> Replayer:
    async def settle() -> None:
        return None

    return Replayer(
        capture=lambda: pytest.fail("a guard must decide without a capture"),
        settle=settle,
        registry=None,  # type: ignore[arg-type]  (never reached: the guard decides first)
        context=None,  # type: ignore[arg-type]
        bus=EventBus(),
        recorder=None,
        windows=FakeWindows(focus),  # type: ignore[arg-type]
    )


def step() -> StepFile:
    return StepFile(
        task_id="t",
        step=3,
        started=0.0,
        monitor=Monitor(screen=(64, 64), model=(64, 64)),
        scale=(1.0, 1.0),
    )


def observation() -> Observation:
    image = Image.new("RGB", (64, 64))
    return Observation(
        image=image,
        data=b"",
        media_type="image/jpeg",
        phash="0" * 16,
        model_size=Size(64, 64),
        screen_size=Size(64, 64),
        origin=(0, 0),
    )


async def place(r: Replayer, call: CallFile, distance: int = 0) -> Any:
    return await r.placer.place(Path("."), step(), call, observation(), distance)


async def test_typing_goes_only_to_the_recorded_window() -> None:
    call = CallFile(id="c", name="type", arguments={"text": "hi"}, focus=EDITOR)
    placed = await place(replayer(EDITOR), call)
    assert placed.arguments == {"text": "hi"}
    with pytest.raises(Stop, match="refusing to type into 'Terminal' \\(XTerm\\)"):
        await place(replayer(TERMINAL), call)
    hotkey = CallFile(id="h", name="hotkey", arguments={"keys": "ctrl+s"}, focus=EDITOR)
    with pytest.raises(Stop, match="refusing to hotkey"):
        await place(replayer(UNKNOWN), hotkey)


async def test_without_a_recorded_window_keys_need_the_same_screen() -> None:
    call = CallFile(id="c", name="press_key", arguments={"key": "enter"})
    assert (await place(replayer(TERMINAL), call, distance=3)).arguments == {"key": "enter"}
    with pytest.raises(Stop, match="differs from the recording by 30 pHash bits"):
        await place(replayer(TERMINAL), call, distance=30)


async def test_a_call_that_lost_a_secret_is_never_repeated() -> None:
    call = CallFile(
        id="c", name="type", arguments={"text": "[REDACTED]"}, focus=EDITOR, redacted=True
    )
    with pytest.raises(Stop, match="had a secret cut out of it"):
        await place(replayer(EDITOR), call)


async def test_a_pointer_call_without_its_crop_is_refused(tmp_path: Path) -> None:
    call = CallFile(id="c", name="click", arguments={"x": 3, "y": 4}, model_points=[(3, 4)])
    with pytest.raises(Stop, match="no target crop"):
        await place(replayer(EDITOR), call)


async def test_tools_a_replay_cannot_guard_are_refused() -> None:
    call = CallFile(id="c", name="open_app", arguments={"name": "mousepad"})
    with pytest.raises(Stop, match="cannot check what open_app would act on"):
        await place(replayer(EDITOR), call)
    waited = await place(replayer(EDITOR), CallFile(id="w", name="wait", arguments={"ms": 5}))
    assert waited.arguments == {"ms": 5}
