"""A global hotkey grabbed on one X display: the kill switch's grab (see
:mod:`jarvis.safety.killswitch` for what a press does).

:class:`KillSwitch` opens its own X connection to its display, puts a passive grab on the
root window for the chord in every combination with NumLock and CapsLock, and waits for
it in a thread. Because the grab is the X server's, it fires wherever the focus is, even
while the agent types. A :class:`~jarvis.desktop.desktop.Desktop` makes one for its own
display (:meth:`Desktop.kill_switch`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
from collections.abc import Callable
from typing import Any

from jarvis.desktop import x11
from jarvis.desktop.keys import MODIFIERS, UnknownKeyError, parse_chord

log = logging.getLogger(__name__)

# X modifier masks: Shift, Lock (CapsLock), Control, Mod1 (Alt), Mod2 (NumLock), Mod4 (Super)
_MASKS = {"shift": 1 << 0, "ctrl": 1 << 2, "alt": 1 << 3, "super": 1 << 6}
_LOCK, _NUMLOCK = 1 << 1, 1 << 4
LOCK_VARIANTS = (0, _LOCK, _NUMLOCK, _LOCK | _NUMLOCK)


class KillSwitchError(RuntimeError):
    """The hotkey could not be grabbed (bad chord, no display, another client holds it)."""


def chord_grab(chord: str) -> tuple[int, str]:
    """``"ctrl+alt+escape"`` -> (the modifier mask, the X keysym name of the one other key).

    Raises KillSwitchError unless the chord is modifiers plus exactly one key.
    """
    try:
        keys = parse_chord(chord)
    except UnknownKeyError as exc:
        raise KillSwitchError(f"kill hotkey {chord!r}: {exc}") from exc
    mods = [k for k in keys if k in MODIFIERS]
    others = [k for k in keys if k not in MODIFIERS]
    if len(others) != 1:
        raise KillSwitchError(f"kill hotkey {chord!r}: give modifiers and exactly one other key")
    mask = 0
    for mod in mods:
        mask |= _MASKS[mod]
    return mask, x11.keysym_name(others[0])


class KillSwitch:
    """Grab ``chord`` on the X display ``where`` and call ``on_press`` (in the listener
    thread) each time it is pressed."""

    def __init__(self, chord: str, on_press: Callable[[], None], where: x11.XDisplay) -> None:
        self.chord = chord
        self.where = where
        self.mask, self.keysym = chord_grab(chord)
        self.on_press = on_press
        self._display: Any = None
        self._keycode = 0
        self._thread: threading.Thread | None = None
        self._lost = False
        self._wake_r, self._wake_w = -1, -1
        self.presses = 0

    def start(self) -> KillSwitch:
        from Xlib import XK, X, error

        try:
            display = self.where.open()
        except (error.DisplayError, error.ConnectionClosedError, OSError) as exc:
            raise KillSwitchError(f"kill hotkey: cannot open the X display: {exc}") from exc
        keycode = display.keysym_to_keycode(XK.string_to_keysym(self.keysym))
        if not keycode:
            display.close()
            raise KillSwitchError(f"kill hotkey {self.chord!r}: no key for {self.keysym}")
        root = display.screen().root
        catch = error.CatchError(error.BadAccess)
        for extra in LOCK_VARIANTS:
            root.grab_key(
                keycode, self.mask | extra, False, X.GrabModeAsync, X.GrabModeAsync, onerror=catch
            )
        display.sync()
        if catch.get_error() is not None:
            display.close()
            raise KillSwitchError(
                f"kill hotkey {self.chord!r} is already grabbed by another program; "
                "choose another with safety.kill_hotkey"
            )
        self._display, self._keycode = display, keycode
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._listen, name="kill-switch", daemon=True)
        self._thread.start()
        log.info("kill switch: %s grabbed on %s", self.chord, display.get_display_name())
        return self

    def _listen(self) -> None:
        from Xlib import error

        try:
            self._events()
        except (error.ConnectionClosedError, OSError) as exc:
            self._lost = True
            log.warning("the kill switch is off: the X display is gone (%s)", exc)

    def _events(self) -> None:
        from Xlib import X

        display = self._display
        fd = display.fileno()
        while True:
            while display.pending_events():
                event = display.next_event()
                if event.type == X.KeyPress and event.detail == self._keycode:
                    self.presses += 1
                    try:
                        self.on_press()
                    except Exception:  # the switch must survive a broken callback
                        log.exception("kill switch: the stop callback failed")
            readable, _, _ = select.select([fd, self._wake_r], [], [])
            if self._wake_r in readable:
                return

    def stop(self) -> None:
        if self._thread is None:
            return
        os.write(self._wake_w, b"x")
        self._thread.join(timeout=5)
        self._thread = None
        if self._lost:  # nothing to ungrab on a connection that is gone
            with contextlib.suppress(Exception):
                self._display.close()
        else:
            with contextlib.suppress(Exception):  # the display may be gone already
                root = self._display.screen().root
                for extra in LOCK_VARIANTS:
                    root.ungrab_key(self._keycode, self.mask | extra)
                self._display.sync()
            with contextlib.suppress(Exception):
                x11.close_display(self._display)
        for fd in (self._wake_r, self._wake_w):
            os.close(fd)

    def __enter__(self) -> KillSwitch:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
