"""The 14 desktop tools: mouse, keyboard, wait, screenshot and the two control tools.

Names and argument names are the wire contract (DESIGN.md section 3).
Coordinates arrive in the screenshot's pixel space (model space); validation
checks them against the current screenshot size and the desktop layer maps
them to the real screen (``screen.to_screen``). Keys are checked with the
desktop layer's ``normalize_key`` while validating, so a bad key is an
invalid-params result that names it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from jarvis.config import Settings
from jarvis.desktop.input import (
    FailSafeError,
    InputError,
    InputInterrupted,
    UnknownKeyError,
    normalize_key,
    parse_chord,
)
from jarvis.llm.profiles.select import active_profile, observation_kind
from jarvis.tools.context import InputLike, ScreenLike, ToolContext
from jarvis.tools.coords import PX, PY, noted, placed
from jarvis.tools.presets import Preset, load_default_presets, load_presets, register_presets
from jarvis.tools.registry import ToolRegistry, current_call_id
from jarvis.tools.results import INTERNAL, INVALID_PARAMS, ToolFailure

if TYPE_CHECKING:
    from jarvis.safety.approvals import ApprovalGate

log = logging.getLogger(__name__)
T = TypeVar("T")

MAX_WAIT_MS = 10_000
MAX_TEXT = 10_000
MAX_MESSAGE = 4_000
GRAMMAR_FORMATS = frozenset({"uitars", "glm", "pyautogui", "qwen-computer-use"})
"""Profiles whose own actions reach :mod:`jarvis.tools.grammar_tools`."""


class Args(BaseModel):
    """Base of every tool's arguments: unknown fields are an error, not ignored."""

    model_config = ConfigDict(extra="forbid")


def _check_key(value: str) -> str:
    normalize_key(value)  # raises UnknownKeyError (a ValueError) naming the key
    return value


def _check_chord(value: str) -> str:
    if not parse_chord(value):
        raise ValueError("name at least one key, e.g. 'ctrl+s'")
    return value


# --- argument models -----------------------------------------------------------
class PointArgs(Args):
    x: PX
    y: PY


class DragArgs(Args):
    startX: PX
    startY: PY
    endX: PX
    endY: PY


class ScrollArgs(Args):
    x: PX
    y: PY
    direction: Literal["up", "down", "left", "right"] = Field(description="which way to scroll")
    amount: int = Field(3, ge=1, le=50, description="how many wheel clicks")


class TypeArgs(Args):
    text: str = Field(min_length=1, max_length=MAX_TEXT, description="the text to type, verbatim")


class HotkeyArgs(Args):
    keys: Annotated[
        str,
        Field(
            min_length=1,
            max_length=100,
            description="keys pressed together, joined with '+', e.g. 'ctrl+shift+s' or 'alt+f4'",
        ),
        AfterValidator(_check_chord),
    ]


class PressKeyArgs(Args):
    key: Annotated[
        str,
        Field(
            min_length=1,
            max_length=40,
            description="one key name, e.g. 'enter', 'tab', 'esc', 'f5', 'pagedown', 'a'",
        ),
        AfterValidator(_check_key),
    ]


class WaitArgs(Args):
    ms: int = Field(ge=0, le=MAX_WAIT_MS, description="milliseconds to wait")


class NoArgs(Args):
    pass


class FinishedArgs(Args):
    summary: str = Field(
        min_length=1, max_length=MAX_MESSAGE, description="what was done and the result"
    )


class CallUserArgs(Args):
    message: str = Field(
        min_length=1, max_length=MAX_MESSAGE, description="the question or request for the user"
    )
    risky: bool = Field(
        False,
        description=(
            "true to ask the user to approve a risky or irreversible step you are about to "
            "take (say which in the message): when they allow it you get status 'approved' "
            "and go on; a refusal comes back as an error with their note"
        ),
    )


# --- helpers -------------------------------------------------------------------
def _screen(ctx: ToolContext) -> ScreenLike:
    if ctx.screen is None:
        raise ToolFailure(INTERNAL, "no screen is attached to this task")
    return ctx.screen


def _input(ctx: ToolContext) -> InputLike:
    if ctx.input is None:
        raise ToolFailure(INTERNAL, "no input device is attached to this task")
    return ctx.input


def _real(ctx: ToolContext, x: int, y: int) -> tuple[int, int]:
    screen = _screen(ctx)
    real = screen.to_screen(x, y)
    if not screen.reachable(*real):  # a picture of several monitors: between them
        raise ToolFailure(
            INVALID_PARAMS,
            f"({x}, {y}) is on no monitor: the black parts of the screenshot between "
            "monitors are not part of the desktop",
        )
    return real


