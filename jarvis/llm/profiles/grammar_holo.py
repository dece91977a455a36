"""Holo3's and Holo3.1's agent step: one JSON object, parsed into Jarvis's tool calls.

H Company's agent-loop contract (hub.hcompany.ai/agent-loop, "Output JSON"): each step is
``{"note": ..., "thought": ..., "tool_call": {"tool_name": "click", "element": ..., "x": 932,
"y": 880}}``; ``tool_call`` is flat (the tool's name is a sibling of its arguments) and points
are integers in [0, 1000] of the image sent. The toolbox is the harness's own (the model is
shown its schema in an ``<output_format>`` block): Jarvis's is ``prompts/grammar_holo.md``,
whose tool names and fields this module reads. Holo1's ``{"action": "click_element", ...}``
shape is read too.
"""

from __future__ import annotations

import json
import re
from typing import Any

from jarvis.llm.profiles.grammar_text import GrammarError, Point, clean_reply, keys_action, to_calls
from jarvis.llm.types import ToolCall

Action = tuple[str, dict[str, Any]]
_POINT_TOOLS = {
    "click": "click",
    "click_element": "click",
    "left_click": "click",
    "double_click": "double_click",
    "triple_click": "triple_click",
    "right_click": "right_click",
    "hover": "mouse_move",
    "mouse_move": "mouse_move",
}
_DIRECTIONS = ("up", "down", "left", "right")


def _objects(text: str) -> list[dict[str, Any]]:
    """The JSON objects in ``text``, outermost first (fences and prose around are ignored)."""
    found: list[dict[str, Any]] = []
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def _step(text: str) -> dict[str, Any]:
    for obj in _objects(text):
        call = obj.get("tool_call", obj.get("action"))
        if isinstance(call, dict):
            return call
        if isinstance(call, str) or "tool_name" in obj:  # a flat step
            return obj
    raise GrammarError(
        'no step found; answer one JSON object {"note": ..., "thought": ..., "tool_call": '
        '{"tool_name": ..., ...}} as the output format says'
    )


def _xy(call: dict[str, Any], point: Point, kx: str = "x", ky: str = "y") -> tuple[int, int]:
    if call.get(kx) is None or call.get(ky) is None:
        raise GrammarError(f"{call.get('tool_name', 'the tool')} needs {kx} and {ky} (0..1000)")
    return point([float(call[kx]), float(call[ky])])


def _text(call: dict[str, Any], *names: str) -> str:
    for name in names:
        if call.get(name) not in (None, ""):
            return str(call[name])
    return ""


def _keys(call: dict[str, Any]) -> Action:
    keys = call.get("keys", call.get("key"))
    if isinstance(keys, list | tuple):
        keys = "+".join(str(k) for k in keys)
    return keys_action(str(keys or ""))


def _scroll(call: dict[str, Any], point: Point) -> Action:
    direction = str(call.get("direction", "down")).lower()
    if direction not in _DIRECTIONS:
        raise GrammarError(f"scroll direction must be one of {', '.join(_DIRECTIONS)}")
    x, y = _xy(call, point) if call.get("x") is not None else point([500.0, 500.0])
    amount = max(1, min(50, int(call.get("amount", 3))))
    return "scroll", {"x": x, "y": y, "direction": direction, "amount": amount}


def _action(call: dict[str, Any], point: Point) -> list[Action]:
    name = str(call.get("tool_name", call.get("action", ""))).lower()
    if name in _POINT_TOOLS:
        x, y = _xy(call, point)
        return [(_POINT_TOOLS[name], {"x": x, "y": y})]
    if name == "drag":
        sx, sy = _xy(call, point, "start_x", "start_y")
        ex, ey = _xy(call, point, "end_x", "end_y")
        return [("drag", {"startX": sx, "startY": sy, "endX": ex, "endY": ey})]
    if name in ("write", "type", "type_and_enter", "write_element"):
        text = _text(call, "content", "text")
        if not text:
            raise GrammarError(f"{name} needs content")
        typed: list[Action] = [("type", {"text": text})]
        enter = name == "type_and_enter" or call.get("press_enter") is True
        return typed + [("press_key", {"key": "enter"})] * enter
    if name in ("press", "press_key", "key", "hotkey"):
        return [_keys(call)]
    if name == "scroll":
        return [_scroll(call, point)]
    if name == "wait":
        return [("wait", {"ms": round(min(10.0, float(call.get("seconds", 2))) * 1000)})]
    if name == "answer":
        return [("finished", {"summary": _text(call, "content", "answer") or "done"})]
    if name in ("ask_user", "call_user"):
        return [("call_user", {"message": _text(call, "content", "question", "message")})]
    raise GrammarError(f"unknown tool_name {name!r}; use one of the tools in the output format")


def parse_holo(text: str, point: Point) -> list[ToolCall]:
    """The tool call of a Holo3 step (its ``note`` and ``thought`` stay in the history)."""
    try:
        return to_calls(_action(_step(clean_reply(text)), point))
    except (GrammarError, ValueError, TypeError) as exc:
        return to_calls(str(exc))
