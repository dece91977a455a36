"""X11 helpers: xdotool, key names and the keymap.

Everything here is specific to X11 and imported only where X11 is in use.

- :func:`xdotool` runs xdotool (keys and typing go through it).
- The keymap, spare keycodes and chords pressed through XTEST are in
  :mod:`jarvis.desktop.keymap`; the keyboard group in :mod:`jarvis.desktop.xkb`.
- The CLIPBOARD selection (paste, read, restore) is in :mod:`jarvis.desktop.clipboard`.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)


class X11Error(RuntimeError):
    """An X11 helper (Xvfb, xdotool, xclip) failed; the message says which and why."""


@dataclass(frozen=True)
class XDisplay:
    """Where an X display is: its name (``:3``) and the cookie file that opens it
    (None: the one this process was started with). Passed to everything that talks
    to the display, so that two displays can be driven from one process at once."""

    name: str
    xauthority: str | None = None
    session_bus: str = field(default="", compare=False)
    """The D-Bus session of this display's desktop (its accessibility bus publishes the
    apps' widgets); empty: none known."""
    private: bool = field(default=False, compare=False)
    """A display Jarvis started for itself (``--sandbox``, a channel's): nobody looks at
    it, so ``desktop.indicator: auto`` shows no sign there."""

    @classmethod
    def from_env(cls) -> XDisplay:
        """The display this process was started on (``DISPLAY``, ``XAUTHORITY``, and
        ``DBUS_SESSION_BUS_ADDRESS`` for its session): the one place that reads them.
        Start-up (the CLI, the daemon, the eval child) calls it once and passes the display
        down; nothing writes ``DISPLAY``."""
        return cls(
            os.environ.get("DISPLAY", ""),
            os.environ.get("XAUTHORITY"),
            os.environ.get("DBUS_SESSION_BUS_ADDRESS", ""),
        )

    def env(self) -> dict[str, str]:
        """An environment for a child process that works on this display."""
        extra = {"DISPLAY": self.name}
        if self.xauthority is not None:
            extra["XAUTHORITY"] = self.xauthority
        if self.session_bus:
            extra["DBUS_SESSION_BUS_ADDRESS"] = self.session_bus
        return {**os.environ, **extra}

    def open(self) -> Any:
        """A new python-xlib connection to this display (close it with close_display)."""
        return open_display(self.name, self.xauthority)


def is_x11(where: XDisplay) -> bool:
    """True when ``where`` is an X display to talk to (Linux or BSD, a display name given)."""
    name = where.name
    return bool(name) and os.name == "posix" and os.uname().sysname != "Darwin"


_AUTH_LOCK = threading.Lock()


@contextmanager
def connecting_with(xauthority: str | None) -> Iterator[None]:
    """While a connection is made: the cookie file ``xauthority`` names is the one the
    client library reads (python-xlib and libxcb read ``$XAUTHORITY`` when they connect,
    and take no file of their own). Connections are made one at a time under a lock; with
    None, the process's own file is used and nothing changes."""
    if xauthority is None:
        yield
        return
    with _AUTH_LOCK:
        saved = os.environ.get("XAUTHORITY")
        os.environ["XAUTHORITY"] = xauthority
        try:
            yield
        finally:
            if saved is None:
                os.environ.pop("XAUTHORITY", None)
            else:
                os.environ["XAUTHORITY"] = saved


def open_display(name: str, xauthority: str | None = None) -> Any:
    """Open a python-xlib connection to display ``name`` with the cookie in
    ``xauthority`` (None: this process's). Every Xlib connection goes through here."""
    from Xlib.display import Display

    from jarvis.desktop.xconnect import allow_missing_xauthority

    allow_missing_xauthority()  # a server started without -auth and no ~/.Xauthority
    with connecting_with(xauthority):
        return Display(name or None)


def have(tool: str) -> bool:
    return shutil.which(tool) is not None


def close_display(display: Any) -> None:
    """Close a python-xlib connection after a round trip.

    Unlike libX11's XCloseDisplay, python-xlib's close() does not sync, and the
    server may drop requests it has not processed when the connection goes (a
    pasted text's ChangeProperty, for example, then never reaches the requestor).
    """
    try:
        display.sync()
    finally:
        display.close()


