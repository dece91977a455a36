"""The pointer's gestures over a device that takes moves, button presses and wheel clicks
(the Wayland backends: a wlroots virtual pointer, the RemoteDesktop portal): move, the
clicks, drag and scroll, each checked, stoppable and serialised the same way.

A backend gives :meth:`PointerGestures._check` (is the point on the screen),
:meth:`PointerGestures._move`, :meth:`PointerGestures._button` and
:meth:`PointerGestures._wheel`; each raises an :class:`~jarvis.desktop.errors.InputError`
when the device did not take the event, so nothing reports a gesture that did not happen.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from jarvis.desktop.errors import InputError, InputInterrupted

if TYPE_CHECKING:
    from jarvis.desktop.input import Direction

MAX_SCROLL = 100
DRAG_STEPS = 12
MULTI_CLICK_S = 0.5  # as on X11: GTK and Qt count clicks within 400 ms as one sequence


def check_scroll(direction: str, amount: object) -> None:
    """Raise :class:`InputError` unless ``direction`` is one of the four and ``amount`` a
    whole number of wheel clicks from 1 to :data:`MAX_SCROLL` (every backend's rule)."""
    if direction not in ("up", "down", "left", "right"):
        raise InputError(f"unknown scroll direction {direction!r} (up, down, left, right)")
    if not isinstance(amount, int) or not 1 <= amount <= MAX_SCROLL:
        raise InputError(f"scroll amount must be an integer 1..{MAX_SCROLL}, got {amount!r}")


class PointerGestures:
    """Mouse gestures for a backend; the subclass sets ``stop``, ``hold``, ``_lock``."""

    stop: threading.Event | None
    hold: threading.Event | None
    _lock: threading.RLock
    _placed: tuple[int, int] | None = None
    _last_press = 0.0

    # -- what a backend gives

    def _check(self, x: int, y: int) -> None:
        raise NotImplementedError

    def _move_device(self, x: int, y: int) -> None:
        raise NotImplementedError

    def _button(self, button: str, down: bool) -> None:
        raise NotImplementedError

    def _wheel(self, vertical: bool, clicks: int) -> None:
        raise NotImplementedError

    def _click(self, button: str, count: int) -> None:
        """``count`` presses of ``button`` where the pointer is (a device may do it whole)."""
        for _ in range(count):
            self._button(button, True)
            self._button(button, False)

    # -- shared

    def position(self) -> tuple[int, int]:
        """Where we last put the pointer (a Wayland client cannot read it back)."""
        if self._placed is None:
            raise InputError("the pointer's position is unknown until Jarvis moves it")
        return self._placed

    def _guard(self) -> None:
        if self.stop is not None and self.stop.is_set():
            raise InputInterrupted("input stopped: the task was cancelled")
        if self.hold is not None and self.hold.is_set():
            raise InputInterrupted("input stopped: a person took over the screen")

    def _move(self, x: int, y: int) -> None:
        self._move_device(x, y)
        self._placed = (x, y)

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
                wait = self._last_press + MULTI_CLICK_S - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            self._move(x, y)
            self._click(button, count)
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
            self._button("left", True)
            try:
                for i in range(1, DRAG_STEPS + 1):
                    self._guard()
                    step_x = x1 + round((x2 - x1) * i / DRAG_STEPS)
                    self._move(step_x, y1 + round((y2 - y1) * i / DRAG_STEPS))
            finally:
                self._button("left", False)

    def scroll(self, x: int, y: int, direction: Direction, amount: int = 3) -> None:
        """``amount`` wheel clicks at (x, y) in ``direction``."""
        check_scroll(direction, amount)
        with self._lock:
            self._check(x, y)
            self._guard()
            self._move(x, y)
            sign = -1 if direction in ("up", "left") else 1
            self._wheel(direction in ("up", "down"), sign * amount)


def check_integers(x: object, y: object) -> None:
    """Coordinates must be ints (not bools, not floats)."""
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (x, y)):
        raise InputError(f"coordinates must be integers, got ({x!r}, {y!r})")
