"""Mouse and keyboard through the RemoteDesktop portal, with the X11 Input's methods.

Coordinates are logical pixels of the layout (the streams' ``position`` and ``size``);
:func:`stream_point` finds the stream under a point and gives it in that stream's own
logical coordinates, which is what ``NotifyPointerMotionAbsolute`` takes. Buttons are
evdev codes, the wheel is ``NotifyPointerAxisDiscrete``, and keys and text are X
keysyms through ``NotifyKeyboardKeysym`` (:func:`text_keysyms`, :func:`chord_keysyms`):
the compositor finds the key and level for each. Every call returns only once the
portal answered; an error answer or a closed session raises an
:class:`~jarvis.desktop.errors.InputError`, so nothing reports success for input that
no path delivered. The portal cannot tell whether the focused window read the keys:
``type_text`` says so in its result.
"""

from __future__ import annotations

import threading

from jarvis.desktop import x11
from jarvis.desktop.errors import InputError
from jarvis.desktop.keys import normalize_key, parse_chord
from jarvis.desktop.pointer_gestures import PointerGestures, check_integers
from jarvis.desktop.portal.session import PortalSession, Stream
from jarvis.desktop.text_entry import TypedText, clean_text

BUTTONS = {"left": 0x110, "right": 0x111, "middle": 0x112}  # BTN_LEFT.. in linux/input.h
RETURN, TAB = 0xFF0D, 0xFF09
UNCHECKED_PORTAL = (
    "the desktop portal took the keys; it cannot tell whether the focused window read them: "
    "look at the screen to see whether the text arrived"
)


def stream_point(streams: list[Stream], x: int, y: int) -> tuple[Stream, int, int]:
    """The stream under the layout point (x, y), and the point in that stream's logical
    coordinates; InputError when no stream shows it."""
    for stream in streams:
        if stream.contains(x, y):
            return stream, x - stream.position[0], y - stream.position[1]
    boxes = ", ".join(f"{s.name} {s.box}" for s in streams)
    raise InputError(f"({x}, {y}) is outside the screen: on no monitor ({boxes})")


def text_keysyms(text: str) -> list[int]:
    """The keysym of each character of ``text``: Return for a newline, Tab for a tab,
    else the character's own (Latin-1 as its code point, the rest as 0x1000000 + it)."""
    return [RETURN if c == "\n" else TAB if c == "\t" else x11.char_keysym(c) for c in text]


def chord_keysyms(chord: str) -> list[int]:
    """The keysyms of a chord such as ``"ctrl+shift+s"``, in pressing order."""
    return [x11.keysym_number(key) for key in parse_chord(chord)]


class PortalInput(PointerGestures):
    """Pointer and keys through one portal session."""

    def __init__(
        self,
        session: PortalSession,
        stop: threading.Event | None = None,
        hold: threading.Event | None = None,
    ) -> None:
        self.session = session
        self.streams = session.streams
        self.stop = stop
        self.hold = hold
        self.failsafe = False
        self.type_method = "portal"
        self.held: list[str] = []
        self._lock = threading.RLock()

    def reopen(self, where: object) -> None:
        """Take the session's streams again (a portal desktop never moves elsewhere)."""
        with self._lock:
            self.streams = self.session.streams

    def close(self) -> None:
        """Nothing of our own to let go: the session is the desktop's."""

    def bounds(self) -> tuple[int, int, int, int]:
        """(left, top, right, bottom) of the layout, right/bottom exclusive."""
        left = min(s.position[0] for s in self.streams)
        top = min(s.position[1] for s in self.streams)
        right = max(s.position[0] + s.size[0] for s in self.streams)
        bottom = max(s.position[1] + s.size[1] for s in self.streams)
        return left, top, right, bottom

    def _check(self, x: int, y: int) -> None:
        check_integers(x, y)
        stream_point(self.streams, x, y)

    def _move_device(self, x: int, y: int) -> None:
        stream, sx, sy = stream_point(self.streams, x, y)
        self.session.motion(stream, sx, sy)

    def _button(self, button: str, down: bool) -> None:
        self.session.button(BUTTONS[button], down)

    def _wheel(self, vertical: bool, clicks: int) -> None:
        self.session.wheel(vertical, clicks)

    # -- keyboard

    def hotkey(self, keys: str) -> None:
        """Press a chord such as ``"ctrl+shift+s"`` (held in order, released in reverse)."""
        syms = chord_keysyms(keys)
        with self._lock:
            self._guard()
            pressed: list[int] = []
            try:
                for sym in syms:
                    self.session.keysym(sym, True)
                    pressed.append(sym)
            finally:
                for sym in reversed(pressed):
                    self.session.keysym(sym, False)

    def press_key(self, key: str) -> None:
        self.hotkey(key)

    def hold_key(self, key: str, down: bool = True) -> None:
        normalize_key(key)
        raise InputError("holding a key down is not built for the portal backend yet")

    def release_keys(self) -> None:
        """Nothing to let go: no key is ever left held here."""

    def type_text(self, text: str) -> TypedText:
        """Type ``text`` key by key into the focused window; newline is Return, tab Tab."""
        text = clean_text(text)
        if not text:
            return TypedText("portal", 0)
        with self._lock:
            for sym in text_keysyms(text):
                self._guard()
                self.session.keysym(sym, True)
                self.session.keysym(sym, False)
        return TypedText("portal", len(text), unchecked=UNCHECKED_PORTAL)
