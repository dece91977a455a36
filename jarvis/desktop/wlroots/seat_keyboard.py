"""A standing virtual keyboard: it keeps the seat's keyboard capability and presses chords.

A headless compositor's seat has no keyboard until a virtual keyboard exists, and loses
it when the last one goes. wtype's keyboard lives only while wtype runs, so each call
would give the seat a keyboard anew: clients then make their ``wl_keyboard`` only on
that capability event, while wtype is already typing, and the first keys are lost
(measured on sway 1.7 with foot: "yz@#/-{} ä€" of "yz@#/-{} ä€ß Привет" went nowhere).
:class:`SeatKeyboard` is made when the input opens and held until it closes.

It also presses key chords the way a keyboard does: its keymap is the US layout (compiled
by the compositor from the system's XKB data, sent again before each chord since a
layout command replaces it), each modifier is a key press followed by
the modifier state, and the chord's other keys follow. wtype's chords only set the
modifier state, which GTK 3 ignores (measured in mousepad on sway 1.7: ctrl+a selected
nothing and shift+Home nothing); foot takes either.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from jarvis.desktop.wlroots.evdev_keys import MODIFIER_CODES, MODIFIER_MASKS, key_code
from jarvis.desktop.wlroots.session import WaylandDisplay, WaylandError

log = logging.getLogger(__name__)


def _now_ms() -> int:
    return int(time.monotonic() * 1000) & 0xFFFFFFFF


MANAGER = "zwp_virtual_keyboard_manager_v1"
KEYMAP_FORMAT_XKB_V1 = 1
KEYMAP = b"""xkb_keymap {
xkb_keycodes { include "evdev+aliases(qwerty)" };
xkb_types { include "complete" };
xkb_compat { include "complete" };
xkb_symbols { include "pc+us+inet(evdev)" };
};
"""
PRESSED, RELEASED = 1, 0


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
        try:
            self._upload_keymap()
        except Exception as exc:
            self._display.disconnect()
            raise WaylandError(f"the compositor refused the seat's keyboard: {exc}") from exc

    def _upload_keymap(self) -> None:
        """Give the keyboard its US keymap (again): sway applies an ``input`` layout
        command to every keyboard, virtual ones too, so after ``xkb_layout fr`` its keys
        would be read as AZERTY (measured on sway 1.7: ctrl+a arrived as ctrl+q)."""
        fd = os.memfd_create("jarvis-keymap")
        try:
            os.write(fd, KEYMAP + b"\0")
            self._keyboard.keymap(KEYMAP_FORMAT_XKB_V1, fd, len(KEYMAP) + 1)
            self._display.roundtrip()  # the compositor has read the keymap: fd may go
        finally:
            os.close(fd)

    def press_chord(self, chord: list[str]) -> bool:
        """Press ``chord`` (canonical names: modifiers held in order, the rest pressed and
        released, modifiers let go in reverse); False, with nothing sent, when a key is not
        on the US map. Returns once the compositor has handled every event."""
        codes = [key_code(k) for k in chord]
        if any(c is None for c in codes):
            return False
        mods = [k for k in chord if k in MODIFIER_MASKS]
        if any(c[1] for c in codes if c is not None) and "shift" not in mods:
            mods.append("shift")  # a shifted character: "@" is shift and the 2 key
        keys = [c[0] for k, c in zip(chord, codes, strict=True) if c and k not in MODIFIER_MASKS]
        mask = 0
        try:
            self._upload_keymap()  # the layout may have changed since the last chord
            for name in mods:
                self._keyboard.key(_now_ms(), MODIFIER_CODES[name], PRESSED)
                mask |= MODIFIER_MASKS[name]
                self._keyboard.modifiers(mask, 0, 0, 0)
            for code in keys:
                self._keyboard.key(_now_ms(), code, PRESSED)
                self._keyboard.key(_now_ms(), code, RELEASED)
            for name in reversed(mods):
                self._keyboard.key(_now_ms(), MODIFIER_CODES[name], RELEASED)
                mask &= ~MODIFIER_MASKS[name]
                self._keyboard.modifiers(mask, 0, 0, 0)
            self._display.roundtrip()
        except Exception as exc:  # a protocol error or a compositor gone
            raise WaylandError(f"the compositor did not take the keys {chord}: {exc}") from exc
        return True

    def close(self) -> None:
        try:
            self._keyboard.destroy()
            self._display.roundtrip()
        except Exception as exc:  # the compositor may be gone already
            log.debug("closing the seat's keyboard: %s", exc)
        self._display.disconnect()
