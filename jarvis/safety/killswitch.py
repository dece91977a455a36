"""The kill switch: a global hotkey, grabbed on the X server, that cancels the running task.

:class:`~jarvis.desktop.hotkey.KillSwitch` grabs the chord (``safety.kill_hotkey``,
default ctrl+alt+escape) on one display: the person's, given at start-up (under
``--sandbox`` the agent works on another display, and the grab stays on the person's).
Because the grab is the X server's, it fires wherever the focus is, even while the agent
types. On a press it calls ``on_press`` in its thread; :func:`agent_brake` makes that the
agent's cancel path: raise the stop event (input stops before its next piece), end the
agent's own xdotool processes that are typing right now, and cancel the task on its loop,
recorded as stopped by the hotkey. The daemon keeps running.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from jarvis.desktop import x11
from jarvis.desktop.hotkey import (
    LOCK_VARIANTS,
    KillSwitch,
    KillSwitchError,
    chord_grab,
)
from jarvis.desktop.keys import MODIFIERS, parse_chord

__all__ = [
    "LOCK_VARIANTS",
    "EarlyBrake",
    "KillSwitch",
    "KillSwitchError",
    "chord_grab",
    "kill_switch",
]

if TYPE_CHECKING:
    from jarvis.config import Settings


class Brakeable(Protocol):
    """What a brake stops: a live task's Agent, or a replay's Replayer."""

    @property
    def stop(self) -> threading.Event: ...

    def cancel(self, by: str = ...) -> None: ...


class Startable(Brakeable, Protocol):
    """An agent whose next run a brake can cancel before it begins."""

    def cancel_next(self, by: str) -> None: ...


log = logging.getLogger(__name__)
STOPPED_BY = "hotkey"


class EarlyBrake:
    """The brake of a run whose agent is still being made (the SDK, the memory and the
    desktop load after the grab): a press now is kept, and :meth:`hand_to` hands it to the
    agent, so the run is cancelled before its first action; later presses go straight to
    the agent. Thread-safe: the grab's thread presses, the loop hands it over."""

    def __init__(self) -> None:
        self._own = threading.Event()
        self._agent: Brakeable | None = None
        self._lock = threading.Lock()
        self.pressed_by: str | None = None
        """Who pressed before the agent was there (None: nobody)."""

    @property
    def stop(self) -> threading.Event:
        agent = self._agent
        return agent.stop if agent is not None else self._own

    def cancel(self, by: str = STOPPED_BY) -> None:
        with self._lock:
            agent = self._agent
            if agent is None:
                self.pressed_by = self.pressed_by or by
                return
        agent.cancel(by)

    def hand_to(self, agent: Startable) -> None:
        """From now on presses cancel ``agent``; a press made before it was there cancels
        the agent's next run as it begins, before its first step (call it before the run)."""
        with self._lock:
            self._agent = agent
            pressed = self.pressed_by
        if pressed is not None:
            agent.cancel_next(pressed)


def end_own_xdotool() -> list[int]:
    """End the ``xdotool type`` processes this process started (typing right now), so
    the typing stops at once instead of after the current piece. Returns their pids."""
    return _end_own(lambda name, argv: name == "xdotool" and argv[1:2] == [b"type"])


def end_own_wtype() -> list[int]:
    """End the ``wtype`` processes this process started (typing on a Wayland desktop
    right now: one process types the whole text); no key stays held after it."""
    return _end_own(lambda name, argv: name == "wtype")


def _end_own(typing: Callable[[str, list[bytes]], bool]) -> list[int]:
    """SIGTERM to this process's children whose name and argv ``typing`` accepts."""
    me, ended = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        name = stat[stat.find("(") + 1 : stat.rfind(")")]
        ppid = int(stat[stat.rfind(")") + 2 :].split()[1])
        if ppid != me:
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if typing(name, argv):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGTERM)
                ended.append(int(entry.name))
    return ended


def _wait_ended(pids: list[int], timeout: float = 0.5) -> None:
    """Wait until each process has exited (a zombie, or reaped), at most ``timeout``."""
    deadline = time.monotonic() + timeout
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                break
            if stat[stat.rfind(")") + 2 :].startswith("Z"):
                break
            time.sleep(0.002)


_CHORD_KEYSYMS = {
    "ctrl": ("Control_L", "Control_R"),
    "alt": ("Alt_L", "Alt_R", "Meta_L", "Meta_R"),
    "shift": ("Shift_L", "Shift_R"),
    "super": ("Super_L", "Super_R"),
}


def release_held_keys(keep: set[str], where: x11.XDisplay) -> list[int]:
    """Release every key still down on ``where`` except the keysyms in ``keep`` (the
    person's chord): a typing process ended between a key's press and its release must not
    leave that key held. Returns the released keycodes."""
    from Xlib import XK, X
    from Xlib.ext import xtest

    display = where.open()
    try:
        kept = {display.keysym_to_keycode(XK.string_to_keysym(k)) for k in keep}
        bitmap = display.query_keymap()
        down = [i * 8 + b for i, byte in enumerate(bitmap) for b in range(8) if byte >> b & 1]
        released = [code for code in down if code not in kept]
        for code in released:
            xtest.fake_input(display, X.KeyRelease, code)
        display.sync()
        return released
    finally:
        x11.close_display(display)


def chord_keysyms(chord: str) -> set[str]:
    """The keysym names a person holds for ``chord`` (both sides of each modifier)."""
    keys = parse_chord(chord)
    names = {x11.keysym_name(k) for k in keys if k not in MODIFIERS}
    for key in keys:
        names.update(_CHORD_KEYSYMS.get(key, ()))
    return names


def agent_brake(
    agent: Brakeable,
    loop: asyncio.AbstractEventLoop,
    by: str = STOPPED_BY,
    chord: str = "",
    *,
    typing_on: Callable[[], x11.XDisplay],
) -> Callable[[], None]:
    """The callback that stops ``agent`` from any thread: input first, then the task;
    ``typing_on`` says on which display the agent types now (its keys are released there)."""

    def press() -> None:
        log.warning("kill switch pressed: cancelling the running task")
        agent.stop.set()
        typing = end_own_xdotool()
        end_own_wtype()
        loop.call_soon_threadsafe(agent.cancel, by)
        if typing:
            _wait_ended(typing)
            try:
                release_held_keys(keep, typing_on())
            except Exception as exc:  # the task is cancelled either way
                log.warning("kill switch: could not release held keys: %s", exc)

    keep = chord_keysyms(chord) if chord else set()
    return press


@contextlib.contextmanager
def kill_switch(
    settings: Settings,
    agent: Brakeable,
    loop: asyncio.AbstractEventLoop,
    where: x11.XDisplay,
    typing_on: Callable[[], x11.XDisplay] | None = None,
) -> Iterator[bool]:
    """While inside, the configured hotkey cancels ``agent``'s task. It is grabbed on the
    person's display ``where``, also when the task works on a private display
    (``typing_on`` names that one; default: ``where``). Without a hotkey or a display it
    does nothing; a grab that fails is logged (the other brakes still work). Yields
    whether the hotkey is armed."""
    chord = settings.safety.kill_hotkey
    typing_on = typing_on or (lambda: where)
    if not chord or not x11.is_x11(where):
        yield False
        return
    brake = agent_brake(agent, loop, chord=chord, typing_on=typing_on)
    try:
        switch = KillSwitch(chord, brake, where).start()
    except KillSwitchError as exc:
        log.warning("%s", exc)
        yield False
        return
    try:
        yield True
    finally:
        switch.stop()
