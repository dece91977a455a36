"""Key names: the canonical name of a key, chords, and how pyautogui spells them.

Canonical names are lower case: the modifiers ctrl, alt, shift and super, named
keys such as enter, esc, pageup and f1..f24, or one printable character. Every
alias a model or a person may write (cmd, return, "page up", arrowleft, ...) maps
to one of them; anything else is an :class:`UnknownKeyError`, never a silent
no-op. The X11 keysym for a canonical key is :func:`jarvis.desktop.x11.keysym_name`.
"""

from __future__ import annotations

import re
import sys

from jarvis.desktop.errors import InputError


class UnknownKeyError(InputError, ValueError):
    """A key name that is not known; ``key`` holds the name as given."""

    def __init__(self, key: str, reason: str = "") -> None:
        self.key = key
        detail = reason or (
            "use names like ctrl, alt, shift, super, enter, esc, tab, space, backspace, "
            "delete, up, pageup, home, f1..f24, or a single character"
        )
        super().__init__(f"unknown key {key!r}: {detail}")


MODIFIERS = ("ctrl", "alt", "shift", "super")
_NAMED = (
    *MODIFIERS,
    *("enter", "esc", "tab", "space", "backspace", "delete", "insert", "home", "end"),
    *("pageup", "pagedown", "up", "down", "left", "right", "capslock", "printscreen"),
    *("menu", "pause", "numlock", "scrolllock"),
)
_ALIASES: dict[str, str] = {name: name for name in _NAMED} | {
    "cmd": "super", "command": "super", "win": "super", "windows": "super", "meta": "super",
    "control": "ctrl", "ctl": "ctrl", "option": "alt", "opt": "alt",
    "return": "enter", "ret": "enter", "escape": "esc",
    "pgup": "pageup", "pgdn": "pagedown", "pgdown": "pagedown",
    "del": "delete", "ins": "insert", "bksp": "backspace", "spacebar": "space",
    "prtsc": "printscreen", "print": "printscreen", "apps": "menu",
    "plus": "+", "minus": "-",
}  # fmt: skip
for _arrow in ("up", "down", "left", "right"):
    _ALIASES[f"arrow{_arrow}"] = _ALIASES[f"{_arrow}arrow"] = _arrow
_FKEY = re.compile(r"f([1-9]|1[0-9]|2[0-4])")


def normalize_key(name: str) -> str:
    """The canonical name of one key; case, spaces, ``_`` and ``-`` in names do not matter.

    Named keys: ctrl, alt, shift, super (cmd/command/win/meta), enter (return),
    esc, tab, space, backspace, delete (del), insert, home, end, pageup (pgup,
    "page up"), pagedown (pgdn), up/down/left/right (arrowup, "up arrow"), f1..f24,
    capslock, printscreen, menu, pause, numlock, scrolllock. Any other single
    printable character is itself (letters lower-cased).
    """
    if not isinstance(name, str):
        raise UnknownKeyError(repr(name), "a key name must be a string")
    special = {" ": "space", "\n": "enter", "\r": "enter", "\t": "tab"}
    if name in special:
        return special[name]
    stripped = name.strip()
    if len(stripped) == 1:
        if not stripped.isprintable():
            raise UnknownKeyError(name, "not a printable character")
        return stripped.lower()
    compact = re.sub(r"[\s_-]+", "", stripped.lower())
    if compact in _ALIASES:
        return _ALIASES[compact]
    if _FKEY.fullmatch(compact):
        return compact
    if not stripped:
        raise UnknownKeyError(name, "empty key name")
    raise UnknownKeyError(name)


def parse_chord(chord: str) -> list[str]:
    """``"ctrl+shift+s"`` -> ``["ctrl", "shift", "s"]``; ``"ctrl++"`` is ctrl and plus."""
    if not isinstance(chord, str) or not chord.strip():
        raise UnknownKeyError(str(chord), "empty key chord")
    text, keys, i = chord.strip(), [], 0
    while i < len(text):
        if text[i] == "+":
            part, i = "+", i + 1
        else:
            end = text.find("+", i)
            end = len(text) if end < 0 else end
            part, i = text[i:end], end
        if i < len(text):
            if text[i] != "+":
                raise UnknownKeyError(chord, "keys in a chord are joined with '+'")
            i += 1
            if i == len(text):
                raise UnknownKeyError(chord, "the chord ends with '+' (use 'plus' for the key)")
        key = normalize_key(part)
        if key not in keys:
            keys.append(key)
    return keys


def pyautogui_key(key: str) -> str:
    """The pyautogui name for a canonical key on this platform."""
    names = {
        "super": {"darwin": "command", "win32": "win"}.get(sys.platform, "winleft"),
        "alt": "option" if sys.platform == "darwin" else "alt",
        "menu": "apps",
    }
    return names.get(key, key)
