"""Mouse and keyboard on a wlroots compositor, with the X11 Input's methods.

The pointer is a ``zwlr_virtual_pointer_v1`` of our own
(:class:`~jarvis.desktop.wlroots.pointer.VirtualPointer`); keys and text go through
wtype (:mod:`jarvis.desktop.wlroots.keyboard`), with a standing virtual keyboard held
from the start so the seat never loses its keyboard between two wtype runs
(:mod:`jarvis.desktop.wlroots.seat_keyboard`). Coordinates are logical pixels of the
layout. Each action returns only once the compositor handled it, else raises an
:class:`~jarvis.desktop.errors.InputError`: nothing reports success for input that no
path delivered.

Not here yet: the corner fail-safe (a Wayland client cannot read where a person put the
pointer, so ``failsafe`` is off and the kill switch is the brake), holding a key across
calls (wtype's keyboard goes away when it exits) and the paste method of typing.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from jarvis.desktop.errors import InputError, InputInterrupted
from jarvis.desktop.keys import normalize_key, parse_chord
from jarvis.desktop.text_entry import TypedText, clean_text
from jarvis.desktop.wlroots import keyboard
from jarvis.desktop.wlroots.pointer import VirtualPointer
from jarvis.desktop.wlroots.seat_keyboard import SeatKeyboard
from jarvis.desktop.wlroots.session import WaylandDisplay, WaylandError, layout_box, read_outputs

if TYPE_CHECKING:
    from jarvis.desktop.input import Direction

MAX_SCROLL = 100
DRAG_STEPS = 12
_MULTI_CLICK_S = 0.5  # as on X11: GTK and Qt count clicks within 400 ms as one sequence
UNCHECKED_WTYPE = "wtype's keys reached the compositor; the window's reading of them is unchecked"


class WlInput:
    """Pointer and keys on one wlroots compositor; close it when done."""

    def __init__(
        self,
        where: WaylandDisplay,
        stop: threading.Event | None = None,
        hold: threading.Event | None = None,
    ) -> None:
        self.where = where
        self.stop = stop
        self.hold = hold
        self.failsafe = False
        self.type_method = "wtype"
        self.held: list[str] = []
        self._lock = threading.RLock()
        self._outputs = read_outputs(where)
        self._layout = layout_box(self._outputs)
        # both made now and held: a seat gains a device's capability only when it is
        # made, and clients bind their wl_pointer or wl_keyboard after that event, so
        # a device made for an action would lose that action's first events
        self._pointer: VirtualPointer | None = VirtualPointer(where)
        self._seat_keyboard: SeatKeyboard | None = SeatKeyboard(where)
        self._placed: tuple[int, int] | None = None
        self._last_press = 0.0

    @property
    def pointer(self) -> VirtualPointer:
        if self._pointer is None:
            self._pointer = VirtualPointer(self.where)
        return self._pointer

    def reopen(self, where: object) -> None:
        """Read the layout again (and move to ``where`` when it is another compositor)."""
        with self._lock:
            if isinstance(where, WaylandDisplay) and where != self.where:
                self.close()
                self.where = where
                self._pointer = VirtualPointer(where)
                self._seat_keyboard = SeatKeyboard(where)
            self._outputs = read_outputs(self.where)
            self._layout = layout_box(self._outputs)

    def close(self) -> None:
        with self._lock:
            if self._pointer is not None:
                self._pointer.close()
                self._pointer = None
            if self._seat_keyboard is not None:
                self._seat_keyboard.close()
                self._seat_keyboard = None

    def bounds(self) -> tuple[int, int, int, int]:
        """(left, top, right, bottom) of the layout, right/bottom exclusive."""
        left, top, width, height = self._layout
        return left, top, left + width, top + height

    def position(self) -> tuple[int, int]:
        """Where we last put the pointer (a Wayland client cannot read it back)."""
        if self._placed is None:
            raise InputError("the pointer's position is unknown until Jarvis moves it")
        return self._placed

    def _check_point(self, x: int, y: int) -> None:
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (x, y)):
            raise InputError(f"coordinates must be integers, got ({x!r}, {y!r})")
        left, top, right, bottom = self.bounds()
        if not (left <= x < right and top <= y < bottom):
            raise InputError(
                f"({x}, {y}) is outside the screen ({left}, {top})-({right - 1}, {bottom - 1})"
            )
        if not any(o.contains(x, y) for o in self._outputs):  # the compositor would clamp it
            boxes = ", ".join(f"{o.name} {o.box}" for o in self._outputs)
            raise InputError(f"({x}, {y}) is outside the screen: on no output ({boxes})")

    def _guard(self) -> None:
        if self.stop is not None and self.stop.is_set():
            raise InputInterrupted("input stopped: the task was cancelled")
        if self.hold is not None and self.hold.is_set():
            raise InputInterrupted("input stopped: a person took over the screen")

    def _move(self, x: int, y: int) -> None:
        self.pointer.move(x, y, self._layout)
        self._placed = (x, y)

    # -- mouse

    def move(self, x: int, y: int) -> None:
        with self._lock:
            self._check_point(x, y)
            self._guard()
            self._move(x, y)

    def _clicks(self, x: int, y: int, button: str, count: int) -> None:
        with self._lock:
            self._check_point(x, y)
            self._guard()
            if count > 1:  # a burst must not join the last click's sequence
                wait = self._last_press + _MULTI_CLICK_S - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            self._move(x, y)
            self.pointer.click(button, count)
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
            self._check_point(x1, y1)
            self._check_point(x2, y2)
            self._guard()
            self._move(x1, y1)
            self.pointer.button("left", True)
            try:
                for i in range(1, DRAG_STEPS + 1):
                    self._guard()
                    step_x = x1 + round((x2 - x1) * i / DRAG_STEPS)
                    self._move(step_x, y1 + round((y2 - y1) * i / DRAG_STEPS))
            finally:
                self.pointer.button("left", False)

    def scroll(self, x: int, y: int, direction: Direction, amount: int = 3) -> None:
        """``amount`` wheel clicks at (x, y) in ``direction``."""
        if direction not in ("up", "down", "left", "right"):
            raise InputError(f"unknown scroll direction {direction!r} (up, down, left, right)")
        if not isinstance(amount, int) or not 1 <= amount <= MAX_SCROLL:
            raise InputError(f"scroll amount must be an integer 1..{MAX_SCROLL}, got {amount!r}")
        with self._lock:
            self._check_point(x, y)
            self._guard()
            self._move(x, y)
            sign = -1 if direction in ("up", "left") else 1
            self.pointer.scroll(direction in ("up", "down"), sign * amount)

    # -- keyboard

    def hotkey(self, keys: str) -> None:
        """Press a chord such as ``"ctrl+shift+s"`` (held in order, released in reverse)."""
        chord = parse_chord(keys)
        with self._lock:
            self._guard()
            keyboard.press_chord(self.where, chord, self._seat_keyboard)

    def press_key(self, key: str) -> None:
        self.hotkey(key)

    def hold_key(self, key: str, down: bool = True) -> None:
        normalize_key(key)
        raise InputError("holding a key down is not built for Wayland desktops yet")

    def release_keys(self) -> None:
        """Nothing to let go: no key is ever left held here."""

    def type_text(self, text: str) -> TypedText:
        """Type ``text`` exactly into the focused window; newline is Return, tab is Tab."""
        text = clean_text(text)
        if not text:
            return TypedText("wtype", 0)
        with self._lock:
            self._guard()
            try:
                target = keyboard.type_text(self.where, text)
            except WaylandError:
                self._guard()  # wtype was ended by a takeover or the kill switch
                raise
        return TypedText("wtype", len(text), target=target, unchecked=UNCHECKED_WTYPE)
