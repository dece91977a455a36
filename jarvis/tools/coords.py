"""Coordinates of the desktop tools: the validators of screenshot points, and the edge rule.

A point of a pointer tool (click, drag, scroll, ...) may be off the screenshot by at most
the edge rule's slack (:data:`jarvis.geometry.EDGE_SLACK` of its width or height): it then
lands on the nearest edge pixel and the result says so in ``note``; anything further is
refused while validating (-32602, naming the range). Other points (zoom's region) must be
inside.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, ValidationInfo

from jarvis.geometry import EDGE_SLACK, PIXELS, OffScreen, Size, edge_point
from jarvis.tools.context import ScreenLike
from jarvis.tools.results import INVALID_PARAMS, ToolFailure


def _screen_of(info: ValidationInfo) -> ScreenLike | None:
    context = info.context or {}
    tool_context = context.get("tool_context")
    return getattr(tool_context, "screen", None)


def _check_axis(
    value: int, info: ValidationInfo, axis: Literal["x", "y"], edge: bool = False
) -> int:
    """A coordinate inside the screenshot; with ``edge``, one off it by at most the edge
    rule's slack too (the tool then moves it onto the edge and says so)."""
    screen = _screen_of(info)
    if screen is None:  # validated without a screen (preset loading): only the sign matters
        if value < 0:
            raise ValueError(f"{axis} must be >= 0")
        return value
    size = screen.model_size
    limit = size.width if axis == "x" else size.height
    slack = math.floor(EDGE_SLACK * limit) if edge else 0
    if not -slack <= value < limit + slack:
        raise ValueError(
            f"{value} is outside the screenshot; {axis} must be in 0..{limit - 1} "
            f"(the screenshot is {size.width}x{size.height})"
        )
    return value


def _check_x(value: int, info: ValidationInfo) -> int:
    return _check_axis(value, info, "x")


def _check_y(value: int, info: ValidationInfo) -> int:
    return _check_axis(value, info, "y")


def _edge_x(value: int, info: ValidationInfo) -> int:
    return _check_axis(value, info, "x", edge=True)


def _edge_y(value: int, info: ValidationInfo) -> int:
    return _check_axis(value, info, "y", edge=True)


_X_FIELD = Field(
    description="x in screenshot pixels (0 is the left edge)", json_schema_extra={"minimum": 0}
)
_Y_FIELD = Field(
    description="y in screenshot pixels (0 is the top edge)", json_schema_extra={"minimum": 0}
)
X = Annotated[int, _X_FIELD, AfterValidator(_check_x)]
Y = Annotated[int, _Y_FIELD, AfterValidator(_check_y)]
# where the pointer goes: a point just off the screenshot lands on its edge (the edge rule)
PX = Annotated[int, _X_FIELD, AfterValidator(_edge_x)]
PY = Annotated[int, _Y_FIELD, AfterValidator(_edge_y)]


def placed(screen: ScreenLike, x: int, y: int, notes: list[str]) -> tuple[int, int]:
    """The screenshot point (x, y) by the edge rule (one just off it moved onto its edge,
    with a note for the model in ``notes``)."""
    try:
        ex, ey, note = edge_point(
            [x, y], PIXELS, Size(screen.model_size.width, screen.model_size.height)
        )
    except OffScreen as exc:  # validation lets through only what the rule allows
        raise ToolFailure(INVALID_PARAMS, str(exc)) from exc
    if note:
        notes.append(note)
    return int(ex), int(ey)


def noted(data: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    return {**data, "note": "; ".join(notes)} if notes else data
