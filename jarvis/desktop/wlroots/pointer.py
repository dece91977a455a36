"""The pointer on a wlroots compositor: ``zwlr_virtual_pointer_v1`` through pywayland.

One Wayland connection per :class:`VirtualPointer`, with one virtual pointer on the
compositor's seat. Positions go as ``motion_absolute`` over the layout box (the box
around every output, in logical pixels): x - box.x out of box.width lands on x exactly,
whatever output it falls on and whatever its scale. Every request is followed by
``frame`` and a roundtrip, so a call returns only once the compositor has handled it; a
compositor without the protocol, or a connection that broke, raises
:class:`~jarvis.desktop.wlroots.session.WaylandError` and nothing reports success.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from jarvis.desktop.wlroots.session import WaylandDisplay, WaylandError

log = logging.getLogger(__name__)

MANAGER = "zwlr_virtual_pointer_manager_v1"
BUTTONS = {"left": 0x110, "right": 0x111, "middle": 0x112}  # BTN_LEFT, BTN_RIGHT, BTN_MIDDLE
AXIS_VERTICAL, AXIS_HORIZONTAL = 0, 1
AXIS_SOURCE_WHEEL = 0
WHEEL_STEP = 15.0  # wl_pointer axis units of one wheel click (what libinput sends)


def _now_ms() -> int:
    return int(time.monotonic() * 1000) & 0xFFFFFFFF


class VirtualPointer:
    """A virtual pointer on ``where``'s seat; close it when done."""

    def __init__(self, where: WaylandDisplay) -> None:
        from pywayland.client import Display
        from pywayland.protocol.wayland import WlSeat

        from jarvis.desktop.wlroots.protocol import ZwlrVirtualPointerManagerV1

        self.where = where
        self._lock = threading.Lock()
        self._display: Any = Display(where.socket)
        try:
            self._display.connect()
        except Exception as exc:  # pywayland raises ValueError or RuntimeError
            raise WaylandError(
                f"cannot connect to the compositor at {where.socket}: {exc}"
            ) from exc
        self.globals: dict[str, tuple[int, int]] = {}
        registry = self._display.get_registry()
        registry.dispatcher["global"] = self._on_global
        self._roundtrip()
        if MANAGER not in self.globals:
            self._display.disconnect()
            raise WaylandError(
                f"the compositor offers no {MANAGER}: Jarvis cannot move or click the pointer"
            )
        if "wl_seat" not in self.globals:
            self._display.disconnect()
            raise WaylandError("the compositor offers no wl_seat")
        seat = registry.bind(self.globals["wl_seat"][0], WlSeat, 1)
        name, version = self.globals[MANAGER]
        manager = registry.bind(name, ZwlrVirtualPointerManagerV1, min(version, 2))
        self._pointer: Any = manager.create_virtual_pointer(seat)
        self._roundtrip()

    def _on_global(self, _registry: Any, name: int, interface: str, version: int) -> None:
        self.globals.setdefault(interface, (name, version))

    def _roundtrip(self) -> None:
        try:
            self._display.roundtrip()
        except Exception as exc:  # a protocol error or a compositor gone
            raise WaylandError(f"the compositor did not take the pointer request: {exc}") from exc

    def move(self, x: int, y: int, layout: tuple[int, int, int, int]) -> None:
        """Put the pointer on logical pixel (x, y) of the layout box ``layout``."""
        left, top, width, height = layout
        if not (left <= x < left + width and top <= y < top + height):
            raise WaylandError(f"({x}, {y}) is outside the layout {layout}")
        with self._lock:
            self._pointer.motion_absolute(_now_ms(), x - left, y - top, width, height)
            self._pointer.frame()
            self._roundtrip()

    def button(self, button: str, pressed: bool) -> None:
        """Press or release ``button`` (left, right, middle) where the pointer is."""
        with self._lock:
            self._pointer.button(_now_ms(), BUTTONS[button], 1 if pressed else 0)
            self._pointer.frame()
            self._roundtrip()

    def click(self, button: str = "left", count: int = 1) -> None:
        """``count`` presses and releases of ``button``, each handled before the next."""
        for _ in range(count):
            self.button(button, True)
            self.button(button, False)

    def scroll(self, vertical: bool, clicks: int) -> None:
        """``clicks`` wheel clicks (positive: down or right, as wl_pointer counts)."""
        axis = AXIS_VERTICAL if vertical else AXIS_HORIZONTAL
        with self._lock:
            self._pointer.axis_source(AXIS_SOURCE_WHEEL)
            self._pointer.axis_discrete(_now_ms(), axis, WHEEL_STEP * clicks, clicks)
            self._pointer.frame()
            self._roundtrip()

    def close(self) -> None:
        with self._lock:
            try:
                self._pointer.destroy()
                self._display.roundtrip()
            except Exception as exc:  # the compositor may be gone already
                log.debug("closing the virtual pointer: %s", exc)
            self._display.disconnect()
