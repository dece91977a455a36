"""Qwen's ``computer_use`` function tool: its definition and its actions as our tool calls.

The definition follows the computer-use cookbooks of QwenLM/Qwen2.5-VL and Qwen3-VL
(``ComputerUse`` in qwen-agent): one function ``computer_use`` with an ``action`` enum
and ``coordinate`` / ``keys`` / ``text`` / ``pixels`` / ``time`` / ``status`` arguments.
Served by vLLM with ``--tool-call-parser hermes``, the model's
``<tool_call>{"name": "computer_use", ...}</tool_call>`` arrives as a native tool call;
without a parser, in Qwen3.5's XML form, or inside the reasoning, the OpenAI adapter reads
it from the text (:mod:`jarvis.llm.served_calls`), where arguments may come as text:
``coordinate`` as ``"[x, y]"`` or ``"x, y"`` and ``keys`` as ``"ctrl+c"`` are read too.
"""

from __future__ import annotations

import re
from typing import Any

from jarvis.geometry import Size
from jarvis.llm.profiles.grammar_text import numbers
from jarvis.llm.profiles.grammars import GrammarError, Point
from jarvis.llm.types import ToolCall, ToolSpec

NAME = "computer_use"
ACTIONS = [
    "key",
    "type",
    "mouse_move",
    "left_click",
    "left_click_drag",
    "right_click",
    "double_click",
    "scroll",
    "wait",
    "terminate",
]


def tool_spec(resolution_note: str) -> ToolSpec:
    return ToolSpec(
        name=NAME,
        description=(
            "Use a mouse and keyboard to interact with a computer, and take screenshots.\n"
            "* This is an interface to a desktop GUI. You do not have access to a terminal.\n"
            f"* {resolution_note}\n"
            "* Click on the centre of elements; make sure the cursor tip is on the element.\n"
            "* Use action=terminate with status=success when the task is done."
        ),
        parameters={
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": ACTIONS},
                "keys": {"type": "array", "description": "Required only by action=key."},
                "text": {"type": "string", "description": "Required only by action=type."},
                "coordinate": {
                    "type": "array",
                    "description": "(x, y) for mouse_move, left_click, left_click_drag, "
                    "right_click, double_click.",
                },
                "pixels": {"type": "number", "description": "scroll amount: + up, - down"},
                "time": {"type": "number", "description": "seconds to wait"},
                "status": {"type": "string", "enum": ["success", "failure"]},
            },
            "required": ["action"],
        },
    )


def _xy(data: dict[str, Any], point: Point) -> tuple[int, int]:
    value = data.get("coordinate")
    if isinstance(value, str):  # a parameter the server's parser left as text
        value = numbers(value) or value
    if not isinstance(value, list | tuple) or len(value) not in (2, 4):
        raise GrammarError(f"coordinate must be [x, y], got {value!r}")
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        raise GrammarError(f"coordinate must hold numbers, got {value!r}")
    return point([float(v) for v in value])


_CLICKS = {
    "left_click": "click",
    "click": "click",
    "right_click": "right_click",
    "middle_click": "middle_click",
    "double_click": "double_click",
    "triple_click": "triple_click",
    "mouse_move": "mouse_move",
}
_ENDS = {"terminate", "stop", "done"}


def _key_list(data: dict[str, Any]) -> list[str]:
    given = data.get("keys") or data.get("key") or []
    if isinstance(given, str):  # "ctrl+c" or "ctrl c" as one text
        given = [k for k in re.split(r"[\s+]+", given.strip()) if k]
    keys = [str(k) for k in given]
    if not keys:
        raise GrammarError("key needs keys, e.g. ['ctrl', 'c']")
    return keys


