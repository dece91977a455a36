"""An MCP ``CallToolResult`` as our :class:`ToolResult`, keeping each kind of content.

- text stays text; structured content is kept as JSON (``structured``);
- images become :class:`ImagePart` s the loop shows the model as images (PNG, JPEG, GIF
  and WebP up to :data:`MAX_IMAGE_BYTES`; others are described, not sent);
- audio, resource links and embedded resources are described (embedded text is kept);
- ``isError`` is a failed result (-32005) whose message is the tool's own text.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

import mcp_types

from jarvis.llm.types import ImagePart
from jarvis.tools.results import INTERNAL, ToolResult

MAX_IMAGE_BYTES = 5 * 1024 * 1024
MAX_TEXT = 20_000
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def to_tool_result(name: str, result: mcp_types.CallToolResult) -> ToolResult:
    content: list[dict[str, Any]] = []
    images: list[ImagePart] = []
    for block in result.content:
        content.append(_block(block, images))
    texts = [c["text"] for c in content if c.get("type") == "text"]
    if result.is_error:
        said = " ".join(texts).strip() or "no details given"
        return ToolResult.failure(INTERNAL, f"'{name}' reported an error: {_cut(said)}")
    data: dict[str, Any] = {"content": content}
    if result.structured_content is not None:
        data["structured"] = result.structured_content
    if images:
        data["images_attached"] = len(images)
    return ToolResult(ok=True, data=data, images=images)


def _block(block: Any, images: list[ImagePart]) -> dict[str, Any]:
    if isinstance(block, mcp_types.TextContent):
        return {"type": "text", "text": _cut(block.text)}
    if isinstance(block, mcp_types.ImageContent):
        return _image(block, images)
    if isinstance(block, mcp_types.AudioContent):
        return {"type": "audio", "mime_type": block.mime_type, "note": "audio is not played"}
    if isinstance(block, mcp_types.ResourceLink):
        return {"type": "resource_link", "uri": str(block.uri), "name": block.name}
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        entry: dict[str, Any] = {"type": "resource", "uri": str(resource.uri)}
        if isinstance(resource, mcp_types.TextResourceContents):
            entry["text"] = _cut(resource.text)
        else:
            entry["note"] = f"binary content ({resource.mime_type or 'unknown type'}) not shown"
        return entry
    return {"type": str(getattr(block, "type", "unknown")), "note": "content not shown"}


def _image(block: mcp_types.ImageContent, images: list[ImagePart]) -> dict[str, Any]:
    mime = (block.mime_type or "").lower()
    try:
        raw = base64.b64decode(block.data, validate=True)
    except (binascii.Error, ValueError):
        return {"type": "image", "mime_type": mime, "note": "not valid base64; not shown"}
    if mime not in IMAGE_TYPES:
        return {"type": "image", "mime_type": mime, "note": "this image type is not shown"}
    if len(raw) > MAX_IMAGE_BYTES:
        return {"type": "image", "mime_type": mime, "note": f"{len(raw)} bytes: too large"}
    images.append(ImagePart.from_bytes(raw, mime))
    return {"type": "image", "mime_type": mime, "bytes": len(raw), "shown": True}


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"... ({len(text)} chars)"


def describe_arguments_schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    """A server's input schema made safe to offer: always an object schema."""
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return {"type": "object", "properties": {}}
    out = json.loads(json.dumps(schema))  # a deep, JSON-only copy
    out.setdefault("properties", {})
    return out
