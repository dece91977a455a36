"""OpenCUA's, Aguvis's and EvoCUA's pyautogui code, parsed into Jarvis's tool calls.

The vocabulary is what their training data and prompts write (xlang-ai/OpenCUA
``data/data-process/src/schema/action.py`` and ``evaluation/agentnetbench/agent/opencua.py``,
xlang-ai/aguvis, meituan/EvoCUA ``mm_agents/evocua/prompts.py``):

- pointer: ``click``/``leftClick`` (``clicks=``, ``button=``), ``doubleClick``,
  ``tripleClick`` and ``computer.triple_click``, ``rightClick``, ``moveTo``, ``dragTo``
  (from where the pointer is), ``mouseDown`` ... ``mouseUp`` (a drag);
- keys: ``press``/``hotkey`` with one key, varargs, a list, or ``keys=[...]``
  (``press(keys=['enter'])`` presses enter; a list given to ``press`` is pressed key by
  key, as pyautogui does), ``keyDown``/``keyUp`` around keys (a chord), ``write`` and
  ``typewrite``;
- ``scroll``/``vscroll`` (+ up) and ``hscroll`` (+ right), with or without a point;
- ``computer.wait(seconds=)``, ``time.sleep``, ``answer('...')`` and
  ``computer.terminate(status=..., answer=...)``.

A point missing from a pointer call is where the previous call of the same reply left
the pointer. Anything that cannot be run becomes a call with ``parse_error`` set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
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
MAX_WAIT_S = 10.0
MAX_SCROLL = 50
_CLICK_TOOLS = {1: "click", 2: "double_click", 3: "triple_click"}
_CLICKS = {"click": 1, "leftclick": 1, "doubleclick": 2, "tripleclick": 3, "triple_click": 3}
_PREFIXES = ("pyautogui.", "computer.", "time.sleep", "answer(")


@dataclass
class _State:
    """What one reply's calls share: the pointer, held keys and button, the answer."""

    point: Point
    pos: list[int] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    down: list[int] | None = None
    chorded: bool = False
    answer: str = ""
    ended: bool = False


def _arg(
    kwargs: dict[str, Any], args: list[Any], name: str, index: int, default: Any = None
) -> Any:
    if name in kwargs:
        return kwargs[name]
    return args[index] if len(args) > index else default


def _xy(
    st: _State, name: str, kwargs: dict[str, Any], args: list[Any], first: int = 0
) -> tuple[int, int]:
    """The call's point on the tool grid, or where the pointer is."""
    x, y = _arg(kwargs, args, "x", first), _arg(kwargs, args, "y", first + 1)
    if isinstance(x, list | tuple) and len(x) == 2 and y is None:
        x, y = x
    if x is None or y is None:
        if st.pos:
            return st.pos[0], st.pos[1]
        raise GrammarError(f"{name} needs x and y (no earlier call placed the pointer)")
    p = st.point([float(x), float(y)])
    st.pos[:] = [p[0], p[1]]
    return p


def _key_list(kwargs: dict[str, Any], args: list[Any]) -> list[str]:
    """Keys given as varargs, one list, a ``keys=`` list, or one string."""
    raw: list[Any] = []
    for value in [*args, kwargs.get("keys"), kwargs.get("key")]:
        if isinstance(value, list | tuple):
            raw.extend(value)
        elif value is not None:
            raw.append(value)
    keys = [str(k).strip() for k in raw if str(k).strip()]
    if not keys:
        raise GrammarError("a key action needs a key, e.g. press('enter') or hotkey('ctrl', 'c')")
    return keys


def _chord(st: _State, keys: list[str]) -> Action:
    """``keys`` pressed together, with any keys held by keyDown."""
    st.chorded = st.chorded or bool(st.held)
    return keys_action("+".join([*st.held, *keys]))


def _clicks(
    name: str, count: int, kwargs: dict[str, Any], args: list[Any], st: _State
) -> list[Action]:
    if st.held:
        raise GrammarError(f"{name} while {'+'.join(st.held)} is held down is not supported")
    button = str(kwargs.get("button", "left")).lower()
    count = int(kwargs.get("clicks", count))
    x, y = _xy(st, name, kwargs, args)
    if button == "right":
        return [("right_click", {"x": x, "y": y})] * max(1, count)
    if button != "left":
        raise GrammarError(f"{name}: the {button} button is not available; use left or right")
    if count not in _CLICK_TOOLS:
        raise GrammarError(f"{name}: clicks={count} is not supported (1, 2 or 3)")
    return [(_CLICK_TOOLS[count], {"x": x, "y": y})]


def _drag_to(st: _State, name: str, kwargs: dict[str, Any], args: list[Any]) -> list[Action]:
    if not st.pos:
        raise GrammarError(f"{name} needs a moveTo before it (or a click in the same reply)")
    sx, sy = st.pos
    ex, ey = _xy(st, name, kwargs, args)
    return [("drag", {"startX": sx, "startY": sy, "endX": ex, "endY": ey})]


def _mouse_up(st: _State, kwargs: dict[str, Any], args: list[Any]) -> list[Action]:
    if st.down is None:
        raise GrammarError("mouseUp without a mouseDown before it")
    (sx, sy), st.down = st.down, None
    ex, ey = _xy(st, "mouseUp", kwargs, args)
    if (sx, sy) == (ex, ey):
        return [("click", {"x": ex, "y": ey})]
    return [("drag", {"startX": sx, "startY": sy, "endX": ex, "endY": ey})]


