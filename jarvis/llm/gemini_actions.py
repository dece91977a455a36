"""Gemini's computer-use actions as our tool calls.

Gemini's computer-use models (``gemini-2.5-computer-use-preview-10-2025`` and later)
answer with function calls to *predefined* UI actions (google-genai:
``types.Tool(computer_use=types.ComputerUse(...))``; the reference implementation is
github google/computer-use-preview, ``agent.py``). Their points are normalised to the
screenshot on a 0..999 grid, which the reference code maps back with
``int(x / 1000 * width)``: Jarvis's relative space with denominator 1000 does the same
(:func:`jarvis.geometry.place`, through a :class:`jarvis.llm.placer.Placer`), so a click
lands on the pixel the model's own code would click; a point just off the screen lands on
its edge and the result says so.

The mapping, action by action:

- ``click_at(x, y)``: click; ``hover_at``: mouse_move;
- ``type_text_at(x, y, text, press_enter=False, clear_before_typing=True)``: click the
  point, select all (ctrl+a) and delete when clearing, type, press enter when asked;
- ``key_combination(keys)``: "Control+C" -> hotkey ctrl+c (one key: press_key);
- ``scroll_at(x, y, direction, magnitude=800)``: scroll at the point; ``magnitude`` is on
  the same 0..999 scale of the screen's height (or width), and every 100 is one wheel
  click (800: 8 clicks), at least 1, at most 50;
- ``scroll_document(direction)``: pagedown/pageup (the reference presses those keys), or
  for left/right a scroll of 8 clicks at the screen's centre;
- ``drag_and_drop(x, y, destination_x, destination_y)``: drag;
- ``wait_5_seconds``: wait 5000 ms.

The browser-only actions (``open_web_browser``, ``search``, ``navigate``, ``go_back``,
``go_forward``) have no meaning on a desktop: they are excluded from the tool
(:data:`EXCLUDED`), and one the model sends anyway is an error it is told about.
"""

from __future__ import annotations

from typing import Any

from jarvis.geometry import CoordSpace, Size
from jarvis.llm.placer import Placer

EXCLUDED = ("open_web_browser", "search", "navigate", "go_back", "go_forward")
"""Predefined actions left out of the tool (they drive a browser's own controls)."""
MAPPED = (
    "click_at",
    "hover_at",
    "type_text_at",
    "key_combination",
    "scroll_at",
    "scroll_document",
    "drag_and_drop",
    "wait_5_seconds",
)
PREDEFINED = frozenset(EXCLUDED + MAPPED)
SCROLL_UNITS_PER_CLICK = 100
DEFAULT_MAGNITUDE = 800
MAX_CLICKS = 50
_DIRECTIONS = ("up", "down", "left", "right")

Mapped = list[tuple[str, dict[str, Any]]]


class UnmappableAction(ValueError):
    """A predefined action Jarvis cannot run; the message goes back to the model."""


def _number(args: dict[str, Any], name: str, action: str) -> float:
    value = args.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UnmappableAction(f"{action} needs a number {name} (0..999), got {value!r}")
    return float(value)


def _point(
    args: dict[str, Any], action: str, placer: Placer, xk: str = "x", yk: str = "y"
) -> tuple[int, int]:
    x, y = _number(args, xk, action), _number(args, yk, action)
    return placer([x, y])


def _keys(text: Any) -> tuple[str, dict[str, Any]]:
    names = [k.strip().lower() for k in str(text or "").split("+") if k.strip()]
    if not names:
        raise UnmappableAction(f"key_combination needs keys like 'Control+C', got {text!r}")
    if len(names) == 1:
        return "press_key", {"key": names[0]}
    return "hotkey", {"keys": "+".join(names)}


def _direction(args: dict[str, Any], action: str) -> str:
    direction = str(args.get("direction", "")).lower()
    if direction not in _DIRECTIONS:
        raise UnmappableAction(
            f"{action} needs direction up, down, left or right, got {args.get('direction')!r}"
        )
    return direction


def scroll_clicks(magnitude: Any) -> int:
    """Wheel clicks for a ``scroll_at`` magnitude (0..999 of the screen; 100 a click)."""
    if isinstance(magnitude, bool) or not isinstance(magnitude, int | float):
        raise UnmappableAction(f"scroll_at magnitude must be a number 0..999, got {magnitude!r}")
    return max(1, min(MAX_CLICKS, round(float(magnitude) / SCROLL_UNITS_PER_CLICK)))


def map_action(
    name: str, args: dict[str, Any], space: CoordSpace, image: Size, placer: Placer | None = None
) -> Mapped:
    """(tool, arguments) pairs for one predefined action; raises :class:`UnmappableAction`
    (or :class:`jarvis.geometry.OffScreen`, a ValueError, for a point further off the
    picture than the edge rule allows). ``placer`` keeps the edge notes."""
    placer = placer or Placer(space, image)
    if name in ("click_at", "hover_at"):
        x, y = _point(args, name, placer)
        return [("click" if name == "click_at" else "mouse_move", {"x": x, "y": y})]
    if name == "type_text_at":
        x, y = _point(args, name, placer)
        text = args.get("text")
        if not isinstance(text, str):
            raise UnmappableAction(f"type_text_at needs text, got {text!r}")
        out: Mapped = [("click", {"x": x, "y": y})]
        if args.get("clear_before_typing", True):
            out += [("hotkey", {"keys": "ctrl+a"}), ("press_key", {"key": "delete"})]
        if text:
            out.append(("type", {"text": text}))
        if args.get("press_enter", False):
            out.append(("press_key", {"key": "enter"}))
        return out
    if name == "key_combination":
        return [_keys(args.get("keys"))]
    if name == "scroll_at":
        x, y = _point(args, name, placer)
        direction = _direction(args, name)
        amount = scroll_clicks(args.get("magnitude", DEFAULT_MAGNITUDE))
        return [("scroll", {"x": x, "y": y, "direction": direction, "amount": amount})]
    if name == "scroll_document":
        direction = _direction(args, name)
        if direction in ("up", "down"):
            return [("press_key", {"key": "pagedown" if direction == "down" else "pageup"})]
        x, y = placer([500, 500])
        amount = scroll_clicks(DEFAULT_MAGNITUDE)
        return [("scroll", {"x": x, "y": y, "direction": direction, "amount": amount})]
    if name == "drag_and_drop":
        sx, sy = _point(args, name, placer)
        ex, ey = _point(args, name, placer, "destination_x", "destination_y")
        return [("drag", {"startX": sx, "startY": sy, "endX": ex, "endY": ey})]
    if name == "wait_5_seconds":
        return [("wait", {"ms": 5000})]
    if name in EXCLUDED:
        raise UnmappableAction(
            f"{name} drives a web browser's own controls and is not available on this "
            "desktop; use the keyboard and mouse actions instead"
        )
    raise UnmappableAction(f"computer-use action {name!r} is not supported")
