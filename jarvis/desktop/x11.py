"""X11 helpers: xdotool, key names and the keymap.

Everything here is specific to X11 and imported only where X11 is in use.

- :func:`xdotool` runs xdotool (keys and typing go through it).
- :class:`SpareKeycodes` puts keysyms that are missing from the keymap (F13-F24,
  accented letters on a US layout, CJK, emoji) onto spare keycodes before xdotool
  presses them. Left to itself, xdotool remaps a scratch keycode per character and
  maps it back at once, and the receiving client, reading the event later, sees
  the wrong keysym: under load a CJK string came out garbled and F13 as "??".
- The CLIPBOARD selection (paste, read, restore) is in :mod:`jarvis.desktop.clipboard`.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

_VOID = 0xFFFFFF  # the VoidSymbol keysym


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


_SHIFT_L = 0xFFE1  # the Shift_L keysym


def key_chord(display: Any, keysyms: list[int]) -> None:
    """Press ``keysyms`` in order and release them in reverse with XTEST on ``display``
    (an open python-xlib connection), as ``xdotool key`` does: each keysym's keycode
    is read from the server's keymap now (python-xlib's cached copy may be older than
    our spare keycodes), and a keysym found only on a key's shifted level gets Shift
    held with it. A keysym not on the keymap is an X11Error; nothing is pressed then."""
    from Xlib import X
    from Xlib.ext import xtest

    try:
        keymap = Keymap.read(display)
        codes: list[int] = []
        for sym in keysyms:
            code, level = keymap.keycode(sym)
            if level == 1:
                shift, _ = keymap.keycode(_SHIFT_L)
                codes += [c for c in (shift,) if c not in codes]
            codes.append(code)
        for code in codes:
            xtest.fake_input(display, X.KeyPress, code, time=_CLICK_GAP_MS)
        for code in reversed(codes):
            xtest.fake_input(display, X.KeyRelease, code, time=_CLICK_GAP_MS)
        display.sync()
    except X11Error:
        raise
    except Exception as exc:  # the display is gone or refuses us
        raise X11Error(f"the display took no keys: {exc!r}") from exc


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


# ------------------------------------------------------------------- keymap


@dataclass(frozen=True)
class Keymap:
    """One reading of the server's keyboard mapping.

    Keycodes we put a keysym on read ``[sym, sym, VoidSymbol, VoidSymbol, ...]``
    (group 1 is the keysym, group 2 explicitly nothing), which no key of a standard
    keymap has: that marks them as ours, for any process.
    """

    first: int
    rows: list[list[int]]

    @staticmethod
    def read(display: Any) -> Keymap:
        first = display.display.info.min_keycode
        rows = display.get_keyboard_mapping(first, display.display.info.max_keycode - first + 1)
        return Keymap(first, [list(row) for row in rows])

    @staticmethod
    def is_ours(row: list[int]) -> bool:
        return len(row) >= 4 and row[0] not in (0, _VOID) and row[:4] == our_row(row[0])

    def ours(self) -> dict[int, int]:
        """keycode -> keysym of the rows we mapped."""
        return {self.first + i: row[0] for i, row in enumerate(self.rows) if self.is_ours(row)}

    def free(self) -> list[int]:
        """Keycodes without any keysym (no physical key), the last one left to xdotool."""
        return [self.first + i for i, row in enumerate(self.rows) if not any(row)][:-1]

    def keycode(self, keysym: int) -> tuple[int, int]:
        """(keycode, level) of ``keysym``: the first key with it unshifted (level 0),
        else the first with it shifted (level 1); X11Error when no key has it."""
        for level in (0, 1):
            for i, row in enumerate(self.rows):
                if len(row) > level and row[level] == keysym:
                    return self.first + i, level
        raise X11Error(f"the keysym {keysym:#x} is on no key of the keymap")

    def keysyms(self, base_only: bool = False) -> set[int]:
        """Every keysym on the keymap; ``base_only`` leaves out the rows we mapped."""
        rows = [r for r in self.rows if not (base_only and self.is_ours(r))]
        return {sym for row in rows for sym in row if sym}

    def capacity(self) -> int:
        """How many keysyms can be put on spare keycodes at once."""
        return len(self.free()) + len(self.ours())


def our_row(keysym: int) -> list[int]:
    """The keyboard-mapping row that puts ``keysym`` on a spare keycode (see Keymap)."""
    return [keysym, keysym, _VOID, _VOID]


def read_keymap(where: XDisplay) -> Keymap:
    display = where.open()
    try:
        return Keymap.read(display)
    finally:
        display.close()


class SpareKeycodes:
    """Puts keysyms that are missing from the keymap onto spare keycodes and keeps them there.

    xdotool can reach a keysym that is not on the keymap by remapping a scratch
    keycode, pressing it and mapping it back at once; a client that reads the event
    after the change back sees the wrong keysym (under load, F13 arrives as "??").
    Mapped here first, xdotool finds the keysym on the keymap and just presses it,
    and the mapping is still in place when the client reads the event. Mappings stay
    until the keycode is needed for another keysym (least recently used first).
    Keycodes without keysyms have no physical key, so this changes no real key.
    """

    def __init__(self, where: XDisplay) -> None:
        self.where = where
        self._recent: OrderedDict[int, int] = OrderedDict()  # keycode -> keysym, newest last

    def mapped(self, keysyms: Collection[int]) -> bool:
        """True if every one of ``keysyms`` is on the keymap now (ours or the base map's)."""
        return set(keysyms) <= read_keymap(self.where).keysyms()

    def ensure(self, keysyms: Collection[int]) -> bool:
        """Map the missing ``keysyms``; False (and no change) if too few keycodes are free."""
        wanted = list(dict.fromkeys(keysyms))
        display = self.where.open()
        try:
            keymap = Keymap.read(display)
            ours = keymap.ours()
            for code, sym in ours.items():
                if sym in wanted:
                    self._recent[code] = sym
                    self._recent.move_to_end(code)
            missing = [sym for sym in wanted if sym not in keymap.keysyms()]
            if not missing:
                return True
            recent = [code for code in self._recent if code in ours]
            oldest_first = [code for code in ours if code not in recent] + recent
            slots = keymap.free() + [code for code in oldest_first if ours[code] not in wanted]
            if len(missing) > len(slots):
                return False
            for sym, code in zip(missing, slots, strict=False):
                display.change_keyboard_mapping(code, [our_row(sym)])
                self._recent[code] = sym
                self._recent.move_to_end(code)
            log.debug("mapped %d keysyms onto spare keycodes", len(missing))
            return True
        finally:
            close_display(display)
