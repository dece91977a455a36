"""Sizes and the rules for the size of the screenshot a model is sent: pure arithmetic.

:mod:`jarvis.geometry` re-exports all of it; import from there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


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
