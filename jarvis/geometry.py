"""Sizes and coordinates: pure arithmetic that the desktop and the model layers share.

Nothing here touches a display or a model; ``jarvis.desktop`` and ``jarvis.llm`` both
import this module, so neither has to import the other.

Screen spaces:

- *physical*: the pixels mss captures (on a HiDPI display, e.g. 2880x1800);
- *logical*: the coordinates input uses (the same display as 1440x900 points);
  mss reports a monitor's rectangle in logical units, so the ratio of the
  captured image to that rectangle is the HiDPI factor;
- *model*: the screenshot the model sees, the monitor scaled so that its longest
  side is at most ``max_side`` (aspect kept, never upscaled; chosen from the
  logical size, since a click cannot be finer than one logical pixel).

All mappings between them use the pixel-centre convention: pixel ``i`` of an axis of
``n`` pixels covers ``[i, i+1)`` and is represented by its centre ``i + 0.5``, so
``dst = floor((src + 0.5) * n_dst / n_src)``. This keeps corners on corners, maps the
last pixel inside, and round-trips exactly whenever the target axis is at least as long
as the source one. The arithmetic is integer-only.

Coordinate spaces of vision models, and the one mapping from a model's answer to a pixel.
Open GUI models were trained on different conventions:

- ``pixel``: pixels of the image as sent (Claude's computer tool, OpenAI's computer tool)
  or of the image after the model's own resize (Qwen2.5-VL and its fine-tunes; Jarvis
  sends exactly a size that resize leaves unchanged, see :func:`smart_resize`, so the two
  are the same);
- ``relative``: a fraction of the image on a fixed scale, 0..1000 (Qwen3-VL), 0..999
  (GLM-4.5V) or 0..1 (ShowUI, Aguvis).

A point may also come as a box ``[x1, y1, x2, y2]``: a box means its centre.

Tool calls carry points on a *tool grid*: the image's pixels for a pixel space, a
10000 x 10000 grid for a relative space, and the image's pixels each cut into
:data:`SUBPIXELS` x :data:`SUBPIXELS` for pixels of a model's own resized image mapped by
plain scaling (``p * W / w``, as those models' own code maps them back).
:func:`place` maps an answer onto that grid with the one edge rule (an answer out of range
by at most 1 % of the range lands on the nearest edge, with a note for the model; further
out is refused); the desktop layer then maps a grid point to the screen with
:func:`model_to_screen` (the pixel-centre convention: relative value ``r`` lands on the
screen pixel holding position ``r / D`` of the axis, as the models' own code maps it back:
``x / 1000 * width``). :func:`to_screen` is that composition, the function every table
test goes through, and the one path the running agent takes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from jarvis.screen_sizes import ANTHROPIC_MAX_LONG_EDGE as ANTHROPIC_MAX_LONG_EDGE
from jarvis.screen_sizes import ANTHROPIC_MAX_PIXELS as ANTHROPIC_MAX_PIXELS
from jarvis.screen_sizes import ANTHROPIC_TARGETS as ANTHROPIC_TARGETS
from jarvis.screen_sizes import Size as Size
from jarvis.screen_sizes import anthropic_size as anthropic_size
from jarvis.screen_sizes import fit_size as fit_size
from jarvis.screen_sizes import smart_resize as smart_resize
from jarvis.screen_sizes import smart_size

# ---------------------------------------------------------------- pure arithmetic


def map_axis(value: int, src: int, dst: int) -> int:
    """Map pixel ``value`` of an axis of ``src`` pixels onto one of ``dst`` pixels."""
    return min(dst - 1, max(0, ((2 * value + 1) * dst) // (2 * src)))


def contains_point(x: int, y: int, size: Size) -> bool:
    return 0 <= x < size.width and 0 <= y < size.height


def model_to_screen(
    x: int, y: int, model: Size, screen: Size, origin: tuple[int, int] = (0, 0)
) -> tuple[int, int]:
    """A model-space pixel to the absolute screen pixel whose centre it covers.

    Raises ValueError for a point outside the model image (check with
    :func:`contains_point` to turn it into a tool error first).
    """
    if not contains_point(x, y, model):
        raise ValueError(f"({x}, {y}) is outside the {model} screenshot")
    return (
        origin[0] + map_axis(x, model.width, screen.width),
        origin[1] + map_axis(y, model.height, screen.height),
    )


def screen_to_model(
    x: int, y: int, model: Size, screen: Size, origin: tuple[int, int] = (0, 0)
) -> tuple[int, int]:
    """An absolute screen pixel to the model-space pixel that shows it."""
    rx, ry = x - origin[0], y - origin[1]
    if not contains_point(rx, ry, screen):
        raise ValueError(f"({x}, {y}) is outside the {screen} monitor at {origin}")
    return map_axis(rx, screen.width, model.width), map_axis(ry, screen.height, model.height)


def hidpi_factor(physical: Size, logical: Size) -> float:
    """Physical pixels per logical unit (1.0 on a plain display, 2.0 on Retina)."""
    return physical.width / logical.width


def physical_to_logical(x: int, y: int, physical: Size, logical: Size) -> tuple[int, int]:
    """A captured pixel to the logical (input) coordinate that covers it."""
    if not contains_point(x, y, physical):
        raise ValueError(f"({x}, {y}) is outside the {physical} capture")
    return map_axis(x, physical.width, logical.width), map_axis(y, physical.height, logical.height)


def logical_to_physical(x: int, y: int, physical: Size, logical: Size) -> tuple[int, int]:
    """A logical (input) coordinate to the captured pixel at the centre of its area."""
    if not contains_point(x, y, logical):
        raise ValueError(f"({x}, {y}) is outside the {logical} logical screen")
    return map_axis(x, logical.width, physical.width), map_axis(y, logical.height, physical.height)


# ------------------------------------------------------- model coordinate spaces

SUBPIXELS = 4096
"""Grid cells per pixel of a plain-scaled pixel space: pixel ``p`` is cell ``p * 4096``,
whose centre lands on screen pixel ``floor(p * W / w)`` exactly (the models' own
``int(x / w * W)``) on any screen up to 8192 px wide (the cell's half width, ``W / (2 * w
* 4096)``, stays under the ``1 / w`` that separates ``p * W / w`` from the next integer)."""

REL_GRID = 10_000
"""Resolution of the tool grid of a relative space: fine enough that a grid cell's centre
is within 0.1 px of the position ``r * W / D`` the model means (Qwen's cookbook maps
``x / 1000 * width``), on any screen up to 10000 px wide."""


@dataclass(frozen=True)
class CoordSpace:
    """How a model writes a point.

    ``kind`` is ``pixel`` or ``relative``; ``denominator`` is the relative scale (1000 for
    0..1000, 999 for 0..999, 1 for 0..1); ``box`` says answers are boxes (their centre is
    meant).
    """

    kind: Literal["pixel", "relative"]
    denominator: float = 0.0
    box: bool = False
    resize: tuple[int, int, int] | None = None
    """For pixels of the model's own resized image: (factor, min_pixels, max_pixels) of the
    ``smart_resize`` the serving side applies to the image sent."""
    plain: bool = False
    """For pixels: map a pixel answer ``p`` by plain scaling, ``p * W / w``, as the models'
    own code does for pixels of their resized image (ByteDance UI-TARS
    README_coordinates.md ``int(x / new_width * width)``; OpenCUA's
    ``_coordinate_projection`` ``int(x / width * screen_width)``), instead of aiming at the
    centre of image pixel ``p``. Its tool grid cuts each pixel into :data:`SUBPIXELS`."""

    def __post_init__(self) -> None:
        if self.kind == "relative" and self.denominator <= 0:
            raise ValueError("a relative space needs a positive denominator")

    def describe(self) -> str:
        shape = "box centre" if self.box else "point"
        if self.kind == "pixel" and self.resize:
            factor, low, high = self.resize
            return (
                f"pixels of the model's resized image (factor {factor}, "
                f"{low}..{high} pixels) ({shape})"
            )
        if self.kind == "pixel" and self.plain:
            return f"pixels of the image as sent, scaled back as x * W / w ({shape})"
        if self.kind == "pixel":
            return f"pixels of the image as sent ({shape})"
        return f"relative 0..{self.denominator:g} ({shape})"


PIXELS = CoordSpace("pixel")
REL_1000 = CoordSpace("relative", 1000)
REL_999 = CoordSpace("relative", 999)
REL_UNIT = CoordSpace("relative", 1)


def answer_size(space: CoordSpace, image: Size) -> Size:
    """The pixel size a pixel-space model answers about: ``image``, or the model's own
    resize of it."""
    if space.resize:
        factor, low, high = space.resize
        return smart_size(image, factor, high, low)
    return image


def tool_grid(space: CoordSpace, image: Size) -> Size:
    """The grid tool calls carry points on, for answers in ``space`` about ``image``."""
    if space.kind == "pixel" and space.plain:
        size = answer_size(space, image)
        return Size(size.width * SUBPIXELS, size.height * SUBPIXELS)
    if space.kind == "pixel":
        return answer_size(space, image)
    return Size(REL_GRID, REL_GRID)


def centre(values: Sequence[float]) -> tuple[float, float]:
    """A point from ``[x, y]``, or the centre of a box ``[x1, y1, x2, y2]``."""
    if len(values) == 2:
        return float(values[0]), float(values[1])
    if len(values) == 4:
        return (values[0] + values[2]) / 2, (values[1] + values[3]) / 2
    raise ValueError(f"a point is [x, y] and a box [x1, y1, x2, y2]; got {list(values)!r}")


def _clamp(value: int, size: int) -> int:
    return min(size - 1, max(0, value))


class OffScreen(ValueError):
    """An answer outside the picture: the one out-of-screen rule (see :func:`to_tool_point`)."""


EDGE_SLACK = 0.01
"""The edge rule: a point out of range by at most this fraction of the model's coordinate
range on that axis (its width or height in pixels, or ``D`` of a relative scale) lands on
the nearest edge; a point further out is refused."""


@dataclass(frozen=True)
class Placed:
    """A model's answer placed on the tool grid; ``note`` says, in the model's own units,
    that it was off the picture by at most :data:`EDGE_SLACK` and moved onto the edge."""

    x: int
    y: int
    note: str = ""


def _span(space: CoordSpace, image: Size) -> tuple[float, float, float, float]:
    """(largest x, largest y, x range, y range) of answers in ``space`` about ``image``."""
    if space.kind == "relative":
        d = space.denominator
        return d, d, d, d
    size = answer_size(space, image)
    return size.width - 1, size.height - 1, size.width, size.height


def _inside(x: float, y: float, space: CoordSpace, hi_x: float, hi_y: float) -> bool:
    if space.kind == "relative":
        return 0 <= x <= hi_x and 0 <= y <= hi_y
    px, py = math.floor(x + 0.5), math.floor(y + 0.5)  # pixels round to the nearest one
    return 0 <= px <= hi_x and 0 <= py <= hi_y


def _range_text(space: CoordSpace, image: Size) -> str:
    if space.kind == "relative":
        return f"x and y must be in 0..{space.denominator:g}"
    size = answer_size(space, image)
    return f"x must be in 0..{size.width - 1} and y in 0..{size.height - 1}"


def edge_point(point: Sequence[float], space: CoordSpace, image: Size) -> tuple[float, float, str]:
    """The edge rule on an answer in ``space``'s own units: ``(x, y, note)``, the point as
    it is when inside (``note`` empty), else moved onto the nearest edge with ``note``
    saying so. Raises :class:`OffScreen` naming the range when it is further out."""
    x, y = centre(point)
    if not (math.isfinite(x) and math.isfinite(y)):
        raise ValueError(f"coordinates must be finite numbers, got {list(point)!r}")
    hi_x, hi_y, range_x, range_y = _span(space, image)
    if _inside(x, y, space, hi_x, hi_y):
        return x, y, ""
    off = max(-x / range_x, (x - hi_x) / range_x, -y / range_y, (y - hi_y) / range_y)
    if off > EDGE_SLACK + 1e-12:
        where = (
            "the picture"
            if space.kind == "relative"
            else f"the {answer_size(space, image)} picture"
        )
        raise OffScreen(f"({x:g}, {y:g}) is outside {where}: {_range_text(space, image)}")
    ex, ey = min(hi_x, max(0.0, x)), min(hi_y, max(0.0, y))
    unit = " px" if space.kind == "pixel" else ""
    dist = max(abs(ex - x), abs(ey - y))
    note = (
        f"the point ({x:g}, {y:g}) was {dist:g}{unit} off the screen "
        f"({_range_text(space, image)}), so the nearest edge point ({ex:g}, {ey:g}) was used"
    )
    return ex, ey, note


def place(point: Sequence[float], space: CoordSpace, image: Size) -> Placed:
    """A model's answer (point or box, in ``space``) on :func:`tool_grid`, with the edge rule.

    Pixels of the image as sent round to the nearest pixel; a pixel ``p`` of a model's own
    resized image (``space.plain``) becomes cell ``p * SUBPIXELS``, so it lands where the
    plain scaling ``p * W / w`` of the models' own code puts it (ByteDance's
    README_coordinates.md: ``int(x / new_width * width)``). A relative value ``r`` on scale
    ``D`` becomes grid cell ``floor(r * G / D)``.

    The out-of-screen rule, the same for every profile: a pixel answer must round into
    ``0..W-1`` x ``0..H-1`` of its image (the pixel indices, as Jarvis's own tools say),
    a relative answer must lie in ``0..D`` on both axes (``D`` itself is the far edge, the
    last pixel, as the models' own ``x / D * width`` puts it). An answer out of range by at
    most :data:`EDGE_SLACK` of the range lands on the nearest edge and :attr:`Placed.note`
    says so; anything further raises :class:`OffScreen` naming the range.
    """
    x, y, note = edge_point(point, space, image)
    grid = tool_grid(space, image)
    if space.kind == "pixel" and not space.plain:
        return Placed(
            _clamp(math.floor(x + 0.5), grid.width), _clamp(math.floor(y + 0.5), grid.height), note
        )
    if space.kind == "pixel":
        gx, gy = math.floor(x * SUBPIXELS + 1e-6), math.floor(y * SUBPIXELS + 1e-6)
        return Placed(_clamp(gx, grid.width), _clamp(gy, grid.height), note)
    den_x = den_y = space.denominator
    # a tiny epsilon keeps exact grid values (r * G / D integral) from flooring one low
    gx = math.floor(x * grid.width / den_x + 1e-9)
    gy = math.floor(y * grid.height / den_y + 1e-9)
    return Placed(_clamp(gx, grid.width), _clamp(gy, grid.height), note)


def to_tool_point(point: Sequence[float], space: CoordSpace, image: Size) -> tuple[int, int]:
    """:func:`place` without the note (for callers that report no result to the model)."""
    placed = place(point, space, image)
    return placed.x, placed.y


def to_screen(
    point: Sequence[float],
    space: CoordSpace,
    image: Size,
    screen: Size,
    origin: tuple[int, int] = (0, 0),
) -> tuple[int, int]:
    """The absolute logical screen pixel a model's answer means (:class:`OffScreen` when it
    is outside the picture)."""
    grid = tool_grid(space, image)
    gx, gy = to_tool_point(point, space, image)
    return model_to_screen(gx, gy, grid, screen, origin)


def from_screen(x: int, y: int, space: CoordSpace, image: Size, screen: Size) -> list[float]:
    """What a perfect model answers for logical screen pixel (x, y) (tests and calibration).

    Pixels: the image pixel showing it; plain-scaled pixels and relative: the value of that
    screen pixel's centre.
    """
    if space.kind == "pixel" and not space.plain:
        grid = tool_grid(space, image)
        return [
            math.floor((x + 0.5) * grid.width / screen.width),
            math.floor((y + 0.5) * grid.height / screen.height),
        ]
    if space.kind == "pixel":  # plain scaling: the position p * W / w of the pixel's centre
        size = answer_size(space, image)
        return [(x + 0.5) * size.width / screen.width, (y + 0.5) * size.height / screen.height]
    d = space.denominator
    return [(x + 0.5) * d / screen.width, (y + 0.5) * d / screen.height]
