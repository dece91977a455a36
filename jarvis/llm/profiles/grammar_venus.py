"""UI-Venus-1.5's actions (inclusionAI/UI-Venus), parsed into Jarvis's tool calls.

The model answers ``<think>...</think><action>Click(box=(x1,y1))</action>
<conclusion>...</conclusion>`` with the action space of its web prompt
(``models/navigation/utils.py`` ``WEB_USER_PROMPT``): Click, DoubleClick, Hover, Drag,
Scroll, Type, Hotkey, Wait, Finished, CallUser, PressEnter, and the phone's LongPress,
PressBack, PressHome, PressRecent and Launch, which have no desktop meaning and are
refused. Points are on a 0..1000 grid (``Venus_framework/processor/uivenus_processor.py``).
Its web harness presses Enter after ``Type``; so does this one.
"""

from __future__ import annotations

import re
from typing import Any

from jarvis.llm.profiles.grammar_text import (
    GrammarError,
    Point,
    clean_reply,
    keys_action,
    parse_call,
    split_calls,
    to_calls,
)
from jarvis.llm.types import ToolCall

Action = tuple[str, dict[str, Any]]
_ACTION = re.compile(r"<action>(.*?)</action>", re.S)
_POINTS = {"click": "click", "doubleclick": "double_click", "hover": "mouse_move"}
_PHONE = ("longpress", "pressback", "presshome", "pressrecent", "launch")
CENTRE = (500.0, 500.0)


def _xy(value: Any, point: Point, what: str) -> tuple[int, int]:
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise GrammarError(f"{what} must be a point (x,y) on the 0..1000 grid, got {value!r}")
    return point([float(value[0]), float(value[1])])


def _scroll(kwargs: dict[str, Any], point: Point) -> Action:
    if kwargs.get("start") and kwargs.get("end"):  # a swipe: the content moves the other way
        (sx, sy), (ex, ey) = kwargs["start"], kwargs["end"]
        x, y = _xy(kwargs["start"], point, "start")
        if abs(ey - sy) >= abs(ex - sx):
            direction = "down" if ey < sy else "up"
        else:
            direction = "right" if ex < sx else "left"
        return "scroll", {"x": x, "y": y, "direction": direction, "amount": 5}
    direction = str(kwargs.get("direction", "down")).strip().lower()
    if direction not in ("up", "down", "left", "right"):
        raise GrammarError("Scroll needs direction='down or up' (or start and end points)")
    x, y = point(list(CENTRE))
    return "scroll", {"x": x, "y": y, "direction": direction, "amount": 5}


def _action(name: str, kwargs: dict[str, Any], point: Point) -> list[Action]:
    key = name.lower()
    if key in _POINTS:
        x, y = _xy(kwargs.get("box"), point, "box")
        return [(_POINTS[key], {"x": x, "y": y})]
    if key == "drag":
        sx, sy = _xy(kwargs.get("start"), point, "start")
        ex, ey = _xy(kwargs.get("end"), point, "end")
        return [("drag", {"startX": sx, "startY": sy, "endX": ex, "endY": ey})]
    if key == "scroll":
        return [_scroll(kwargs, point)]
    if key == "type":
        text = str(kwargs.get("content", ""))
        if not text:
            raise GrammarError("Type needs content='...'")
        return [("type", {"text": text}), ("press_key", {"key": "enter"})]
    if key == "hotkey":
        keys = kwargs.get("keys", [])
        return [keys_action("+".join(map(str, keys)) if isinstance(keys, list) else str(keys))]
    if key == "pressenter":
        return [("press_key", {"key": "enter"})]
    if key == "wait":
        return [("wait", {"ms": 3000})]
    if key == "finished":
        return [("finished", {"summary": str(kwargs.get("content") or "the task is done")})]
    if key == "calluser":
        return [("call_user", {"message": str(kwargs.get("content") or "")})]
    if key in _PHONE:
        raise GrammarError(f"{name} is a phone action; on this desktop click, type or Hotkey")
    raise GrammarError(f"unknown action {name!r}")


def parse_venus(text: str, point: Point) -> list[ToolCall]:
    """Tool calls from the ``<action>`` of a UI-Venus-1.5 reply (the whole reply if none)."""
    cleaned = clean_reply(text)
    found = _ACTION.findall(cleaned)
    out: list[ToolCall] = []
    for source in split_calls("\n".join(found) if found else cleaned):
        try:
            name, kwargs, _ = parse_call(source)
            out += to_calls(_action(name, kwargs, point))
        except (GrammarError, ValueError, TypeError) as exc:
            out += to_calls(str(exc))
    return out or to_calls("no action found; answer <action>Click(box=(x,y))</action>")
