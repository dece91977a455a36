"""The `zoom` tool: a region of the screen at full resolution, returned as a picture.

It backs the ``zoom`` action of Claude's ``computer_20251124`` tool (``enable_zoom``):
the region is in screenshot (model) pixels, the crop comes from the physical capture, so
small text the downscaled screenshot blurs becomes legible. The picture goes back inside
the tool result (:attr:`jarvis.tools.results.ToolResult.image`).
"""

from __future__ import annotations

from typing import Any

from pydantic import model_validator

from jarvis.llm.types import ImagePart
from jarvis.tools.computer import Args
from jarvis.tools.context import ToolContext
from jarvis.tools.coords import X, Y
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.results import INTERNAL, ToolFailure, ToolResult


class ZoomArgs(Args):
    x1: X
    y1: Y
    x2: X
    y2: Y

    @model_validator(mode="after")
    def _not_empty(self) -> ZoomArgs:
        if self.x2 <= self.x1 or self.y2 <= self.y1:
            raise ValueError("the region must have x2 > x1 and y2 > y1")
        return self


def zoom(args: ZoomArgs, ctx: ToolContext) -> ToolResult:
    """Show a region of the screen (x1, y1)-(x2, y2) in screenshot pixels at full resolution."""
    grab: Any = getattr(ctx.screen, "zoom", None)
    if grab is None:
        raise ToolFailure(INTERNAL, "this screen cannot zoom")
    data, media_type, size = grab(args.x1, args.y1, args.x2, args.y2)
    return ToolResult(
        ok=True,
        data={
            "region": [args.x1, args.y1, args.x2, args.y2],
            "width": size.width,
            "height": size.height,
        },
        image=ImagePart.from_bytes(data, media_type),
    )


def register_zoom_tool(registry: ToolRegistry) -> None:
    registry.register("zoom", zoom, ZoomArgs)
