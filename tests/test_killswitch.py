"""The kill switch on Xvfb: the chord is grabbed wherever the focus is (NumLock or not),
a second grab is refused, and a scripted task typing a long text is stopped by the hotkey
sent with xdotool: cancelled, recorded as stopped by the hotkey, and the agent runs the next
task normally."""

from __future__ import annotations

import asyncio
import difflib
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from jarvis.agent.factory import build_agent
from jarvis.desktop.x11 import XDisplay
from jarvis.events import EventBus, EventRecorder, TaskFinished
from jarvis.safety.killswitch import (
    KillSwitch,
    KillSwitchError,
    chord_grab,
    chord_keysyms,
    kill_switch,
    release_held_keys,
)
from tests.agent_harness import agent_settings, model_point
from tests.fake_model import FakeModel, Reply, call
from tests.tkdriver import TkApp

LONG_TEXT = "the quick brown fox jumps over the lazy dog " * 60  # 2640 characters


@pytest.mark.parametrize(
    ("chord", "mask", "keysym"),
    [
        ("ctrl+alt+escape", 0x4 | 0x8, "Escape"),
        ("Escape+Alt+Control", 0x4 | 0x8, "Escape"),
        ("super+shift+k", 0x40 | 0x1, "k"),
        ("pause", 0, "Pause"),
    ],
)
def test_chord_grab(chord: str, mask: int, keysym: str) -> None:
    assert chord_grab(chord) == (mask, keysym)


@pytest.mark.parametrize("chord", ["ctrl+alt", "ctrl+a+b", "ctrl+nosuchkey", "", "ctrl++alt"])
def test_bad_chords(chord: str) -> None:
    with pytest.raises(KillSwitchError):
        chord_grab(chord)


def _keys_down() -> list[int]:
    from Xlib.display import Display

    display = Display()
    try:
        bitmap = display.query_keymap()
    finally:
        display.close()
    return [i * 8 + b for i, byte in enumerate(bitmap) for b in range(8) if byte >> b & 1]


def test_chord_keysyms() -> None:
    assert chord_keysyms("ctrl+alt+escape") == {
        *("Control_L", "Control_R", "Alt_L", "Alt_R", "Meta_L", "Meta_R", "Escape"),
    }


@pytest.mark.usefixtures("xserver")
def test_release_held_keys_keeps_the_chord() -> None:
    """A typing process ended between press and release leaves a key down; it is released,
    the keys of the person's chord are not."""
    subprocess.run(["xdotool", "keydown", "Shift_L", "keydown", "Control_L"], check=True)
    try:
        assert len(_keys_down()) == 2
        released = release_held_keys({"Control_L", "Escape"}, XDisplay.from_env())
        assert len(released) == 1 and len(_keys_down()) == 1
    finally:
        subprocess.run(["xdotool", "keyup", "Control_L", "keyup", "Shift_L"], check=True)
    assert _keys_down() == []


def _press(chord: str) -> None:
    subprocess.run(["xdotool", "key", chord], check=True, timeout=10)


