"""One point out of a grounding model's answer, in whatever shape its family writes it.

Grounding-only models answer a point (or a box) for a described element, not an action.
The shapes, from their model cards and code (``profiles.json`` names the source of each):

- ``{"x": 352, "y": 348}``: Holo1.5 / Holo2 (``ClickCoordinates``), Holo1's
  ``Click(352, 348)``;
- ``(x,y)``: GTA1, UGround-V1, UI-TARS grounding, GUI-Actor's wrapper;
- ``[x, y]``: ShowUI (0..1);
- ``<|box_start|>(x1,y1),(x2,y2)<|box_end|>``: OS-Atlas-Base-7B; ``[[x1,y1,x2,y2]]``:
  OS-Atlas-Base-4B; ``<box>[[x1, y1, x2, y2]]</box>``: InternVL3;
- ``<tool_call>{... "coordinate": [x, y]}</tool_call>``: Jedi (Qwen2.5-VL's computer_use);
- ``pyautogui.click(x=0.35, y=0.62)``: Aguvis; ``<point>x y</point>``, ``<bbox>..</bbox>``:
  Doubao.

The text has its reasoning dropped and its punctuation made ASCII first (the caller's
``clean_reply``), so a point drafted inside ``<think>`` is never the one taken.
"""

from __future__ import annotations

import re

_NUM = r"-?\d+(?:\.\d+)?"
_TOKENS = re.compile(
    r"<\|box_start\|>(.*?)<\|box_end\|>|<box>(.*?)</box>|<point>(.*?)</point>|"
    r"<bbox>(.*?)</bbox>",
    re.S,
)
_COORDINATE = re.compile(r"[\"']coordinate[\"']\s*:\s*\[([^\]]*)\]")
_X = re.compile(rf"[\"']?\bx[\"']?\s*[:=]\s*({_NUM})")
_Y = re.compile(rf"[\"']?\by[\"']?\s*[:=]\s*({_NUM})")
_PAIR = rf"\(\s*({_NUM})\s*,\s*({_NUM})\s*\)"
_TWO_CORNERS = re.compile(rf"{_PAIR}\s*,\s*{_PAIR}")
_BRACKETED = re.compile(
    rf"[\[(]\s*\[?\s*({_NUM})\s*,\s*({_NUM})(?:\s*,\s*({_NUM})\s*,\s*({_NUM}))?\s*\]?\s*[\])]"
)


def _numbers(text: str) -> list[float]:
    return [float(n) for n in re.findall(_NUM, text)]


def point_numbers(text: str) -> list[float] | None:
    """The first point ``[x, y]`` or box ``[x1, y1, x2, y2]`` in ``text``, or None."""
    for match in _TOKENS.finditer(text):
        inner = next(g for g in match.groups() if g is not None)
        found = _numbers(inner)
        if len(found) in (2, 4):
            return found
    coordinate = _COORDINATE.search(text)
    if coordinate:
        found = _numbers(coordinate.group(1))
        if len(found) == 2:
            return found
    x, y = _X.search(text), _Y.search(text)
    if x and y:
        return [float(x.group(1)), float(y.group(1))]
    corners = _TWO_CORNERS.search(text)
    if corners:
        return [float(g) for g in corners.groups()]
    bracketed = _BRACKETED.search(text)
    if bracketed:
        return [float(g) for g in bracketed.groups() if g is not None]
    return None
