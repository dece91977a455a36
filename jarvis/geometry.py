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

Tool calls carry points on a *tool grid*: the image's pixels for a pixel space, and a
10000 x 10000 grid for a relative space.
:func:`to_tool_point` maps an answer onto that grid (refusing one outside the picture);
the desktop layer then maps a grid point to the screen with :func:`model_to_screen` (the
pixel-centre convention: relative value ``r`` lands on the screen pixel holding position
``r / D`` of the axis, as the models' own code maps it back: ``x / 1000 * width``).
:func:`to_screen` is that composition, the function every table test goes through, and
the one path the running agent takes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Size:
    width: int
    height: int

    def __post_init__(self) -> None:
        if self.width < 1 or self.height < 1:
            raise ValueError(f"a size must be positive, got {self.width}x{self.height}")

    def __str__(self) -> str:
        return f"{self.width}x{self.height}"

    @classmethod
    def parse(cls, text: str) -> Size:
        """``"1920x1080"`` -> Size(1920, 1080)."""
        width, _, height = text.lower().partition("x")
        return cls(int(width), int(height))


# ---------------------------------------------------------------- pure arithmetic


def fit_size(screen: Size, max_side: int) -> Size:
    """The largest size with ``screen``'s aspect whose longest side is at most ``max_side``."""
    if max_side < 1:
        raise ValueError(f"max_side must be positive, got {max_side}")
    longest = max(screen.width, screen.height)
    if longest <= max_side:
        return screen
    return Size(
        max(1, (screen.width * max_side * 2 + longest) // (2 * longest)),
        max(1, (screen.height * max_side * 2 + longest) // (2 * longest)),
    )


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
        if self.kind == "pixel":
            return f"pixels of the image as sent ({shape})"
        return f"relative 0..{self.denominator:g} ({shape})"


PIXELS = CoordSpace("pixel")
REL_1000 = CoordSpace("relative", 1000)
REL_999 = CoordSpace("relative", 999)
REL_UNIT = CoordSpace("relative", 1)


def tool_grid(space: CoordSpace, image: Size) -> Size:
    """The grid tool calls carry points on, for answers in ``space`` about ``image``."""
    if space.kind == "pixel" and space.resize:
        factor, low, high = space.resize
        return smart_size(image, factor, high, low)
    if space.kind == "pixel":
        return image
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


def to_tool_point(point: Sequence[float], space: CoordSpace, image: Size) -> tuple[int, int]:
    """A model's answer (point or box, in ``space``) as a point on :func:`tool_grid`.

    Pixels round to the nearest pixel; a relative value ``r`` on scale ``D`` becomes grid
    cell ``floor(r * G / D)``.

    The out-of-screen rule, the same for every profile: a pixel answer must round into
    ``0..W-1`` x ``0..H-1`` of its image (the pixel indices, as Jarvis's own tools say),
    a relative answer must lie in ``0..D`` on both axes (``D`` itself is the far edge, the
    last pixel, as the models' own ``x / D * width`` puts it). Anything else raises
    :class:`OffScreen` naming the range; the call fails and the model sees why. Nothing
    is clamped from outside the picture onto its edge.
    """
    x, y = centre(point)
    if not (math.isfinite(x) and math.isfinite(y)):
        raise ValueError(f"coordinates must be finite numbers, got {list(point)!r}")
    grid = tool_grid(space, image)
    if space.kind == "pixel":
        px, py = math.floor(x + 0.5), math.floor(y + 0.5)
        if not contains_point(px, py, grid):
            raise OffScreen(
                f"({x:g}, {y:g}) is outside the {grid} picture: x must be in "
                f"0..{grid.width - 1} and y in 0..{grid.height - 1}"
            )
        return px, py
    d = space.denominator
    if not (0 <= x <= d and 0 <= y <= d):
        raise OffScreen(f"({x:g}, {y:g}) is outside the picture: x and y must be in 0..{d:g}")
    scale_x = grid.width / d
    scale_y = grid.height / d
    # a tiny epsilon keeps exact grid values (r * G / D integral) from flooring one low
    gx = math.floor(x * scale_x + 1e-9)
    gy = math.floor(y * scale_y + 1e-9)
    return _clamp(gx, grid.width), _clamp(gy, grid.height)


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

    Pixels: the image pixel showing it; relative: the value of that pixel's centre.
    """
    if space.kind == "pixel":
        grid = tool_grid(space, image)
        return [
            math.floor((x + 0.5) * grid.width / screen.width),
            math.floor((y + 0.5) * grid.height / screen.height),
        ]
    d = space.denominator
    return [(x + 0.5) * d / screen.width, (y + 0.5) * d / screen.height]


# --------------------------------------------------------------- image size rules


def _round_by(value: float, factor: int) -> int:
    return round(value / factor) * factor


def _floor_by(value: float, factor: int) -> int:
    return math.floor(value / factor) * factor


def _ceil_by(value: float, factor: int) -> int:
    return math.ceil(value / factor) * factor


def smart_resize(
    height: int, width: int, factor: int = 28, min_pixels: int = 56 * 56, max_pixels: int = 0
) -> tuple[int, int]:
    """Qwen2.5-VL's resize: (height, width) rounded to multiples of ``factor`` in a budget.

    A port of ``smart_resize`` in ``qwen_vl_utils/vision_process.py`` (QwenLM/Qwen2.5-VL)
    and ``transformers.models.qwen2_vl.image_processing_qwen2_vl``: factor 28 (patch 14 x
    merge 2), min_pixels 56*56, max_pixels 28*28*1280 in the cookbooks' serving setup.
    Qwen3-VL uses the same function with factor 32 (patch 16 x merge 2).
    """
    max_pixels = max_pixels or 28 * 28 * 1280
    if max(height, width) / min(height, width) > 200:
        raise ValueError(f"aspect ratio over 200 is not supported: {width}x{height}")
    h_bar = max(factor, _round_by(height, factor))
    w_bar = max(factor, _round_by(width, factor))
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, _floor_by(height / beta, factor))
        w_bar = max(factor, _floor_by(width / beta, factor))
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = _ceil_by(height * beta, factor)
        w_bar = _ceil_by(width * beta, factor)
    return h_bar, w_bar


def smart_size(screen: Size, factor: int, max_pixels: int, min_pixels: int = 56 * 56) -> Size:
    """The size Jarvis sends a smart-resize model: one the model's resize leaves unchanged.

    The result is a multiple of ``factor`` on both sides within ``max_pixels``, so the
    server's own ``smart_resize`` (with any budget at least this large) is the identity
    and pixel answers are pixels of the image Jarvis sent.
    """
    h, w = smart_resize(screen.height, screen.width, factor, min_pixels, max_pixels)
    return Size(w, h)


# Anthropic, "Computer use tool" docs (docs.claude.com, section on resolution): scale the
# screenshot to XGA 1024x768 (4:3), WXGA 1280x800 (16:10) or FWXGA 1366x768 (~16:9) by
# aspect ratio, and scale coordinates back; the reference implementation
# (anthropic-quickstarts computer-use-demo, tools/computer.py, MAX_SCALING_TARGETS) picks
# the target whose aspect is within 0.02 of the screen's and that is smaller than it.
ANTHROPIC_TARGETS = (Size(1024, 768), Size(1280, 800), Size(1366, 768))
ANTHROPIC_MAX_LONG_EDGE = 1568  # vision docs: larger images are downscaled by the API
ANTHROPIC_MAX_PIXELS = 1366 * 768  # the largest standard target's area (FWXGA)


def anthropic_size(screen: Size) -> Size:
    """The screenshot size Anthropic recommends for ``screen``.

    A standard target when the aspect matches one (within 0.02) and the screen is larger;
    otherwise (21:9, portrait, ...) the screen scaled with its aspect kept to at most the
    FWXGA area and a 1568 px long edge, so the API never rescales it behind our back.
    """
    ratio = screen.width / screen.height
    for target in ANTHROPIC_TARGETS:
        if abs(target.width / target.height - ratio) < 0.02 and target.width < screen.width:
            return target
    if (
        screen.width * screen.height <= ANTHROPIC_MAX_PIXELS
        and max(screen.width, screen.height) <= ANTHROPIC_MAX_LONG_EDGE
    ):
        return screen
    scale = min(
        math.sqrt(ANTHROPIC_MAX_PIXELS / (screen.width * screen.height)),
        ANTHROPIC_MAX_LONG_EDGE / max(screen.width, screen.height),
    )
    size = fit_size(screen, math.floor(max(screen.width, screen.height) * scale))
    while size.width * size.height > ANTHROPIC_MAX_PIXELS:  # rounding can add a sliver
        size = fit_size(screen, max(size.width, size.height) - 1)
    return size
