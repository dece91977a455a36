"""OpenAI's computer tool on the Responses API: its actions as our tool calls, and the
safety-check interface.

A ``computer_call`` item carries one ``action`` (``computer_use_preview``) or a list of
``actions`` (the GA ``computer`` tool, gpt-5.4): click, double_click, drag, keypress,
move, screenshot, scroll, type, wait, with ``x``/``y`` in pixels of the screenshot sent
(openai SDK: ``openai.types.responses.ResponseComputerToolCall``). Each action becomes our
tool call; the points go through :func:`jarvis.geometry.place` (a :class:`Placer`), so a
point just off the screen lands on its edge with a note, and one further out is refused:
the call fails with the reason, which the model reads in its ``computer_call_output``.

``pending_safety_checks`` on a call must be approved before its actions run, and are then
echoed back as ``acknowledged_safety_checks`` on the ``computer_call_output``. Approval is
an :data:`Approver`: an async callable that gets a :class:`SafetyCheck` and answers True
only when a person approved it (False, or a sentence saying why, when not). The default,
:func:`deny_unattended`, denies (nobody is there to ask). ``build_agent`` replaces it with
the approvals of the safety layer (:mod:`jarvis.agent.safety_checks`): the check is held
until a person answers in the TUI or the web panel.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from jarvis.geometry import PIXELS, Size
from jarvis.llm.placer import Placer

COMPUTER = "computer"


@dataclass(frozen=True)
class SafetyCheck:
    """One pending safety check of a computer call, as the API reported it."""

    id: str
    code: str
    message: str
    call_id: str
    actions: tuple[str, ...]
    vendor: str = "OpenAI"
    """Whose check it is: OpenAI's pending safety check, or Gemini's safety decision."""

    def describe(self) -> str:
        return (
            f"{self.vendor} safety check {self.code or 'unnamed'} on {', '.join(self.actions)}: "
            f"{self.message or '(no details)'}"
        )


Approver = Callable[[SafetyCheck], Awaitable[bool | str]]
"""True: approved; False or a sentence (why not): the call's actions do not run."""


async def deny_unattended(check: SafetyCheck) -> bool:
    """The default approver: nobody is there to approve, so every check is denied."""
    return False


class UnmappableAction(ValueError):
    pass


def _keys(keys: list[Any]) -> tuple[str, dict[str, Any]]:
    names = [str(k).lower() for k in keys if str(k)]
    if not names:
        raise UnmappableAction("keypress needs keys")
    if len(names) == 1:
        return "press_key", {"key": names[0]}
    return "hotkey", {"keys": "+".join(names)}


def map_action(
    action: dict[str, Any], image: Size, placer: Placer | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """(tool, arguments) for one action of the computer tool; raises
    :class:`UnmappableAction`, or :class:`jarvis.geometry.OffScreen` (a ValueError) for a
    point off the screen by more than the edge rule allows. ``placer`` keeps the notes of
    points moved onto the edge."""
    kind = str(action.get("type", ""))
    point = placer or Placer(PIXELS, image)

    def xy(data: dict[str, Any]) -> tuple[int, int]:
        x, y = data.get("x"), data.get("y")
        if not isinstance(x, int | float) or not isinstance(y, int | float):
            raise UnmappableAction(f"{kind} needs numeric x and y, got {data!r}")
        return point([float(x), float(y)])

    if action.get("keys") and kind != "keypress":
        raise UnmappableAction(f"holding keys ({action['keys']}) during {kind} is not supported")
    if kind == "click":
        button = action.get("button", "left")
        names = {"left": "click", "right": "right_click"}
        if button not in names:
            raise UnmappableAction(f"click with the {button} button is not supported")
        x, y = xy(action)
        return [(names[button], {"x": x, "y": y})]
    if kind in ("double_click", "move"):
        x, y = xy(action)
        return [("double_click" if kind == "double_click" else "mouse_move", {"x": x, "y": y})]
    if kind == "drag":
        path = action.get("path") or []
        if len(path) < 2:
            raise UnmappableAction("drag needs a path of at least two points")
        (sx, sy), (ex, ey) = xy(path[0]), xy(path[-1])
        return [("drag", {"startX": sx, "startY": sy, "endX": ex, "endY": ey})]
    if kind == "keypress":
        return [_keys(list(action.get("keys") or []))]
    if kind == "type":
        return [("type", {"text": str(action.get("text", ""))})]
    if kind == "scroll":
        x, y = xy(action)
        dx, dy = int(action.get("scroll_x", 0)), int(action.get("scroll_y", 0))
        vertical = "down" if dy > 0 else "up"
        direction = vertical if dy else ("right" if dx > 0 else "left")
        amount = max(1, min(50, round(abs(dy or dx) / 100)))
        return [("scroll", {"x": x, "y": y, "direction": direction, "amount": amount})]
    if kind == "wait":
        return [("wait", {"ms": 2000})]
    if kind == "screenshot":
        return [("screenshot", {})]
    raise UnmappableAction(f"computer action {kind!r} is not supported")


def call_actions(item: dict[str, Any]) -> list[dict[str, Any]]:
    """The actions of a computer_call item: its ``actions`` list, or its one ``action``."""
    actions = item.get("actions")
    if isinstance(actions, list) and actions:
        return [a for a in actions if isinstance(a, dict)]
    action = item.get("action")
    return [action] if isinstance(action, dict) else []


def pending_checks(item: dict[str, Any]) -> list[SafetyCheck]:
    kinds = tuple(str(a.get("type", "?")) for a in call_actions(item))
    return [
        SafetyCheck(
            id=str(check.get("id", "")),
            code=str(check.get("code") or ""),
            message=str(check.get("message") or ""),
            call_id=str(item.get("call_id", "")),
            actions=kinds,
        )
        for check in item.get("pending_safety_checks") or []
        if isinstance(check, dict)
    ]
