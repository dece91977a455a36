"""The desktop tools only models with an action vocabulary of their own reach (UI-TARS,
Doubao, GLM-4.5V, OpenCUA, and Qwen's ``computer_use`` tool as GUI-Owl-1.5 and EvoCUA
use it): actions Jarvis's desktop tools have no word for.

- ``key_down`` / ``key_up``: UI-TARS's ``press``/``keydown`` and ``release``/``keyup``
  (ByteDance's executors send ``keyDown`` / ``keyUp``): a key stays held across later
  actions, in this step or the next (shift-click), until ``key_up``; every key still held
  is let go when the task ends (:func:`release_held_keys`);
- ``middle_click``: GLM-4.5V's ``middle_click`` (zai-org/GLM-V ``agent.md``);
- ``scroll_here``: UI-TARS's ``scroll`` without a point, which scrolls where the pointer
  is (``pyautogui.scroll(-5)`` with no x, y in ByteDance's executor).

They are registered only when the active profile speaks such a grammar: a request in
one goes without tools (or with the one ``computer_use`` function in their place), so
nothing changes on the wire, and models that call Jarvis's tools are not offered them.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from pydantic import Field

from jarvis.desktop.errors import InputError
from jarvis.tools.computer import Args, PointArgs, PressKeyArgs, _act, _at_point, _input
from jarvis.tools.context import ToolContext
from jarvis.tools.registry import ToolRegistry

log = logging.getLogger(__name__)


class ScrollHereArgs(Args):
    direction: Literal["up", "down", "left", "right"] = Field(description="which way to scroll")
    amount: int = Field(5, ge=1, le=50, description="how many wheel clicks")


def key_down(args: PressKeyArgs, ctx: ToolContext) -> dict[str, Any]:
    """Hold one key down (until key_up, or the task's end), e.g. 'shift' for a shift-click."""
    _act(ctx, lambda: _input(ctx).hold_key(args.key, down=True))
    return {"held": args.key}


def key_up(args: PressKeyArgs, ctx: ToolContext) -> dict[str, Any]:
    """Let go of a key held with key_down."""
    _act(ctx, lambda: _input(ctx).hold_key(args.key, down=False))
    return {"released": args.key}


def middle_click(args: PointArgs, ctx: ToolContext) -> dict[str, Any]:
    """Middle-click at (x, y) in the screenshot."""
    return _at_point(ctx, args, lambda hands, x, y: hands.middle_click(x, y))


def scroll_here(args: ScrollHereArgs, ctx: ToolContext) -> dict[str, Any]:
    """Scroll the mouse wheel where the pointer is."""
    hands = _input(ctx)

    def wheel() -> None:
        x, y = hands.position()
        hands.scroll(x, y, args.direction, args.amount)

    _act(ctx, wheel)
    return {"at": "the pointer", "direction": args.direction, "amount": args.amount}


def release_held_keys(ctx: ToolContext) -> None:
    """Let go of every key the task still holds (its end, however it ends)."""
    hands = ctx.input
    if hands is None:
        return
    try:  # nothing to do when no key is held
        hands.release_keys()
    except InputError as exc:  # the display is gone: nothing is held on it any more
        log.warning("could not release held keys: %s", exc)


def register_grammar_tools(registry: ToolRegistry) -> None:
    """Add key_down, key_up, middle_click and scroll_here to ``registry``."""
    registry.register("key_down", key_down, PressKeyArgs, audit_fields=("key",), moves_input=True)
    registry.register("key_up", key_up, PressKeyArgs, audit_fields=("key",), moves_input=True)
    registry.register("middle_click", middle_click, PointArgs, moves_input=True)
    registry.register("scroll_here", scroll_here, ScrollHereArgs, moves_input=True)