def _act(ctx: ToolContext, action: Callable[[], T]) -> T:
    """Run one input action; the fail-safe ends the task, a key error is the model's to fix."""
    try:
        return action()
    except FailSafeError as exc:
        ctx.set_control("aborted", str(exc) or "input fail-safe triggered")
        raise ToolFailure(INTERNAL, f"input fail-safe triggered, the task stops: {exc}") from exc
    except UnknownKeyError as exc:
        raise ToolFailure(INVALID_PARAMS, str(exc)) from exc
    except InputInterrupted as exc:  # the task is being cancelled; nobody reads this result
        raise ToolFailure(INTERNAL, str(exc)) from exc
    except InputError as exc:  # the desktop's fault (no xdotool, display gone), not the model's
        log.warning("input failed: %s", exc)
        raise ToolFailure(INTERNAL, f"input failed: {exc}") from exc


def _at_point(
    ctx: ToolContext, args: PointArgs, action: Callable[[InputLike, int, int], None]
) -> dict[str, Any]:
    notes: list[str] = []
    mx, my = placed(_screen(ctx), args.x, args.y, notes)
    x, y = _real(ctx, mx, my)
    _act(ctx, lambda: action(_input(ctx), x, y))
    return noted({"x": mx, "y": my}, notes)


# --- the tools -------------------------------------------------------------------
def click(args: PointArgs, ctx: ToolContext) -> dict[str, Any]:
    """Left-click at (x, y) in the screenshot."""
    return _at_point(ctx, args, lambda hands, x, y: hands.click(x, y))


def double_click(args: PointArgs, ctx: ToolContext) -> dict[str, Any]:
    """Double-click with the left button at (x, y) in the screenshot."""
    return _at_point(ctx, args, lambda hands, x, y: hands.double_click(x, y))


def triple_click(args: PointArgs, ctx: ToolContext) -> dict[str, Any]:
    """Triple-click with the left button at (x, y) in the screenshot (selects a line)."""
    return _at_point(ctx, args, lambda hands, x, y: hands.triple_click(x, y))


def right_click(args: PointArgs, ctx: ToolContext) -> dict[str, Any]:
    """Right-click at (x, y) in the screenshot (opens context menus)."""
    return _at_point(ctx, args, lambda hands, x, y: hands.right_click(x, y))


def mouse_move(args: PointArgs, ctx: ToolContext) -> dict[str, Any]:
    """Move the pointer to (x, y) in the screenshot without clicking (hover)."""
    return _at_point(ctx, args, lambda hands, x, y: hands.move(x, y))


def drag(args: DragArgs, ctx: ToolContext) -> dict[str, Any]:
    """Press the left button at (startX, startY), move to (endX, endY) and release."""
    notes: list[str] = []
    start = placed(_screen(ctx), args.startX, args.startY, notes)
    end = placed(_screen(ctx), args.endX, args.endY, notes)
    x1, y1 = _real(ctx, *start)
    x2, y2 = _real(ctx, *end)
    _act(ctx, lambda: _input(ctx).drag(x1, y1, x2, y2))
    return noted({"start": list(start), "end": list(end)}, notes)


def scroll(args: ScrollArgs, ctx: ToolContext) -> dict[str, Any]:
    """Scroll the mouse wheel at (x, y) in the screenshot."""
    notes: list[str] = []
    mx, my = placed(_screen(ctx), args.x, args.y, notes)
    x, y = _real(ctx, mx, my)
    _act(ctx, lambda: _input(ctx).scroll(x, y, args.direction, args.amount))
    data = {"x": mx, "y": my, "direction": args.direction, "amount": args.amount}
    return noted(data, notes)


def type_(args: TypeArgs, ctx: ToolContext) -> dict[str, Any]:
    """Type text at the keyboard focus (click the field first). Use press_key for Enter."""
    typed = _act(ctx, lambda: _input(ctx).type_text(args.text))
    result: dict[str, Any] = {"typed_chars": typed.chars, "method": typed.method}
    if typed.target:
        result["into"] = typed.target
    if typed.paste_key:
        result["paste_key"] = typed.paste_key
    if typed.unchecked:  # sent, but nothing could tell whether it arrived: say so
        result["delivery"] = f"not checked: {typed.unchecked}"
    return result