def _pointer(key: str, kwargs: dict[str, Any], args: list[Any], st: _State) -> list[Action] | None:
    if key in _CLICKS:
        return _clicks(key, _CLICKS[key], kwargs, args, st)
    if key == "rightclick":
        return _clicks(key, 1, {**kwargs, "button": "right"}, args, st)
    if key == "middleclick":
        raise GrammarError("middleClick is not available; use click or rightClick")
    if key == "moveto":
        x, y = _xy(st, key, kwargs, args)
        return [] if st.down is not None else [("mouse_move", {"x": x, "y": y})]
    if key == "dragto":
        return _drag_to(st, "dragTo", kwargs, args)
    if key == "mousedown":
        st.down = list(_xy(st, key, kwargs, args))
        return []
    if key == "mouseup":
        return _mouse_up(st, kwargs, args)
    if key in ("scroll", "vscroll", "hscroll"):
        return _scroll(key, kwargs, args, st)
    return None


def _scroll(key: str, kwargs: dict[str, Any], args: list[Any], st: _State) -> list[Action]:
    amount = int(float(_arg(kwargs, args, "clicks", 0, -3)))
    has_point = "x" in kwargs or len(args) >= 3
    x, y = _xy(st, key, kwargs, args, first=1) if has_point or st.pos else (0, 0)
    if key == "hscroll":
        direction = "right" if amount > 0 else "left"
    else:
        direction = "up" if amount > 0 else "down"
    steps = min(MAX_SCROLL, abs(amount) or 1)
    return [("scroll", {"x": x, "y": y, "direction": direction, "amount": steps})]


def _press(kwargs: dict[str, Any], args: list[Any], st: _State) -> list[Action]:
    """pyautogui.press: each key of a list in turn, ``presses`` times."""
    keys = _key_list(kwargs, args[:1])
    presses = max(1, int(_arg(kwargs, args, "presses", 1, 1)))
    return [_chord(st, [k]) for _ in range(presses) for k in keys]


def _keyboard(key: str, kwargs: dict[str, Any], args: list[Any], st: _State) -> list[Action] | None:
    if key in ("write", "typewrite"):
        text = _arg(kwargs, args, "message", 0, "")
        if isinstance(text, list | tuple):  # typewrite(['a', 'enter']): keys in turn
            return [_chord(st, [str(k)]) for k in text]
        if not str(text):
            raise GrammarError(f"{key} needs a message")
        return [("type", {"text": str(text)})]
    if key == "press":
        return _press(kwargs, args, st)
    if key == "hotkey":
        return [_chord(st, _key_list(kwargs, args))]
    if key == "keydown":
        st.chorded = st.chorded and bool(st.held)
        st.held.extend(k for k in _key_list(kwargs, args) if k not in st.held)
        return []
    if key == "keyup":
        was, released = list(st.held), _key_list(kwargs, args)
        st.held[:] = [k for k in st.held if k not in released]
        if was and not st.held and not st.chorded:  # held and released with nothing between
            return [keys_action("+".join(was))]
        return []
    return None


def _control(key: str, kwargs: dict[str, Any], args: list[Any], st: _State) -> list[Action]:
    if key in ("wait", "sleep"):
        seconds = float(_arg(kwargs, args, "seconds", 0, 3))
        return [("wait", {"ms": round(min(MAX_WAIT_S, max(0.0, seconds)) * 1000)})]
    if key == "answer":
        st.answer = str(_arg(kwargs, args, "answer", 0, _arg(kwargs, args, "text", 0, "")))
        return []
    if key == "terminate":
        st.ended = True
        status = str(_arg(kwargs, args, "status", 0, "success")).lower()
        answer = str(kwargs.get("answer") or st.answer)
        if status == "success":
            return [("finished", {"summary": answer or "the task is done"})]
        return [("call_user", {"message": answer or "the model could not finish the task"})]
    raise GrammarError(f"unsupported call {key!r}")


def _action(name: str, kwargs: dict[str, Any], args: list[Any], st: _State) -> list[Action]:
    key = name.lower()
    for handler in (_pointer, _keyboard):
        actions = handler(key, kwargs, args, st)
        if actions is not None:
            return actions
    return _control(key, kwargs, args, st)


def _code(text: str) -> str:
    fenced = re.findall(r"```(?:python|code|py)?\s*\n(.*?)```", text, re.S)
    return "\n".join(fenced) if fenced else text


def parse_pyautogui(text: str, point: Point) -> list[ToolCall]:
    """Tool calls from pyautogui code (in a ```python or ```code fence, or bare)."""
    st = _State(point)
    out: list[ToolCall] = []
    for source in split_calls(_code(clean_reply(text))):
        if not source.startswith(_PREFIXES):
            continue
        try:
            name, kwargs, args = parse_call(source)
            out += to_calls(_action(name, kwargs, args, st))
        except (GrammarError, ValueError, TypeError) as exc:
            out += to_calls(str(exc))
    if st.held:
        out += to_calls(f"keyDown({', '.join(map(repr, st.held))}) was never released")
    if st.answer and not st.ended:
        out += to_calls([("finished", {"summary": st.answer})])
    return out or to_calls("no pyautogui call found in the reply")
