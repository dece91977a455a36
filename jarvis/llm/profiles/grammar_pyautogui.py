"""OpenCUA's and Aguvis's ``pyautogui.click(x=.., y=..)`` code and ``computer.terminate``
(xlang-ai/OpenCUA README), parsed into Jarvis's tool calls."""

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


def _pyautogui_action(
    name: str, kwargs: dict[str, Any], args: list[Any], point: Point, pos: list[int]
) -> list[tuple[str, dict]]:
    def xy() -> tuple[int, int]:
        x, y = (
            kwargs.get("x", args[0] if args else None),
            kwargs.get("y", args[1] if len(args) > 1 else None),
        )
        if x is None or y is None:
            if pos:
                return pos[0], pos[1]
            raise GrammarError(f"{name} needs x and y")
        p = point([float(x), float(y)])
        pos[:] = [p[0], p[1]]
        return p

    key = name.lower()
    if key in ("click", "leftclick"):
        x, y = xy()
        return [("double_click" if kwargs.get("clicks", 1) == 2 else "click", {"x": x, "y": y})]
    if key == "doubleclick":
        x, y = xy()
        return [("double_click", {"x": x, "y": y})]
    if key == "rightclick":
        x, y = xy()
        return [("right_click", {"x": x, "y": y})]
    if key == "moveto":
        x, y = xy()
        return [("mouse_move", {"x": x, "y": y})]
    if key == "dragto":
        if not pos:
            raise GrammarError("dragTo needs a moveTo before it")
        sx, sy = pos
        ex, ey = xy()
        return [("drag", {"startX": sx, "startY": sy, "endX": ex, "endY": ey})]
    if key in ("write", "typewrite"):
        text = str(kwargs.get("message", args[0] if args else ""))
        if not text:
            raise GrammarError("write needs a message")
        return [("type", {"text": text})]
    if key == "press":
        return [keys_action(str(kwargs.get("keys", args[0] if args else "")))]
    if key == "hotkey":
        return [keys_action(" ".join(str(a) for a in args))]
    if key in ("scroll", "vscroll"):
        amount = int(kwargs.get("clicks", args[0] if args else -3))
        x, y = xy() if ("x" in kwargs or len(args) >= 3) or pos else (0, 0)
        direction = "up" if amount > 0 else "down"
        return [("scroll", {"x": x, "y": y, "direction": direction, "amount": abs(amount) or 1})]
    if key == "wait":
        return [("wait", {"ms": round(float(kwargs.get("seconds", 3)) * 1000)})]
    if key == "terminate":
        status = str(kwargs.get("status", "success"))
        if status == "success":
            return [("finished", {"summary": "the task is done"})]
        return [("call_user", {"message": "the model could not finish the task"})]
    raise GrammarError(f"unsupported call {name!r}")


def parse_pyautogui(text: str, point: Point) -> list[ToolCall]:
    """Tool calls from OpenCUA's pyautogui code (in a ```python fence or bare)."""
    text = clean_reply(text)
    fenced = re.findall(r"```(?:python)?\s*\n(.*?)```", text, re.S)
    code = "\n".join(fenced) if fenced else text
    out: list[ToolCall] = []
    pos: list[int] = []
    for source in split_calls(code):
        if not source.startswith(("pyautogui.", "computer.")):
            continue
        try:
            name, kwargs, args = parse_call(source)
            out += to_calls(_pyautogui_action(name, kwargs, args, point, pos))
        except (GrammarError, ValueError) as exc:
            out += to_calls(str(exc))
    return out or to_calls("no pyautogui call found in the reply")
