"""Action grammars of open GUI models, parsed into Jarvis's tool calls.

- ``uitars``: UI-TARS-1.5's ``Thought: ...`` / ``Action: click(start_box='(x,y)')`` text
  (bytedance/UI-TARS ``codes/ui_tars/prompt.py`` COMPUTER_USE action space);
- ``glm``: GLM-4.5V's calls with coordinates inside ``<|begin_of_box|>...<|end_of_box|>``
  (zai-org/GLM-V README), e.g. ``left_click(start_box='[x,y]')``; a bare box means a click;
- ``pyautogui``: OpenCUA's ``pyautogui.click(x=.., y=..)`` code and ``computer.terminate``
  (xlang-ai/OpenCUA README);
- ``qwen-computer-use``: the ``computer_use`` function of Qwen's computer-use cookbook
  (``{"action": "left_click", "coordinate": [x, y]}``), which vLLM's hermes parser turns
  into native tool calls.

What serving stacks do to the text is undone first (:func:`clean_reply`): reasoning
(``<think>...</think>``, or a reply that starts inside it and only closes it) is dropped,
so a call written while thinking never runs; full-width punctuation outside quotes
(``Action：``, ``（x，y）``) reads as ASCII; GLM's box tokens may be stripped (vLLM's
default ``skip_special_tokens``), and then the calls are read from the answer itself.

Calls are read with :mod:`ast` (never evaluated). Every point goes through
:func:`jarvis.geometry.to_tool_point` via the ``Point`` mapper given in, so the
calls carry points on the profile's tool grid. An action that cannot be run becomes a
call with ``parse_error`` set, which the agent reports back to the model.
"""

from __future__ import annotations

import ast
import re
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from jarvis.llm.profiles.points import point_numbers
from jarvis.llm.types import ToolCall

Point = Callable[[Sequence[float]], tuple[int, int]]
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_BOX = re.compile(r"<\|begin_of_box\|>(.*?)<\|end_of_box\|>", re.S)
_ACTION = re.compile(r"^\s*Action\s*:\s*", re.M)
_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.S)
_ANSWER = re.compile(r"<answer>(.*?)(?:</answer>|$)", re.S)
_FULL_WIDTH = str.maketrans({"（": "(", "）": ")", "，": ",", "：": ":", "［": "[", "］": "]"})


def strip_reasoning(text: str) -> str:
    """The reply without its reasoning: ``<think>...</think>`` blocks, and everything up to
    a ``</think>`` that no ``<think>`` opened (chat templates that open it in the prompt)."""
    close = text.find("</think>")
    if close >= 0 and "<think>" not in text[:close]:
        text = text[close + len("</think>") :]
    return _THINK.sub("", text)


def ascii_punctuation(text: str) -> str:
    """Full-width brackets, commas and colons outside quoted strings as ASCII ones."""
    out: list[str] = []
    quote = ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = ""
            out.append(ch)
        elif ch in "'\"":
            quote = ch
            out.append(ch)
        else:
            out.append(ch.translate(_FULL_WIDTH))
    return "".join(out)


def clean_reply(text: str) -> str:
    return ascii_punctuation(strip_reasoning(text))


class GrammarError(ValueError):
    pass


def _id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"


def numbers(text: str) -> list[float]:
    """The numbers in a point string: "(x,y)", "[x1,y1,x2,y2]", "<point>x y</point>"."""
    return [float(n) for n in _NUMBER.findall(text)]


def _point_of(value: Any, point: Point, what: str) -> tuple[int, int]:
    if isinstance(value, str):
        nums = numbers(value)
    elif isinstance(value, list | tuple):
        nums = [float(v) for v in value]
    else:
        raise GrammarError(f"{what} must be a point like '(x,y)', got {value!r}")
    if len(nums) not in (2, 4):
        raise GrammarError(f"{what} must be a point (x,y) or a box (x1,y1,x2,y2), got {value!r}")
    return point(nums)


def _keys(text: str) -> tuple[str, dict[str, Any]]:
    parts = [k for k in re.split(r"[\s+]+", text.strip()) if k]
    if not parts:
        raise GrammarError("a key action needs a key, e.g. 'enter' or 'ctrl c'")
    if len(parts) == 1:
        return "press_key", {"key": parts[0]}
    return "hotkey", {"keys": "+".join(parts)}


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
        x, y = _point_of(box, point, "start_box")
        return [(_CLICKS[key], {"x": x, "y": y})]
    if key in ("drag", "left_drag", "select"):
        sx, sy = _point_of(box, point, "start_box")
        ex, ey = _point_of(kwargs.get("end_box", kwargs.get("end_point")), point, "end_box")
        return [("drag", {"startX": sx, "startY": sy, "endX": ex, "endY": ey})]
    if key == "scroll":
        x, y = _point_of(box, point, "start_box")
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
        return [_keys(str(kwargs.get("key", kwargs.get("keys", ""))))]
    if key == "wait":
        return [("wait", {"ms": 5000})]  # UI-TARS: "Sleep for 5s and take a screenshot"
    if key in ("finished", "done"):
        summary = str(kwargs.get("content", "")).strip() or "the task is done"
        return [("finished", {"summary": summary})]
    if key in ("call_user", "fail"):
        message = str(kwargs.get("content", "")).strip() or "the model needs the user's help"
        return [("call_user", {"message": message})]
    raise GrammarError(f"unknown action {name!r}")