def _wait(predicate: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.mark.usefixtures("xserver")
def test_grab_fires_anywhere_and_only_once(tkapp: TkApp) -> None:
    pressed = threading.Event()
    count: list[int] = []

    def on_press() -> None:
        count.append(1)
        pressed.set()

    with KillSwitch("ctrl+alt+escape", on_press, XDisplay.from_env()):
        tkapp.focus("notes")
        mark = tkapp.mark()
        _press("ctrl+alt+Escape")
        assert pressed.wait(5)
        _press("Num_Lock")  # NumLock on: the grab still matches
        try:
            _press("ctrl+alt+Escape")
            _wait(lambda: len(count) == 2)
        finally:
            _press("Num_Lock")
        with pytest.raises(KillSwitchError, match="already grabbed"):
            KillSwitch("ctrl+alt+escape", on_press, XDisplay.from_env()).start()
        _press("ctrl+alt+e")  # another chord is not ours
        tkapp.sync()
        escapes = [e for e in tkapp.events("key", since=mark) if e["keysym"] == "Escape"]
        assert escapes == []  # the grabbed chord never reached the focused app
        assert [e["keysym"] for e in tkapp.events("key", since=mark) if e["keysym"] == "e"]
    assert len(count) == 2
    mark = tkapp.mark()
    _press("ctrl+alt+Escape")  # released: the app gets it again
    tkapp.wait_kind("key", since=mark, keysym="Escape")


@pytest.mark.usefixtures("xserver")
async def test_hotkey_stops_a_typing_task(
    tkapp: TkApp, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch)
    notes = model_point(tkapp, "notes", settings)
    box = model_point(tkapp, "box", settings)
    fake_model.script(
        Reply(tool_calls=[call("click", x=notes[0], y=notes[1]), call("type", text=LONG_TEXT)]),
        Reply(tool_calls=[call("click", x=box[0], y=box[1]), call("type", text="next")]),
        Reply(tool_calls=[call("finished", summary="typed next")]),
        Reply(text='{"done": true, "reason": "ok"}'),
    )
    bus = EventBus()
    recorder = EventRecorder(bus)
    async with build_agent(settings, bus, where=XDisplay.from_env()) as agent:
        loop = asyncio.get_running_loop()
        with kill_switch(settings, agent, loop, XDisplay.from_env()):
            run = asyncio.create_task(agent.run("type a long text"))
            typing = await asyncio.to_thread(
                tkapp.wait_for,
                lambda e: e["kind"] == "text" and len(e["text"]) >= 60,
                timeout=30,
            )
            assert typing
            await asyncio.to_thread(_press, "ctrl+alt+Escape")
            outcome = await asyncio.wait_for(run, timeout=10)
            await asyncio.to_thread(tkapp.sync)
            typed = tkapp.notes_text()
            assert outcome.status == "cancelled"
            assert outcome.stopped_by == "hotkey" and outcome.summary == "cancelled by hotkey"
            assert 60 <= len(typed) < len(LONG_TEXT) // 2
            # A key typed while the chord's ctrl+alt were down is a shortcut, not text, and
            # Tk's Text takes ctrl+alt+a/b/h/o/t as edits (Tk matches bindings with extra
            # modifiers: line start, back, delete, newline, transpose): the few keys typed
            # during the chord may edit anywhere on the line, so the text is the long
            # text's beginning up to those few edits.
            similar = difflib.SequenceMatcher(None, typed, LONG_TEXT[: len(typed)]).ratio()
            assert similar > 0.9, typed
            # the agent is usable at once: the next task runs and finishes
            second = await asyncio.wait_for(agent.run("type next"), timeout=60)
    assert second.status == "finished", second.summary
    tkapp.sync()  # the app has taken every key sent before it reads its fields
    assert tkapp.entry_text() == "next"
    assert tkapp.notes_text() == typed  # nothing more reached the notes after the stop
    assert _keys_down() == []  # no key left held by the ended typing
    finished = recorder.of(TaskFinished)
    assert [(e.status, e.stopped_by) for e in finished] == [
        ("cancelled", "hotkey"),
        ("finished", None),
    ]


@pytest.mark.usefixtures("xserver")
async def test_daemon_survives_the_hotkey_and_jarvis_stop(
    tkapp: TkApp, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`jarvis serve`: the hotkey cancels the typing task (stopped by hotkey), `jarvis stop`
    cancels the next one while its model is still streaming (stopped by cli), and the daemon
    keeps serving: a third task finishes."""
    from jarvis.cli import main
    from tests.api_harness import finish, is_step, scripted, serving_api, until

    settings = agent_settings(tmp_path, fake_model, monkeypatch, settle_ceiling_ms=200)
    notes = model_point(tkapp, "notes", settings)
    hold = threading.Event()
    fake_model.set_default(
        scripted(
            [
                Reply(
                    tool_calls=[call("click", x=notes[0], y=notes[1]), call("type", text=LONG_TEXT)]
                ),
                Reply(text="Thought: " + "hmm " * 50, hold=hold, hold_after=4),
                finish("third done"),
            ]
        )
    )

    def ends(api: Any) -> list[dict[str, Any]]:
        return [r for r in api.journal() if r["kind"] == "task_finished"]

    try:
        async with serving_api(settings) as api, api.client() as client:
            await client.post("/api/messages", json={"text": "type a long text"})
            await asyncio.to_thread(
                tkapp.wait_for, lambda e: e["kind"] == "text" and len(e["text"]) >= 40, 60
            )
            await asyncio.to_thread(_press, "ctrl+alt+Escape")
            await until(lambda: len(ends(api)) == 1, 20)
            await client.post("/api/messages", json={"text": "think for a while"})
            await until(lambda: sum(map(is_step, fake_model.requests)) >= 2, 60)
            argv = ["stop", "--data-dir", str(settings.data_dir), "--url", api.base]
            assert await asyncio.to_thread(main, argv) == 0
            await until(lambda: len(ends(api)) == 2, 20)
            assert not hold.is_set()  # stopped while the model was still streaming
            await client.post("/api/messages", json={"text": "now finish"})
            await until(lambda: len(ends(api)) == 3, 60)
            todos = (await client.get("/api/todos")).json()["todos"]
    finally:
        hold.set()
    first, second, third = ends(api)
    assert (first["status"], first["stopped_by"]) == ("cancelled", "hotkey")
    assert (second["status"], second["stopped_by"]) == ("cancelled", "cli")
    assert third["status"] == "completed"
    assert [t["status"] for t in todos] == ["cancelled", "cancelled", "completed"]
    assert len(tkapp.notes_text()) < len(LONG_TEXT) // 2


def test_in_a_sandbox_the_hotkey_stays_on_the_users_display(xserver: Any) -> None:
    """While the task works on a private display, the switch grabs the person's display:
    the chord pressed there fires; pressed on the private display (by the agent) it does not.
    The process's DISPLAY is never changed."""
    from jarvis.desktop.x11 import XDisplay
    from jarvis.safety.sandbox import Sandbox
    from jarvis.safety.settings import SandboxSettings

    fired = threading.Event()
    with Sandbox(SandboxSettings(size="640x480", window_manager=None)) as box:
        assert os.environ["DISPLAY"] == xserver.display != box.display
        where = XDisplay.from_env()
        assert where == XDisplay(xserver.display, xserver.env()["XAUTHORITY"])
        switch = KillSwitch("ctrl+alt+escape", fired.set, where)
        with switch:
            env = {**os.environ, **box.env()}  # the agent's press, on the private display
            subprocess.run(["xdotool", "key", "ctrl+alt+Escape"], env=env, check=True, timeout=10)
            env = {**os.environ, **xserver.env()}
            subprocess.run(["xdotool", "key", "ctrl+alt+Escape"], env=env, check=True, timeout=10)
            assert fired.wait(5)
            assert switch.presses == 1  # the private display's press was not taken
    assert os.environ["DISPLAY"] == xserver.display
    assert "JARVIS_USER_DISPLAY" not in os.environ
