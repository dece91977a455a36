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
from typing import TYPE_CHECKING

from jarvis.desktop.errors import InputError
from jarvis.desktop.keys import normalize_key, parse_chord
from jarvis.desktop.pointer_gestures import PointerGestures, check_integers
from jarvis.desktop.text_entry import TypedText, clean_text
from jarvis.desktop.wlroots import keyboard
from jarvis.desktop.wlroots.pointer import VirtualPointer
from jarvis.desktop.wlroots.seat_keyboard import SeatKeyboard
from jarvis.desktop.wlroots.session import WaylandDisplay, WaylandError, layout_box, read_outputs

if TYPE_CHECKING:
    pass

UNCHECKED_WTYPE = "wtype's keys reached the compositor; the window's reading of them is unchecked"


class WlInput(PointerGestures):
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

    def _check(self, x: int, y: int) -> None:
        check_integers(x, y)
        left, top, right, bottom = self.bounds()
        if not (left <= x < right and top <= y < bottom):
            raise InputError(
                f"({x}, {y}) is outside the screen ({left}, {top})-({right - 1}, {bottom - 1})"
            )
        if not any(o.contains(x, y) for o in self._outputs):  # the compositor would clamp it
            boxes = ", ".join(f"{o.name} {o.box}" for o in self._outputs)
            raise InputError(f"({x}, {y}) is outside the screen: on no output ({boxes})")

    def _move_device(self, x: int, y: int) -> None:
        self.pointer.move(x, y, self._layout)

    def _button(self, button: str, down: bool) -> None:
        self.pointer.button(button, down)

    def _wheel(self, vertical: bool, clicks: int) -> None:
        self.pointer.scroll(vertical, clicks)

    def _click(self, button: str, count: int) -> None:
        self.pointer.click(button, count)

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