# ------------------------------------------------------------------------ xdotool


def xdotool(*args: str, timeout: float = 10.0, where: XDisplay | None = None) -> None:
    """Run ``xdotool ARGS`` (on ``where``, else on this process's display); a failure is
    an X11Error with xdotool's message."""
    try:
        done = subprocess.run(
            ["xdotool", *args],
            env=where.env() if where is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as exc:
        raise X11Error("xdotool is not installed (apt-get install xdotool)") from exc
    except subprocess.TimeoutExpired as exc:
        raise X11Error(f"xdotool {args[0]} timed out after {timeout:.0f} s") from exc
    if done.returncode != 0:
        msg = done.stderr.decode(errors="replace").strip()
        raise X11Error(f"xdotool {args[0]} failed ({done.returncode}): {msg}")


_CLICK_GAP_MS = 12


def click_burst(display: Any, button: int, count: int) -> None:
    """Press and release ``button`` ``count`` times where the pointer is, sent to the
    server in one write: pyautogui syncs after each event, and a process descheduled
    between two clicks for longer than the double-click time (400 ms in GTK) under
    load makes a double click two single clicks. The server spaces the events itself
    (XTEST's delay) by a few milliseconds: Chromium did not count a press stamped with
    the same time as the previous release as a second click. ``display`` is an open
    python-xlib connection."""
    from Xlib import X
    from Xlib.ext import xtest

    try:
        for i in range(count):
            xtest.fake_input(display, X.ButtonPress, button, time=_CLICK_GAP_MS if i else 0)
            xtest.fake_input(display, X.ButtonRelease, button, time=_CLICK_GAP_MS)
        display.sync()
    except Exception as exc:  # the display is gone or refuses us
        raise X11Error(f"the display took no click: {exc!r}") from exc


def char_keysym(char: str) -> int:
    """The X keysym for one character (Latin-1 keysyms are the code point)."""
    code = ord(char)
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code
    return 0x01000000 + code


# ---------------------------------------------------------------- key names

_X11_KEYSYMS: dict[str, str] = {
    "ctrl": "Control_L", "alt": "Alt_L", "shift": "Shift_L", "super": "Super_L",
    "enter": "Return", "esc": "Escape", "tab": "Tab", "space": "space",
    "backspace": "BackSpace", "delete": "Delete", "insert": "Insert", "home": "Home",
    "end": "End", "pageup": "Page_Up", "pagedown": "Page_Down", "up": "Up", "down": "Down",
    "left": "Left", "right": "Right", "capslock": "Caps_Lock", "printscreen": "Print",
    "menu": "Menu", "pause": "Pause", "numlock": "Num_Lock", "scrolllock": "Scroll_Lock",
}  # fmt: skip
_PUNCT_NAMES = (
    "exclam", "quotedbl", "numbersign", "dollar", "percent", "ampersand", "apostrophe",
    "parenleft", "parenright", "asterisk", "plus", "comma", "minus", "period", "slash",
    "colon", "semicolon", "less", "equal", "greater", "question", "at", "bracketleft",
    "backslash", "bracketright", "asciicircum", "underscore", "grave", "braceleft", "bar",
    "braceright", "asciitilde",
)  # fmt: skip
_PUNCT_KEYSYMS = dict(zip("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", _PUNCT_NAMES, strict=True))


def keysym_name(key: str) -> str:
    """The keysym name xdotool understands for a canonical key."""
    if key in _X11_KEYSYMS:
        return _X11_KEYSYMS[key]
    if re.fullmatch(r"f\d+", key):
        return key.upper()
    if len(key) == 1:
        if key.isascii() and key.isalnum():
            return key
        if key in _PUNCT_KEYSYMS:
            return _PUNCT_KEYSYMS[key]
        return f"U{ord(key):04X}"
    raise ValueError(f"no X keysym for key {key!r}")


def keysym_number(key: str) -> int:
    """The X keysym number of a canonical key."""
    if len(key) == 1:
        return char_keysym(key)
    from Xlib import XK

    return int(XK.string_to_keysym(keysym_name(key)))
