"""The text grammars of open GUI models, by name (a profile's ``grammar``).

- ``uitars`` and ``glm``: :mod:`.grammar_actions`;
- ``pyautogui``: :mod:`.grammar_pyautogui` (OpenCUA, Aguvis, EvoCUA's S1 style);
- ``holo``: :mod:`.grammar_holo` (Holo3 and Holo3.1's JSON step);
- ``venus``: :mod:`.grammar_venus` (UI-Venus-1.5);
- ``point``: a grounding model's one point or box (:mod:`.points`), as a click;
- ``qwen-computer-use`` is read from tool calls (:mod:`.qwen_tool`).

What they share (cleaning the reply, reading calls written as code) is
:mod:`.grammar_text`.
"""

from __future__ import annotations

from collections.abc import Callable

from jarvis.llm.profiles.grammar_actions import parse_glm, parse_uitars
from jarvis.llm.profiles.grammar_holo import parse_holo
from jarvis.llm.profiles.grammar_pyautogui import parse_pyautogui
from jarvis.llm.profiles.grammar_text import GrammarError, Point, clean_reply, to_calls
from jarvis.llm.profiles.grammar_venus import parse_venus
from jarvis.llm.profiles.points import point_numbers
from jarvis.llm.types import ToolCall

__all__ = [
    "TEXT_GRAMMARS",
    "GrammarError",
    "Point",
    "clean_reply",
    "parse_glm",
    "parse_holo",
    "parse_point",
    "parse_pyautogui",
    "parse_uitars",
    "parse_venus",
]


def parse_point(text: str, point: Point) -> list[ToolCall]:
    """A grounding model's answer (one point or box, see :mod:`.points`) as a click."""
    values = point_numbers(clean_reply(text))
    if values is None:
        return to_calls("no point found in the reply; answer one point such as (x,y)")
    try:
        x, y = point(values)
    except ValueError as exc:
        return to_calls(str(exc))
    return to_calls([("click", {"x": x, "y": y})])


TEXT_GRAMMARS: dict[str, Callable[[str, Point], list[ToolCall]]] = {
    "uitars": parse_uitars,
    "glm": parse_glm,
    "pyautogui": parse_pyautogui,
    "point": parse_point,
    "holo": parse_holo,
    "venus": parse_venus,
}
