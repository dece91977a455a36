"""Keys held down across actions: UI-TARS's ``press``/``keydown`` and ``release``/``keyup``
(ByteDance's executors send ``keyDown`` / ``keyUp``), so a model can hold shift over a later
click. :class:`jarvis.desktop.input.Input` keeps the list of keys it holds and lets go of
them at a task's end.

On X11 a key goes down through ``xdotool keydown`` (``keyup``), or without xdotool through
XTEST on the Input's own connection; elsewhere through pyautogui ``keyDown`` / ``keyUp``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jarvis.desktop import keymap, x11, xkb
from jarvis.desktop.errors import InputError
from jarvis.desktop.keys import pyautogui_key


def xtest_key(display: Any, keysym: int, down: bool) -> None:
    """Press (``down``) or release one key with XTEST on ``display``; its keycode is read
    from the server's keymap now (our spare keycodes may be newer than Xlib's copy)."""
    from Xlib import X
    from Xlib.ext import xtest

    try:
        active = xkb.active_group(display)
        code, group, _ = keymap.Keymap.read(display).keycode(keysym, active)
        with xkb.group_locked(display, group):
            xtest.fake_input(display, X.KeyPress if down else X.KeyRelease, code)
            display.sync()
    except x11.X11Error:
        raise
    except Exception as exc:  # the display is gone or refuses us
        raise x11.X11Error(f"the display took no key: {exc!r}") from exc


def send_key(
    name: str,
    down: bool,
    *,
    on_x11: bool,
    where: x11.XDisplay,
    spare: keymap.SpareKeycodes,
    display: Callable[[], Any],
    gui: Callable[[], Any],
) -> None:
    """One key (a canonical name, see :mod:`jarvis.desktop.keys`) down or up."""
    if not on_x11:
        getattr(gui(), "keyDown" if down else "keyUp")(pyautogui_key(name))
        return
    try:
        keysym = x11.keysym_number(name)
        spare.ensure([keysym])
        if x11.have("xdotool"):
            verb = "keydown" if down else "keyup"
            x11.xdotool(verb, x11.keysym_name(name), timeout=10.0, where=where)
            return
        xtest_key(display(), keysym, down)
    except x11.X11Error as exc:
        raise InputError(str(exc)) from exc
