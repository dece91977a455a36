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
import time
from typing import TYPE_CHECKING

from jarvis.desktop import x11
from jarvis.desktop.errors import InputError, InputInterrupted
from jarvis.desktop.keys import normalize_key, parse_chord
from jarvis.desktop.portal.session import PortalSession, Stream
from jarvis.desktop.text_entry import TypedText, clean_text

if TYPE_CHECKING:
    from jarvis.desktop.input import Direction

BUTTONS = {"left": 0x110, "right": 0x111, "middle": 0x112}  # BTN_LEFT.. in linux/input.h
RETURN, TAB = 0xFF0D, 0xFF09
MAX_SCROLL = 100
DRAG_STEPS = 12
_MULTI_CLICK_S = 0.5
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


class PortalInput:
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
        self._placed: tuple[int, int] | None = None
        self._last_press = 0.0

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

    def position(self) -> tuple[int, int]:
        """Where we last put the pointer (the portal cannot read it back)."""
        if self._placed is None:
            raise InputError("the pointer's position is unknown until Jarvis moves it")
        return self._placed

    def _check(self, x: int, y: int) -> None:
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (x, y)):
            raise InputError(f"coordinates must be integers, got ({x!r}, {y!r})")
        stream_point(self.streams, x, y)

    def _guard(self) -> None:
        if self.stop is not None and self.stop.is_set():
            raise InputInterrupted("input stopped: the task was cancelled")
        if self.hold is not None and self.hold.is_set():
            raise InputInterrupted("input stopped: a person took over the screen")

    def _move(self, x: int, y: int) -> None:
        stream, sx, sy = stream_point(self.streams, x, y)
        self.session.motion(stream, sx, sy)
        self._placed = (x, y)

    # -- mouse

    def move(self, x: int, y: int) -> None:
        with self._lock:
            self._check(x, y)
            self._guard()
            self._move(x, y)

    def _clicks(self, x: int, y: int, button: str, count: int) -> None:
        with self._lock:
            self._check(x, y)
            self._guard()
            if count > 1:  # a burst must not join the last click's sequence
                wait = self._last_press + _MULTI_CLICK_S - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            self._move(x, y)
            for _ in range(count):
                self.session.button(BUTTONS[button], True)
                self.session.button(BUTTONS[button], False)
            self._last_press = time.monotonic()

    def click(self, x: int, y: int) -> None:
        self._clicks(x, y, "left", 1)

    def double_click(self, x: int, y: int) -> None:
        self._clicks(x, y, "left", 2)

    def triple_click(self, x: int, y: int) -> None:
        self._clicks(x, y, "left", 3)

    def right_click(self, x: int, y: int) -> None:
        self._clicks(x, y, "right", 1)

    def middle_click(self, x: int, y: int) -> None:
        self._clicks(x, y, "middle", 1)

    def drag(self, x1: int, y1: int, x2: int, y2: int) -> None:
        """Press at (x1, y1), move there in steps with the button held, release at (x2, y2);
        the button is let go even when the drag is stopped half way."""
        with self._lock:
            self._check(x1, y1)
            self._check(x2, y2)
            self._guard()
            self._move(x1, y1)
            self.session.button(BUTTONS["left"], True)
            try:
                for i in range(1, DRAG_STEPS + 1):
                    self._guard()
                    step_x = x1 + round((x2 - x1) * i / DRAG_STEPS)
                    self._move(step_x, y1 + round((y2 - y1) * i / DRAG_STEPS))
            finally:
                self.session.button(BUTTONS["left"], False)

    def scroll(self, x: int, y: int, direction: Direction, amount: int = 3) -> None:
        """``amount`` wheel clicks at (x, y) in ``direction``."""
        if direction not in ("up", "down", "left", "right"):
            raise InputError(f"unknown scroll direction {direction!r} (up, down, left, right)")
        if not isinstance(amount, int) or not 1 <= amount <= MAX_SCROLL:
            raise InputError(f"scroll amount must be an integer 1..{MAX_SCROLL}, got {amount!r}")
        with self._lock:
            self._check(x, y)
            self._guard()
            self._move(x, y)
            sign = -1 if direction in ("up", "left") else 1
            self.session.wheel(direction in ("up", "down"), sign * amount)

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
