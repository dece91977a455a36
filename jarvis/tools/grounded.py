"""`click_target`: the planner names an element in words, the grounding model finds it.

Offered when the ``grounder`` setting is set (see :mod:`jarvis.llm.grounding`). The
screen is captured now at the grounding profile's own image size (from the physical
capture, so a HiDPI panel loses nothing), the grounding model answers a point in its own
convention, :func:`jarvis.geometry.to_screen` turns it into a screen pixel (the one
conversion and the one out-of-screen rule every profile has), and the input goes through
the same hands as ``click``. A point the grounding model puts outside its picture, or an
answer with no point, is a failed call that says so; nothing is clicked then.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from PIL import Image
from pydantic import Field

from jarvis.desktop.screen import MEDIA_TYPES, encode_image, resize_image
from jarvis.geometry import OffScreen, Size
from jarvis.llm.base import ProviderError
from jarvis.llm.grounding import Grounder, GroundingError
from jarvis.tools.computer import Args, _act, _input, _screen
from jarvis.tools.context import ToolContext
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.results import INTERNAL, INVALID_PARAMS, ToolFailure

NAME = "click_target"


class TargetArgs(Args):
    target: str = Field(
        min_length=1,
        max_length=500,
        description="the element in words, as a person would point it out: its text, kind "
        "and where it is, e.g. 'the OK button at the bottom of the Save dialog'",
    )
    action: Literal["click", "double_click", "right_click", "mouse_move"] = "click"


def _capture(screen: Any, size: Size, image_format: Any, quality: int) -> tuple[bytes, str]:
    physical, raw = screen.grab_raw()
    shot = Image.frombytes("RGB", (physical.width, physical.height), raw, "raw", "BGRX")
    resized = resize_image(shot, size)
    return encode_image(resized, image_format, quality), MEDIA_TYPES[image_format]


def make_click_target(grounder: Grounder, max_side: int) -> Any:
    async def click_target(args: TargetArgs, ctx: ToolContext) -> dict[str, Any]:
        """Click an element you describe in words; a grounding model finds its point on
        the screen now. Use it instead of guessing coordinates."""
        screen: Any = _screen(ctx)
        if getattr(screen, "grab_raw", None) is None:
            raise ToolFailure(INTERNAL, "this screen cannot be captured for the grounder")
        logical: Size = screen.size
        size = grounder.image_size(logical, max_side)
        settings = ctx.settings
        data, media = await asyncio.to_thread(
            _capture, screen, size, settings.image_format, settings.jpeg_quality
        )
        try:
            found = await grounder.locate(args.target, data, media, size, logical, screen.origin)
        except (OffScreen, GroundingError) as exc:
            raise ToolFailure(
                INVALID_PARAMS, f"the grounding model found no point for {args.target!r}: {exc}"
            ) from exc
        except ProviderError as exc:
            raise ToolFailure(INTERNAL, f"the grounding model failed: {exc}") from exc
        x, y = found.screen
        hands = _input(ctx)
        act = {
            "click": hands.click,
            "double_click": hands.double_click,
            "right_click": hands.right_click,
            "mouse_move": hands.move,
        }[args.action]
        _act(ctx, lambda: act(x, y))
        mx, my = screen.to_model(x, y)
        done = {"target": args.target, "action": args.action, "x": mx, "y": my}
        return {**done, "note": found.note} if found.note else done

    return click_target


def register_grounder_tool(registry: ToolRegistry, grounder: Grounder, max_side: int) -> None:
    """Offer `click_target` on ``registry``, asking ``grounder``."""
    registry.register(
        NAME,
        make_click_target(grounder, max_side),
        TargetArgs,
        audit_fields=("target", "action"),
        moves_input=True,
        timeout_s=180,
    )