def _scroll(data: dict[str, Any], point: Point, grid: Size, pos: list[int]) -> tuple[str, dict]:
    """``scroll`` (+ up) and GUI-Owl-1.5's ``hscroll`` (+ right, as pyautogui.hscroll)."""
    pixels = float(data.get("pixels", -3))
    x, y = (pos[0], pos[1]) if pos else (grid.width // 2, grid.height // 2)
    if data.get("coordinate") is not None:
        x, y = _xy(data, point)
    if data.get("action") == "hscroll":
        direction = "right" if pixels > 0 else "left"
    else:
        direction = "up" if pixels > 0 else "down"
    amount = max(1, min(50, round(abs(pixels))))
    return ("scroll", {"x": x, "y": y, "direction": direction, "amount": amount})


def _drag(data: dict[str, Any], point: Point, pos: list[int]) -> tuple[str, dict]:
    if not pos:
        raise GrammarError("left_click_drag starts at the cursor: mouse_move there first")
    ex, ey = _xy(data, point)
    start = list(pos)
    pos[:] = [ex, ey]  # the pointer ends where the drag ends
    return ("drag", {"startX": start[0], "startY": start[1], "endX": ex, "endY": ey})


def _map(data: dict[str, Any], point: Point, grid: Size, pos: list[int]) -> list[tuple[str, dict]]:
    """Our calls for one ``computer_use`` action. Beyond Qwen's cookbook: GUI-Owl-1.5's
    middle_click, triple_click, hscroll, answer and interact (X-PLUG/MobileAgent
    Mobile-Agent-v3.5/computer_use/utils.py and run_gui_owl_1_5_for_pc.py) and EvoCUA's
    key_down / key_up (meituan/EvoCUA mm_agents/evocua)."""
    action = str(data.get("action", ""))
    text = str(data.get("text") or "")
    if action in _CLICKS:
        x, y = _xy(data, point)
        pos[:] = [x, y]
        return [(_CLICKS[action], {"x": x, "y": y})]
    if action in ("left_click_drag", "drag"):
        return [_drag(data, point, pos)]
    if action in ("scroll", "hscroll"):
        return [_scroll(data, point, grid, pos)]
    if action == "type":
        return [("type", {"text": text})]
    if action in ("key", "hotkey"):
        keys = _key_list(data)
        if len(keys) == 1:
            return [("press_key", {"key": keys[0]})]
        return [("hotkey", {"keys": "+".join(keys)})]
    if action in ("key_down", "key_up"):
        return [(action, {"key": k}) for k in _key_list(data)]
    if action == "wait":
        return [("wait", {"ms": min(10_000, round(float(data.get("time", 2)) * 1000))})]
    if action == "answer":  # GUI-Owl-1.5: the answer ends the task
        return [("finished", {"summary": text or "the task is done"})]
    if action in ("interact", "call_user"):
        return [("call_user", {"message": text or "the model needs the user to act"})]
    if action in _ENDS:
        if data.get("status", "success") == "success":
            return [("finished", {"summary": text or "the task is done"})]
        return [("call_user", {"message": "the model ended the task as failed"})]
    raise GrammarError(f"computer_use action {action!r} is not supported; use one of {ACTIONS}")


def calls_from(calls: list[ToolCall], point: Point, grid: Size) -> list[ToolCall]:
    """Our tool calls for a reply's calls: ``computer_use`` ones mapped (with ``origin``
    kept, so the history goes back as the call the model made), the others unchanged."""
    out: list[ToolCall] = []
    pos: list[int] = []
    for call in calls:
        if call.name != NAME or call.parse_error:
            out.append(call)
            continue
        origin = {"id": call.id, "name": NAME, "input": call.arguments}
        try:
            mapped = _map(call.arguments, point, grid, pos)
        except (GrammarError, TypeError, ValueError) as exc:
            out.append(
                ToolCall(
                    id=call.id,
                    name=NAME,
                    arguments=call.arguments,
                    parse_error=str(exc),
                    origin=origin,
                )
            )
            continue
        out += [
            ToolCall(
                id=call.id if len(mapped) == 1 else f"{call.id}_{i + 1}",
                name=n,
                arguments=a,
                origin=origin,
            )
            for i, (n, a) in enumerate(mapped)
        ]
    return out
