"""The action grammars of UI-TARS and GLM-4.5V, parsed into Jarvis's tool calls.

- ``uitars``: UI-TARS-1.5's and Doubao's ``Thought: ...`` / ``Action: click(start_box='(x,y)')``
  text (bytedance/UI-TARS ``codes/ui_tars/prompt.py``), read as ByteDance's own parser
  (``codes/ui_tars/action_parser.py``, pip ``ui-tars``) and executors (its
  ``parsing_response_to_pyautogui_code``, UI-TARS-desktop's nut-js operator) read it:
  points as ``'(x,y)'``, ``'<point>x y</point>'``, ``'<bbox>x1 y1 x2 y2</bbox>'`` or
  ``'[x1,y1,x2,y2]'`` under ``start_box``/``point``/``start_point`` and ``end_box``/
  ``end_point``; ``press``/``keydown`` hold a key down until ``release``/``keyup``; a
  ``scroll`` without a point scrolls where the pointer is; each trailing ``\n`` of a
  ``type`` text is one Enter;
- ``glm``: GLM-4.5V's calls with coordinates inside ``<|begin_of_box|>...<|end_of_box|>``
  (zai-org/GLM-V README and ``examples/gui-agent/glm-45v/agent.md``: left/right/middle_click,
  hover, left_double_click, left_drag, key, type, scroll, WAIT, DONE, FAIL), e.g.
  ``left_click(start_box='[x,y]')``; a bare box means a click;
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
    keys_action,
    parse_call,
    point_of,
    read_calls,
    strip_reasoning,
    to_calls,
)
from jarvis.llm.types import ToolCall

_BOX = re.compile(r"<\|begin_of_box\|>(.*?)<\|end_of_box\|>", re.S)
_ACTION = re.compile(r"^\s*Action\s*[:：]\s*", re.M)
_ANSWER = re.compile(r"<answer>(.*?)(?:</answer>|$)", re.S)
SCROLL_CLICKS = 5  # ByteDance's executor: pyautogui.scroll(±5); GLM's scroll step defaults to 5

_CLICKS = {
    "click": "click",
    "left_click": "click",
    "left_single": "click",
    "left_double": "double_click",
    "left_double_click": "double_click",
    "double_click": "double_click",
    "right_single": "right_click",
    "right_click": "right_click",
    "middle_click": "middle_click",
    "hover": "mouse_move",
    "mouse_move": "mouse_move",
    "moveto": "mouse_move",
}
_HOLD = {"press": "key_down", "keydown": "key_down", "release": "key_up", "keyup": "key_up"}


def _start(kwargs: dict[str, Any]) -> Any:
    for name in ("start_box", "point", "start_point", "box"):
        if kwargs.get(name) not in (None, ""):
            return kwargs[name]
    return None


def _end(kwargs: dict[str, Any]) -> Any:
    return kwargs.get("end_box", kwargs.get("end_point"))


def _scroll(kwargs: dict[str, Any], point: Point) -> list[tuple[str, dict]]:
    """A scroll at its point, or with none where the pointer is (as ByteDance's executor:
    ``pyautogui.scroll(-5)`` with no x, y)."""
    direction = str(kwargs.get("direction", "down")).strip().lower()
    step = kwargs.get("step", SCROLL_CLICKS)
    args: dict[str, Any] = {"direction": direction}
    args["amount"] = step if isinstance(step, int) and step > 0 else SCROLL_CLICKS
    box = _start(kwargs)
    if box is None:
        return [("scroll_here", args)]
    args["x"], args["y"] = point_of(box, point, "start_box")
    return [("scroll", args)]


def _type(kwargs: dict[str, Any]) -> list[tuple[str, dict]]:
    """The text, then one Enter for each trailing line break (UI-TARS: a text ending in
    ``\\n`` is submitted; UI-TARS-desktop types all but the last and presses Enter)."""
    text = str(kwargs.get("content", kwargs.get("text", "")))
    body = text.rstrip("\n")
    calls: list[tuple[str, dict]] = [("type", {"text": body})] if body else []
    calls += [("press_key", {"key": "enter"})] * (len(text) - len(body))
    if not calls:
        raise GrammarError("type needs content")
    return calls


def _hold(name: str, kwargs: dict[str, Any]) -> list[tuple[str, dict]]:
    """Keys held down (``press``, ``keydown``) or let go (``release``, ``keyup``): as
    ByteDance's executors, ``keyDown`` / ``keyUp`` of each key named."""
    text = str(kwargs.get("key", kwargs.get("keys", kwargs.get("press", ""))))
    keys = [k for k in re.split(r"[\s+]+", text.strip()) if k]
    if not keys:
        raise GrammarError(f"{name} needs a key, e.g. {name}(key='shift')")
    tool = _HOLD[name]
    return [(tool, {"key": k}) for k in (keys if tool == "key_down" else reversed(keys))]


