"""A Messages API request as cache blocks with estimated token counts (for the cost model).

Order is the cache's: tools, then system, then each message's blocks. Text is counted at
four bytes a token; an image at width x height / 750 tokens (Anthropic's vision docs).
A block's key is its canonical JSON without the cache marker, so equal content gives
equal keys from step to step.
"""

from __future__ import annotations

import base64
import io
import json
import math
from typing import Any

from PIL import Image

from jarvis.llm.pricing import Block


def image_tokens(data_b64: str) -> int:
    with Image.open(io.BytesIO(base64.b64decode(data_b64))) as image:
        width, height = image.size
    return math.ceil(width * height / 750)


def text_tokens(text: str) -> int:
    """The tokens a text is counted as: four bytes a token, at least one."""
    return max(1, math.ceil(len(text.encode()) / 4))


def _tokens(block: dict[str, Any]) -> int:
    if block.get("type") == "image":
        return image_tokens(block["source"]["data"])
    if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
        return sum(_tokens(b) for b in block["content"])
    text = block.get("text")
    if not isinstance(text, str):
        text = json.dumps(block)
    return text_tokens(text)


def _block(block: dict[str, Any], role: str = "") -> Block:
    bare = {k: v for k, v in block.items() if k != "cache_control"}
    key = role + json.dumps(bare, sort_keys=True, ensure_ascii=False)
    return Block(key=key, tokens=_tokens(bare), breakpoint="cache_control" in block)


def wire_blocks(params: dict[str, Any]) -> list[Block]:
    """The blocks of ``messages.create`` arguments (as :func:`build_wire` makes them)."""
    blocks = [_block(t) for t in params.get("tools", [])]
    blocks += [_block(s) for s in params.get("system", [])]
    for message in params.get("messages", []):
        for part in message["content"]:
            blocks.append(_block(part, message["role"]))
    return blocks
