"""The action grammars of UI-TARS and GLM-4.5V, parsed into Jarvis's tool calls.

- ``uitars``: UI-TARS-1.5's ``Thought: ...`` / ``Action: click(start_box='(x,y)')`` text
  (bytedance/UI-TARS ``codes/ui_tars/prompt.py`` COMPUTER_USE action space);
- ``glm``: GLM-4.5V's calls with coordinates inside ``<|begin_of_box|>...<|end_of_box|>``
  (zai-org/GLM-V README), e.g. ``left_click(start_box='[x,y]')``; a bare box means a click;
  the box tokens may be stripped (vLLM's default ``skip_special_tokens``), and then the
  calls are read from the answer itself.

Every point goes through the ``Point`` mapper given in (the profile's
:func:`jarvis.geometry.to_tool_point`), so the calls carry points on the tool grid.
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
    point_of,
    split_calls,
    to_calls,
)
from jarvis.llm.types import ToolCall

_BOX = re.compile(r"<\|begin_of_box\|>(.*?)<\|end_of_box\|>", re.S)
_ACTION = re.compile(r"^\s*Action\s*:\s*", re.M)
_ANSWER = re.compile(r"<answer>(.*?)(?:</answer>|$)", re.S)

_CLICKS = {
    "click": "click",
    "left_click": "click",
    "left_single": "click",
    "left_double": "double_click",
    "double_click": "double_click",
    "right_single": "right_click",
    "right_click": "right_click",
    "hover": "mouse_move",
    "mouse_move": "mouse_move",
    "moveto": "mouse_move",
}


def call_action(name: str, kwargs: dict[str, Any], point: Point) -> list[tuple[str, dict]]:
    """(tool, arguments) for one action of the UI-TARS / GLM vocabulary."""
    key = name.lower()
    box = kwargs.get("start_box", kwargs.get("point", kwargs.get("box")))
    if key in _CLICKS:
        x, y = point_of(box, point, "start_box")
        return [(_CLICKS[key], {"x": x, "y": y})]
    if key in ("drag", "left_drag", "select"):
        sx, sy = point_of(box, point, "start_box")
        ex, ey = point_of(kwargs.get("end_box", kwargs.get("end_point")), point, "end_box")
        return [("drag", {"startX": sx, "startY": sy, "endX": ex, "endY": ey})]
    if key == "scroll":
        x, y = point_of(box, point, "start_box")
        direction = str(kwargs.get("direction", "down")).strip().lower()
        return [("scroll", {"x": x, "y": y, "direction": direction})]
    if key in ("type", "input"):
        text = str(kwargs.get("content", kwargs.get("text", "")))
        submit = text.endswith("\n")
        calls: list[tuple[str, dict]] = []
        if text.rstrip("\n"):
            calls.append(("type", {"text": text.rstrip("\n")}))
        if submit:
            calls.append(("press_key", {"key": "enter"}))
        if not calls:
            raise GrammarError("type needs content")
        return calls
    if key in ("hotkey", "key", "press"):
        return [keys_action(str(kwargs.get("key", kwargs.get("keys", ""))))]
    if key == "wait":
        return [("wait", {"ms": 5000})]  # UI-TARS: "Sleep for 5s and take a screenshot"
    if key in ("finished", "done"):
        summary = str(kwargs.get("content", "")).strip() or "the task is done"
        return [("finished", {"summary": summary})]
    if key in ("call_user", "fail"):
        message = str(kwargs.get("content", "")).strip() or "the model needs the user's help"
        return [("call_user", {"message": message})]
    raise GrammarError(f"unknown action {name!r}")


def parse_uitars(text: str, point: Point) -> list[ToolCall]:
    """Tool calls from a UI-TARS reply (the text after the last ``Action:``; ``Thought:``,
    ``Reflection:`` and ``Action_Summary:`` before it are the model's notes)."""
    text = clean_reply(text)
    found = list(_ACTION.finditer(text))
    if not found:
        return to_calls("the reply has no 'Action:' line; answer 'Thought: ...' then 'Action: ...'")
    out: list[ToolCall] = []
    for source in split_calls(text[found[-1].end() :]):
        try:
            name, kwargs, _ = parse_call(source)
            out += to_calls(call_action(name, kwargs, point))
        except (GrammarError, ValueError) as exc:
            out += to_calls(str(exc))
    return out or to_calls("the Action line holds no call")


_GLM_ACTIONS = re.compile(
    r"\b(?:left_click|right_click|left_double|double_click|click|hover|left_drag|drag|"
    r"scroll|type|key|hotkey|wait|done|finished|fail|call_user)\s*\(",
)


def _glm_parts(text: str) -> list[str]:
    """The action texts of a GLM reply: inside box tokens, or, with the tokens stripped by
    the server, the calls (or a bare ``[x,y]`` box) of the answer."""
    boxed = _BOX.findall(text)
    if boxed:
        return [b.strip() for b in boxed]
    answer = _ANSWER.findall(text)
    body = "\n".join(answer) if answer else text
    starts = [m.start() for m in _GLM_ACTIONS.finditer(body)]
    if starts:
        return [c for c in split_calls(body[starts[0] :]) if _GLM_ACTIONS.match(c)]
    bare = re.search(r"\[\[?\s*-?\d[^\[\]]*\]\]?", body)
    return [bare.group(0)] if bare else []


def parse_glm(text: str, point: Point) -> list[ToolCall]:
    """Tool calls from a GLM-4.5V reply: calls (or a bare box) inside box tokens, or the
    same without the tokens (vLLM strips special tokens by default)."""
    out: list[ToolCall] = []
    for inner in _glm_parts(clean_reply(text)):
        try:
            if inner.startswith("["):
                x, y = point_of(inner, point, "box")
                out += to_calls([("click", {"x": x, "y": y})])
                continue
            for source in split_calls(inner) or [inner]:
                name, kwargs, args = parse_call(source)
                if args and "start_box" not in kwargs:
                    kwargs["start_box"] = args[0]
                out += to_calls(call_action(name, kwargs, point))
        except (GrammarError, ValueError) as exc:
            out += to_calls(str(exc))
    return out or to_calls(
        "no action found: write it inside <|begin_of_box|>...<|end_of_box|>, "
        "e.g. left_click(start_box='[x,y]')"
    )
