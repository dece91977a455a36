"""A standing virtual keyboard that keeps the seat's keyboard capability.

A headless compositor's seat has no keyboard until a virtual keyboard exists, and loses
it when the last one goes. wtype's keyboard lives only while wtype runs, so each call
would give the seat a keyboard anew: clients then make their ``wl_keyboard`` only on
that capability event, while wtype is already typing, and the first keys are lost
(measured on sway 1.7 with foot: "yz@#/-{} ä€" of "yz@#/-{} ä€ß Привет" went nowhere).
:class:`SeatKeyboard` is made when the input opens and held until it closes; it never
sends a key. On a seat with a real keyboard it changes nothing.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from jarvis.desktop.wlroots.session import WaylandDisplay, WaylandError

log = logging.getLogger(__name__)

MANAGER = "zwp_virtual_keyboard_manager_v1"
KEYMAP_FORMAT_XKB_V1 = 1
KEYMAP = b"""xkb_keymap {
xkb_keycodes "jarvis" { minimum = 8; maximum = 255; <K1> = 9; };
xkb_types "jarvis" { include "complete" };
xkb_compatibility "jarvis" { include "complete" };
xkb_symbols "jarvis" { key <K1> { [ Escape ] }; };
};
"""


class SeatKeyboard:
    """A virtual keyboard on ``where``'s seat that sends nothing; close it when done."""

    def __init__(self, where: WaylandDisplay) -> None:
        from pywayland.client import Display
        from pywayland.protocol.wayland import WlSeat

        from jarvis.desktop.wlroots.protocol import ZwpVirtualKeyboardManagerV1

        self._display: Any = Display(where.socket)
        try:
            self._display.connect()
        except Exception as exc:  # pywayland raises ValueError or RuntimeError
            raise WaylandError(
                f"cannot connect to the compositor at {where.socket}: {exc}"
            ) from exc
        found: dict[str, tuple[int, int]] = {}
        registry = self._display.get_registry()

        def on_global(_registry: Any, name: int, interface: str, version: int) -> None:
            found.setdefault(interface, (name, version))

        registry.dispatcher["global"] = on_global
        self._display.roundtrip()
        if MANAGER not in found or "wl_seat" not in found:
            self._display.disconnect()
            raise WaylandError(f"the compositor offers no {MANAGER}: Jarvis cannot type")
        seat = registry.bind(found["wl_seat"][0], WlSeat, 1)
        manager = registry.bind(found[MANAGER][0], ZwpVirtualKeyboardManagerV1, 1)
        self._keyboard: Any = manager.create_virtual_keyboard(seat)
        fd = os.memfd_create("jarvis-keymap")
        try:
            os.write(fd, KEYMAP + b"\0")
            self._keyboard.keymap(KEYMAP_FORMAT_XKB_V1, fd, len(KEYMAP) + 1)
            self._display.roundtrip()  # the compositor has read the keymap: fd may go
        except Exception as exc:
            self._display.disconnect()
            raise WaylandError(f"the compositor refused the seat's keyboard: {exc}") from exc
        finally:
            os.close(fd)

    def close(self) -> None:
        try:
            self._keyboard.destroy()
            self._display.roundtrip()
        except Exception as exc:  # the compositor may be gone already
            log.debug("closing the seat's keyboard: %s", exc)
        self._display.disconnect()
