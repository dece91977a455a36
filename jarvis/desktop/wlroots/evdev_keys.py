"""Canonical key names (:mod:`jarvis.desktop.keys`) as evdev key codes of the US layout
that :class:`~jarvis.desktop.wlroots.seat_keyboard.SeatKeyboard` uploads: (code, shift),
``shift`` when the character is the key's shifted level. Wayland key events carry evdev
codes (the XKB keycode less 8)."""

from __future__ import annotations

MODIFIER_CODES = {"ctrl": 29, "shift": 42, "alt": 56, "super": 125}
MODIFIER_MASKS = {"shift": 1, "ctrl": 4, "alt": 8, "super": 64}  # Shift, Control, Mod1, Mod4

_NAMED = {
    "esc": 1, "backspace": 14, "tab": 15, "enter": 28, "space": 57, "capslock": 58,
    "numlock": 69, "scrolllock": 70, "printscreen": 99, "home": 102, "up": 103,
    "pageup": 104, "left": 105, "right": 106, "end": 107, "down": 108, "pagedown": 109,
    "insert": 110, "delete": 111, "pause": 119, "menu": 127,
}  # fmt: skip
_ROWS = {"1234567890-=": 2, "qwertyuiop[]": 16, "asdfghjkl;'": 30, "zxcvbnm,./": 44}
_SHIFTED = dict(zip('~!@#$%^&*()_+{}|:"<>?', "`1234567890-=[]\\;',./", strict=True))


_PLAIN = {char: first + i for row, first in _ROWS.items() for i, char in enumerate(row)}
_PLAIN |= {"`": 41, "\\": 43}


def key_code(key: str) -> tuple[int, bool] | None:
    """(evdev code, shifted) of a canonical key on the US map; None when it has none."""
    if key in MODIFIER_CODES:
        return MODIFIER_CODES[key], False
    if key in _NAMED:
        return _NAMED[key], False
    if key.startswith("f") and key[1:].isdigit():
        number = int(key[1:])
        if 1 <= number <= 10:
            return 58 + number, False
        return (87 + number - 11, False) if number <= 12 else (183 + number - 13, False)
    if len(key) != 1:
        return None
    if key in _PLAIN:
        return _PLAIN[key], False
    if key.isascii() and key.isupper() and key.lower() in _PLAIN:
        return _PLAIN[key.lower()], True
    if key in _SHIFTED:
        return _PLAIN[_SHIFTED[key]], True
    return None