def _ending(key: str, kwargs: dict[str, Any]) -> list[tuple[str, dict]]:
    content = str(kwargs.get("content", "")).strip()
    if key in ("finished", "done"):
        return [("finished", {"summary": content or "the task is done"})]
    return [("call_user", {"message": content or "the model needs the user's help"})]


def call_action(name: str, kwargs: dict[str, Any], point: Point) -> list[tuple[str, dict]]:
    """(tool, arguments) for one action of the UI-TARS / GLM vocabulary."""
    key = name.lower()
    if key in _CLICKS:
        x, y = point_of(_start(kwargs), point, "start_box")
        return [(_CLICKS[key], {"x": x, "y": y})]
    if key in ("drag", "left_drag", "select"):
        sx, sy = point_of(_start(kwargs), point, "start_box")
        ex, ey = point_of(_end(kwargs), point, "end_box")
        return [("drag", {"startX": sx, "startY": sy, "endX": ex, "endY": ey})]
    if key == "scroll":
        return _scroll(kwargs, point)
    if key in ("type", "input"):
        return _type(kwargs)
    if key in ("hotkey", "key"):
        return [keys_action(str(kwargs.get("key", kwargs.get("keys", kwargs.get("hotkey", "")))))]
    if key in _HOLD:
        return _hold(key, kwargs)
    if key == "wait":
        return [("wait", {"ms": 5000})]  # UI-TARS: "Sleep for 5s and take a screenshot"
    if key in ("finished", "done", "call_user", "fail"):
        return _ending(key, kwargs)
    raise GrammarError(f"unknown action {name!r}")


def _calls(sources: list[str], point: Point) -> list[ToolCall]:
    out: list[ToolCall] = []
    for source in sources:
        try:
            name, kwargs, args = parse_call(source)
            if args and _start(kwargs) is None:
                kwargs["start_box"] = args[0]
            out += to_calls(call_action(name, kwargs, point))
        except (GrammarError, ValueError) as exc:
            out += to_calls(str(exc))
    return out


def parse_uitars(text: str, point: Point) -> list[ToolCall]:
    """Tool calls from a UI-TARS reply: the calls after the last ``Action:``. ``Thought:``,
    ``Reflection:`` and ``Action_Summary:`` before it are the model's notes, never read
    for calls nor repaired (an apostrophe there changes nothing in the action)."""
    text = strip_reasoning(text)
    found = list(_ACTION.finditer(text))
    if not found:
        return to_calls("the reply has no 'Action:' line; answer 'Thought: ...' then 'Action: ...'")
    return _calls(read_calls(text[found[-1].end() :]), point) or to_calls(
        "the Action line holds no call"
    )


_GLM_ACTIONS = re.compile(
    r"\b(?:left_click|right_click|middle_click|left_double_click|left_double|double_click|"
    r"click|hover|left_drag|drag|scroll|type|key|hotkey|wait|done|finished|fail|call_user)"
    r"\s*[(（]",
    re.I,
)


def _glm_parts(text: str) -> list[str]:
    """The action texts of a GLM reply: inside box tokens, or, with the tokens stripped by
    the server, the calls (or a bare ``[x,y]`` box) of the answer."""
    boxed = _BOX.findall(text)
    if boxed:
        return [b.strip() for b in boxed]
    answer = _ANSWER.findall(text)
    body = "\n".join(answer) if answer else text
    start = _GLM_ACTIONS.search(body)
    if start:
        return [c for c in read_calls(body[start.start() :]) if _GLM_ACTIONS.match(c)]
    bare = re.search(r"\[\[?\s*-?\d[^\[\]]*\]\]?", body)
    return [bare.group(0)] if bare else []


def parse_glm(text: str, point: Point) -> list[ToolCall]:
    """Tool calls from a GLM-4.5V reply: calls (or a bare box) inside box tokens, or the
    same without the tokens (vLLM strips special tokens by default)."""
    out: list[ToolCall] = []
    for inner in _glm_parts(strip_reasoning(text)):
        if inner.startswith("["):
            try:
                x, y = point_of(inner, point, "box")
                out += to_calls([("click", {"x": x, "y": y})])
            except (GrammarError, ValueError) as exc:
                out += to_calls(str(exc))
            continue
        out += _calls(read_calls(inner) or [inner], point)
    return out or to_calls(
        "no action found: write it inside <|begin_of_box|>...<|end_of_box|>, "
        "e.g. left_click(start_box='[x,y]')"
    )
