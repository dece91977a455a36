"""`jarvis replay --recording NAME`: a person's recording on the Tk app (played through XTEST
with xdotool) is repeated without the model through replay's guards; a recording that
typed a secret is not replayed unless a stored secret is named for it. The action
builder's rules, table by table."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from jarvis.cli import main
from jarvis.desktop.x11 import XDisplay
from jarvis.recording.actions import SECRET_TYPED, Action, ActionBuilder
from jarvis.recording.recorder import Recorder, Recording
from jarvis.recording.skill_file import load_recording, write_recording
from jarvis.recording.xrecord import RawEvent
from tests.tkdriver import TkApp
from tests.xserver import Xvfb

NAME = "note a greeting"


def _record(xserver: Xvfb, tkapp: TkApp) -> Recording:
    recorder = Recorder(XDisplay.from_env())
    stop = threading.Event()
    done: list[Recording] = []
    thread = threading.Thread(target=lambda: done.append(recorder.run(stop)))
    thread.start()
    try:
        assert recorder.started.wait(10)
        bx, by = tkapp.widget_center("box")
        ox, oy = tkapp.widget_center("ok")
        for commands in (
            f"mousemove {bx} {by} click 1",
            "type hello",
            f"mousemove {ox} {oy} click 1",
            "key ctrl+alt+r",
        ):
            subprocess.run(["xdotool", *commands.split(" ")], env=xserver.env(), check=True)
            tkapp.sync()
            stop.wait(0.5)  # a person's pace: the recorder sees each pause
        thread.join(20)
        assert not thread.is_alive()
    finally:
        stop.set()
        thread.join(5)
        recorder.close()
    return done[0]


def test_a_recording_is_replayed_without_the_model(
    xserver: Xvfb, tkapp: TkApp, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = _record(xserver, tkapp)
    assert tkapp.ok_pressed() == "hello"  # what the person did
    data = tmp_path / "data"
    write_recording(data, NAME, recording)
    _, saved = load_recording(data, NAME)
    assert [s.action.kind for s in saved.steps] == ["click", "type", "click"]
    tkapp.reset()
    assert main(["replay", "--recording", NAME, "--data-dir", str(data)]) == 0, capsys.readouterr()
    tkapp.sync()
    assert tkapp.ok_pressed() == "hello"  # the replay did it again
    assert main(["replay", "--data-dir", str(data)]) == 2  # neither a task nor a recording
    assert main(["replay", "--recording", "no such", "--data-dir", str(data)]) == 2


def test_a_recording_with_a_secret_needs_a_stored_secret_named(
    xserver: Xvfb, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    step = Action(kind="type", secret=True, text=SECRET_TYPED, x=10, y=10)
    write_recording(tmp_path / "data", NAME, Recording(steps=[_Step(step)]))
    capsys.readouterr()
    assert main(["replay", "--recording", NAME, "--data-dir", str(tmp_path / "data")]) == 2
    assert "step 1 typed a secret" in capsys.readouterr().err


def _Step(action: Action) -> object:
    from jarvis.recording.recorder import Step

    return Step(action)


KEYS = {10: ("a", "a"), 11: ("b", "b"), 36: ("Return", "\r"), 37: ("Control_L", "")}
KEYS |= {64: ("Alt_L", ""), 27: ("r", "r"), 50: ("Shift_L", "")}


class _Keys:
    """A keyboard of the US layout's few keys the tables use."""

    def describe(self, keycode: int, state: int) -> tuple[str, str]:
        name, char = KEYS[keycode]
        return (name.upper(), char.upper()) if state & 1 and char.isalpha() else (name, char)


def _ev(kind: str, detail: int = 0, x: int = 0, y: int = 0, t: int = 0, state: int = 0) -> RawEvent:
    return RawEvent(kind, detail, x, y, state, t)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        ([_ev("button_down", 1, 5, 5), _ev("button_up", 1, 5, 5)], [("click", "")]),
        (
            [_ev("button_down", 1, 5, 5, 0), _ev("button_up", 1, 5, 5, 50),
             _ev("button_down", 1, 6, 5, 200), _ev("button_up", 1, 6, 5, 250)],
            [("double_click", "")],
        ),
        ([_ev("button_down", 3, 5, 5), _ev("button_up", 3, 5, 5)], [("right_click", "")]),
        (
            [_ev("button_down", 1, 5, 5), _ev("motion", 0, 50, 40), _ev("button_up", 1, 50, 40)],
            [("drag", "")],
        ),
        ([_ev("button_down", 5, 5, 5), _ev("button_down", 5, 5, 5)], [("scroll", "down")]),
        (
            [_ev("key_down", 10), _ev("key_down", 50), _ev("key_down", 11, state=1),
             _ev("key_up", 50), _ev("key_down", 36)],
            [("type", "aB"), ("press_key", "enter")],
        ),
        ([_ev("key_down", 37), _ev("key_down", 10), _ev("key_up", 37)], [("hotkey", "ctrl+a")]),
        ([_ev("key_down", 37), _ev("key_down", 64), _ev("key_down", 27)], []),  # the stop chord
    ],
)  # fmt: skip
def test_device_events_become_actions(
    events: list[RawEvent], expected: list[tuple[str, str]]
) -> None:
    builder = ActionBuilder(_Keys())
    out: list[Action] = []
    for event in events:
        out += builder.feed(event)
    out += builder.flush()
    shown = [(a.kind, a.text or a.keys or a.direction) for a in out]
    assert shown == expected


def test_keys_into_a_password_field_keep_no_text() -> None:
    builder = ActionBuilder(_Keys(), is_secret=lambda: True)
    for code in (10, 11, 10):
        builder.feed(_ev("key_down", code))
    [typed] = builder.flush()
    assert typed.secret and typed.text == SECRET_TYPED