def _parse_call(source: str) -> tuple[str, dict[str, Any], list[Any]]:
    """(name, keyword arguments, positional arguments) of one call written as code."""
    try:
        node = ast.parse(source.strip(), mode="eval").body
    except SyntaxError as exc:
        raise GrammarError(f"not a call: {source.strip()[:120]!r} ({exc.msg})") from exc
    if not isinstance(node, ast.Call):
        raise GrammarError(f"not a call: {source.strip()[:120]!r}")
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    try:
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
        args = [ast.literal_eval(a) for a in node.args]
    except ValueError as exc:
        raise GrammarError(f"arguments must be literals: {source.strip()[:120]!r}") from exc
    return name, kwargs, args


def _to_calls(actions: list[tuple[str, dict]] | str) -> list[ToolCall]:
    if isinstance(actions, str):
        return [ToolCall(id=_id(), name="unknown", parse_error=actions)]
    return [ToolCall(id=_id(), name=n, arguments=a) for n, a in actions]


def _split_calls(text: str) -> list[str]:
    """Top-level calls in an action text (several may follow each other)."""
    calls: list[str] = []
    depth, start, quote = 0, None, ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = ""
            continue
        if ch in "'\"" and depth:
            quote = ch
        elif ch == "(":
            if depth == 0:
                m = re.search(r"[A-Za-z_][\w.]*\s*$", text[:i])
                start = m.start() if m else i
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
            if depth == 0 and start is not None:
                calls.append(text[start : i + 1])
                start = None
    return calls


def parse_uitars(text: str, point: Point) -> list[ToolCall]:
    """Tool calls from a UI-TARS reply (the text after the last ``Action:``; ``Thought:``,
    ``Reflection:`` and ``Action_Summary:`` before it are the model's notes)."""
    text = clean_reply(text)
    found = list(_ACTION.finditer(text))
    if not found:
        return _to_calls(
            "the reply has no 'Action:' line; answer 'Thought: ...' then 'Action: ...'"
        )
    out: list[ToolCall] = []
    for source in _split_calls(text[found[-1].end() :]):
        try:
            name, kwargs, _ = _parse_call(source)
            out += _to_calls(call_action(name, kwargs, point))
        except (GrammarError, ValueError) as exc:
            out += _to_calls(str(exc))
    return out or _to_calls("the Action line holds no call")


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
        return [c for c in _split_calls(body[starts[0] :]) if _GLM_ACTIONS.match(c)]
    bare = re.search(r"\[\[?\s*-?\d[^\[\]]*\]\]?", body)
    return [bare.group(0)] if bare else []


def parse_glm(text: str, point: Point) -> list[ToolCall]:
    """Tool calls from a GLM-4.5V reply: calls (or a bare box) inside box tokens, or the
    same without the tokens (vLLM strips special tokens by default)."""
    out: list[ToolCall] = []
    for inner in _glm_parts(clean_reply(text)):
        try:
            if inner.startswith("["):
                x, y = _point_of(inner, point, "box")
                out += _to_calls([("click", {"x": x, "y": y})])
                continue
            for source in _split_calls(inner) or [inner]:
                name, kwargs, args = _parse_call(source)
                if args and "start_box" not in kwargs:
                    kwargs["start_box"] = args[0]
                out += _to_calls(call_action(name, kwargs, point))
        except (GrammarError, ValueError) as exc:
            out += _to_calls(str(exc))
    return out or _to_calls(
        "no action found: write it inside <|begin_of_box|>...<|end_of_box|>, "
        "e.g. left_click(start_box='[x,y]')"
    )


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
        return [_keys(str(kwargs.get("keys", args[0] if args else "")))]
    if key == "hotkey":
        return [_keys(" ".join(str(a) for a in args))]
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
    for source in _split_calls(code):
        if not source.startswith(("pyautogui.", "computer.")):
            continue
        try:
            name, kwargs, args = _parse_call(source)
            out += _to_calls(_pyautogui_action(name, kwargs, args, point, pos))
        except (GrammarError, ValueError) as exc:
            out += _to_calls(str(exc))
    return out or _to_calls("no pyautogui call found in the reply")


def parse_point(text: str, point: Point) -> list[ToolCall]:
    """A grounding model's answer (one point or box, see :mod:`.points`) as a click."""
    values = point_numbers(clean_reply(text))
    if values is None:
        return _to_calls("no point found in the reply; answer one point such as (x,y)")
    try:
        x, y = point(values)
    except ValueError as exc:
        return _to_calls(str(exc))
    return _to_calls([("click", {"x": x, "y": y})])


TEXT_GRAMMARS: dict[str, Callable[[str, Point], list[ToolCall]]] = {
    "uitars": parse_uitars,
    "glm": parse_glm,
    "pyautogui": parse_pyautogui,
    "point": parse_point,
}
