"""What a tool call ends with: a :class:`ToolResult`, and the error codes it may carry."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

from jarvis.llm.types import ImagePart, ToolResultPart

UNKNOWN_TOOL = -32601
INVALID_PARAMS = -32602
TIMEOUT = -32003
RATE_LIMITED = -32004
INTERNAL = -32005
NOT_ALLOWED = -32006


class ToolError(BaseModel):
    code: int
    message: str


class ToolResult(BaseModel):
    """``{ok: true, data}`` or ``{ok: false, error: {code, message}}``.

    ``images`` (an MCP tool's picture) are not part of the JSON text: the loop sends them
    to the model as images right after the tool results, in the order of the calls.
    """

    ok: bool
    data: Any = None
    error: ToolError | None = None
    images: list[ImagePart] = Field(default_factory=list, exclude=True)
    """Pictures a tool returns (an MCP image): sent to the model after the tool results."""
    image: ImagePart | None = Field(default=None, exclude=True)
    """A picture inside the tool result itself (Claude's zoom); never in the JSON text."""

    @classmethod
    def success(cls, data: Any = None) -> ToolResult:
        return cls(ok=True, data=data)

    @classmethod
    def failure(cls, code: int, message: str) -> ToolResult:
        return cls(ok=False, error=ToolError(code=code, message=message))

    def to_content(self) -> str:
        """The JSON text sent back to the model."""
        return json.dumps(self.model_dump(mode="json", exclude_none=True), ensure_ascii=False)

    def to_part(self, call_id: str, name: str) -> ToolResultPart:
        return ToolResultPart(
            call_id=call_id, name=name, ok=self.ok, content=self.to_content(), image=self.image
        )


class ToolFailure(Exception):
    """Raised by a tool for an error the model should see with a specific code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
