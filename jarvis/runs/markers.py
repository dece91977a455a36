"""SVG markers that show on a step's screenshot what each call did.

Pure functions from a recorded call to SVG elements in the picture's pixel space (the
model image). A point on the screen maps to the picture by the recorded scale, at the
centre of the screen pixel: ``px = (sx - origin_x + 0.5) / scale_x``.

- a dot and a crosshair for clicks and moves (a double ring for a double click, a
  square dot for a right click);
- an arrow for drags (start to end) and scrolls (from the point, in the wheel's
  direction, longer for more clicks);
- a speech bubble with the typed text, next to the last pointer target;
- a key cap with the keys for hotkeys and key presses, in the lower right corner.
"""

from __future__ import annotations

from html import escape

from jarvis.runs.step_file import CallFile, StepFile

ARROW_DEFS = (
    '<defs><marker id="arrowhead" viewBox="0 0 10 10" refX="8" refY="5" '
    'markerWidth="6" markerHeight="6" orient="auto-start-reverse">'
    '<path d="M0,0 L10,5 L0,10 z" fill="#ff3d7f"/></marker></defs>'
)
_SCROLL = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}
_MAX_BUBBLE = 40


def to_picture(step: StepFile, sx: int, sy: int) -> tuple[float, float]:
    """An absolute screen point to the picture's pixel space (centre of the pixel)."""
    ox, oy = step.monitor.origin
    return (sx - ox + 0.5) / step.scale[0], (sy - oy + 0.5) / step.scale[1]


def _points(step: StepFile, call: CallFile) -> list[tuple[float, float]]:
    if call.screen_points:
        return [to_picture(step, x, y) for x, y in call.screen_points]
    return [(x + 0.5, y + 0.5) for x, y in call.model_points]


def _r(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _dot(index: int, call: CallFile, x: float, y: float, unit: float) -> str:
    kind = call.name
    size = 14 * unit
    cross = (
        f'<line x1="{_r(x - size)}" y1="{_r(y)}" x2="{_r(x + size)}" y2="{_r(y)}"/>'
        f'<line x1="{_r(x)}" y1="{_r(y - size)}" x2="{_r(x)}" y2="{_r(y + size)}"/>'
    )
    if kind == "right_click":
        half = 4 * unit
        dot = (
            f'<rect class="dot" x="{_r(x - half)}" y="{_r(y - half)}" '
            f'width="{_r(2 * half)}" height="{_r(2 * half)}"/>'
        )
    else:
        dot = f'<circle class="dot" cx="{_r(x)}" cy="{_r(y)}" r="{_r(4 * unit)}"/>'
    ring = f'<circle class="ring" cx="{_r(x)}" cy="{_r(y)}" r="{_r(9 * unit)}"/>'
    if kind == "double_click":
        ring += f'<circle class="ring" cx="{_r(x)}" cy="{_r(y)}" r="{_r(13 * unit)}"/>'
    if kind == "mouse_move":
        ring = ""
    return (
        f'<g class="marker click {escape(kind)}" data-call="{index}" data-x="{_r(x)}" '
        f'data-y="{_r(y)}">{cross}{ring}{dot}</g>'
    )


def _arrow(index: int, kind: str, start: tuple[float, float], end: tuple[float, float]) -> str:
    (x1, y1), (x2, y2) = start, end
    return (
        f'<g class="marker arrow {kind}" data-call="{index}" data-x="{_r(x1)}" data-y="{_r(y1)}">'
        f'<line x1="{_r(x1)}" y1="{_r(y1)}" x2="{_r(x2)}" y2="{_r(y2)}" '
        f'marker-end="url(#arrowhead)"/><circle class="dot" cx="{_r(x1)}" cy="{_r(y1)}" r="3"/>'
        "</g>"
    )


def _label(text: str) -> str:
    return text if len(text) <= _MAX_BUBBLE else text[: _MAX_BUBBLE - 1] + "…"


def _bubble(index: int, text: str, x: float, y: float, width: int, unit: float) -> str:
    label = _label(text)
    font = 13 * unit
    w = (len(label) * 0.62 * font) + 16 * unit
    h = font + 12 * unit
    bx = min(max(0.0, x + 12 * unit), max(0.0, width - w))
    by = max(0.0, y - h - 14 * unit)
    return (
        f'<g class="marker bubble" data-call="{index}">'
        f'<rect x="{_r(bx)}" y="{_r(by)}" width="{_r(w)}" height="{_r(h)}" rx="{_r(8 * unit)}"/>'
        f'<text x="{_r(bx + 8 * unit)}" y="{_r(by + h - 7 * unit)}" '
        f'font-size="{_r(font)}">{escape(label)}</text></g>'
    )


def _keycap(index: int, keys: str, slot: int, size: tuple[int, int], unit: float) -> str:
    font = 14 * unit
    w = len(keys) * 0.62 * font + 20 * unit
    h = font + 16 * unit
    x = size[0] - w - 12 * unit
    y = size[1] - (h + 8 * unit) * (slot + 1) - 4 * unit
    return (
        f'<g class="marker keycap" data-call="{index}">'
        f'<rect x="{_r(x)}" y="{_r(y)}" width="{_r(w)}" height="{_r(h)}" rx="{_r(6 * unit)}"/>'
        f'<text x="{_r(x + 10 * unit)}" y="{_r(y + h - 9 * unit)}" '
        f'font-size="{_r(font)}">{escape(keys)}</text></g>'
    )


def step_markers(step: StepFile) -> str:
    """The SVG elements for every call of ``step`` (without the enclosing ``<svg>``)."""
    width, height = step.monitor.model
    unit = max(width, height) / 1280
    parts: list[str] = []
    last: tuple[float, float] = (width * 0.1, height * 0.15)
    keycaps = 0
    for index, call in enumerate(step.calls):
        points = _points(step, call)
        if call.name == "drag" and len(points) == 2:
            parts.append(_arrow(index, "drag", points[0], points[1]))
            last = points[1]
        elif call.name == "scroll" and points:
            dx, dy = _SCROLL.get(str(call.arguments.get("direction")), (0, 1))
            amount = int(call.arguments.get("amount") or 3)
            length = (30 + 6 * min(amount, 20)) * unit
            x, y = points[0]
            parts.append(_arrow(index, "scroll", (x, y), (x + dx * length, y + dy * length)))
            last = points[0]
        elif points:
            parts.append(_dot(index, call, *points[0], unit))
            last = points[0]
        elif call.name == "type":
            parts.append(_bubble(index, str(call.arguments.get("text", "")), *last, width, unit))
        elif call.name in ("hotkey", "press_key"):
            keys = str(call.arguments.get("keys") or call.arguments.get("key") or "")
            parts.append(_keycap(index, keys, keycaps, (width, height), unit))
            keycaps += 1
    return "".join(parts)