def hotkey(args: HotkeyArgs, ctx: ToolContext) -> dict[str, Any]:
    """Press a key combination, keys joined with '+', e.g. 'ctrl+c', 'ctrl+shift+s', 'alt+tab'."""
    _act(ctx, lambda: _input(ctx).hotkey(args.keys))
    return {"keys": args.keys}


def press_key(args: PressKeyArgs, ctx: ToolContext) -> dict[str, Any]:
    """Press and release one key, e.g. 'enter', 'tab', 'esc', 'backspace', 'down'."""
    _act(ctx, lambda: _input(ctx).press_key(args.key))
    return {"key": args.key}


async def wait(args: WaitArgs, ctx: ToolContext) -> dict[str, Any]:
    """Wait this many milliseconds (at most 10000) for something on screen to happen."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + args.ms / 1000
    while (left := deadline - loop.time()) > 0:
        await asyncio.sleep(left)
    return {"waited_ms": args.ms}


async def screenshot(args: NoArgs, ctx: ToolContext) -> dict[str, Any]:
    """Take a fresh screenshot; it is shown to you before your next decision."""
    screen = _screen(ctx)
    size = screen.model_size
    ctx.request_screenshot()
    answer: dict[str, Any] = {"width": size.width, "height": size.height}
    if screen.monitor_note:  # a desktop with several monitors: which one it shows
        answer["monitors"] = screen.monitor_note
    return answer


async def finished(args: FinishedArgs, ctx: ToolContext) -> dict[str, Any]:
    """Declare the task done, with a short summary; it is checked against a fresh screenshot."""
    ctx.set_control("finished", args.summary)
    return {"status": "finished"}


async def call_user(args: CallUserArgs, ctx: ToolContext) -> dict[str, Any]:
    """Stop and ask the user (for a password, a decision, or confirmation of a risky step).

    With ``risky``, the approvals decide first (the registry holds the call): allowed, the
    task goes on; with nobody there to approve, it stops as a plain question."""
    if args.risky and (current_call_id.get() or "") in ctx.approved:
        return {"status": "approved", "message": args.message}
    ctx.set_control("call_user", args.message)
    return {"status": "waiting_for_user"}


def register_computer_tools(registry: ToolRegistry) -> None:
    """Add the 14 desktop tools to ``registry``."""
    for name, fn, model in (
        ("click", click, PointArgs),
        ("double_click", double_click, PointArgs),
        ("triple_click", triple_click, PointArgs),
        ("right_click", right_click, PointArgs),
        ("mouse_move", mouse_move, PointArgs),
        ("drag", drag, DragArgs),
        ("scroll", scroll, ScrollArgs),
        ("type", type_, TypeArgs),
    ):
        registry.register(name, fn, model, moves_input=True)
    registry.register("hotkey", hotkey, HotkeyArgs, audit_fields=("keys",), moves_input=True)
    registry.register("press_key", press_key, PressKeyArgs, audit_fields=("key",), moves_input=True)
    registry.register("wait", wait, WaitArgs, timeout_s=MAX_WAIT_MS / 1000 + 5)
    registry.register("screenshot", screenshot, NoArgs)
    registry.register("finished", finished, FinishedArgs, control=True)
    registry.register("call_user", call_user, CallUserArgs, control=True)


def build_registry(
    settings: Settings,
    presets: Path | Sequence[Preset] | None = None,
    approvals: ApprovalGate | None = None,
) -> ToolRegistry:
    """The 14 desktop tools plus semantic presets; ``approvals`` holds risky calls.

    ``presets``: ``None`` loads the configured or default presets file (see
    :func:`jarvis.tools.presets.load_default_presets`); a path loads that file; a list
    registers those presets (``[]`` for none). A bad preset raises ``PresetError``.
    """
    registry = ToolRegistry(settings, approvals=approvals)
    register_computer_tools(registry)
    if observation_kind(settings) != "screenshot":  # the setting and the profile ask for it
        from jarvis.tools.elements import register_element_tools

        register_element_tools(registry)
    if active_profile(settings).profile.action_format in GRAMMAR_FORMATS:
        from jarvis.tools.grammar_tools import register_grammar_tools

        register_grammar_tools(registry)
    from jarvis.tools.secret_tools import register_secret_tools

    register_secret_tools(registry, settings)  # when the data dir has secrets
    if presets is None:
        register_presets(registry, load_default_presets(settings))
    elif isinstance(presets, Path):
        register_presets(registry, load_presets(presets))
    else:
        register_presets(registry, presets)
    return registry
