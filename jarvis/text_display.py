"""How text from the model or a call is shown to a person: one rule for every client.

A character a person cannot see (controls, zero-width and other format characters, bidi
overrides, unusual spaces, private-use and unassigned code points, and the other
Unicode "default ignorable" ones such as variation selectors and Hangul fillers) is
written as ``\\u{hex}``: ``su\\u{200b}do`` cannot pass for ``sudo`` on an approval card,
and ``\\u{202e}`` cannot reorder the call a person reads. The braces keep the escape
unambiguous above U+FFFF (``\\u{e0001}``, a tag character; ``\\u{1d173}``, a musical
formatting character).

The daemon renders with these functions and puts the result in the events it sends
(``shown_call``, ``shown_arguments``, ``shown_reason``), so the TUI and the web panel
show the same text. Pure functions, standard library only.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

CALL_LIMIT = 120
"""Longest one-line call (``click(x=400, y=300)``) before it is cut with an ellipsis."""

_VALUE_LIMIT = 40

# Default_Ignorable_Code_Point (Unicode DerivedCoreProperties) that are not in a C* category,
# and U+2800 (a blank braille pattern, drawn as nothing).
_IGNORABLE = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x2800, 0x2800),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)


def hidden(char: str) -> bool:
    """True for a character that does not show as itself (a plain space shows)."""
    category = unicodedata.category(char)
    if category[0] == "C" or category in ("Zl", "Zp"):
        return True
    if category == "Zs":
        return char != " "
    code = ord(char)
    return any(low <= code <= high for low, high in _IGNORABLE)


def visible(text: str, keep: str = "") -> str:
    """``text`` with every hidden character written as ``\\u{hex}``; characters in
    ``keep`` (e.g. a newline between lines) are left as they are."""
    return "".join(
        f"\\u{{{ord(char):x}}}" if char not in keep and hidden(char) else char for char in text
    )


def shown_arguments(arguments: Any) -> str:
    """A call's arguments as indented JSON, hidden characters spelled out."""
    return visible(_json(arguments, indent=2), keep="\n")


def shown_call(tool_name: str, arguments: Any) -> str:
    """One line: ``click(x=400, y=300)``, ``type(text="hello")``; long values and long
    calls are cut with an ellipsis, hidden characters spelled out."""
    if isinstance(arguments, dict):
        inner = ", ".join(
            f"{key}={_cut(_json(value), _VALUE_LIMIT)}" for key, value in arguments.items()
        )
    else:
        inner = _cut(_json(arguments), _VALUE_LIMIT)
    return visible(_cut(f"{tool_name}({inner})", CALL_LIMIT))


def _json(value: Any, indent: int | None = None) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=indent)
    except (TypeError, ValueError):
        return repr(value)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
