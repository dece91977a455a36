"""Our own message, tool and response types; every provider adapter maps to and from these."""

from __future__ import annotations

import base64
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from jarvis.usage import Usage

ToolMode = Literal["native", "text", "auto"]


class TextPart(BaseModel):
    type: Literal["text"] = "text"
    text: str


class ImagePart(BaseModel):
    type: Literal["image"] = "image"
    media_type: str = "image/jpeg"
    data_b64: str

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str) -> ImagePart:
        return cls(media_type=media_type, data_b64=base64.b64encode(data).decode("ascii"))

    @property
    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{self.data_b64}"


class ToolCall(BaseModel):
    """One tool call the model asked for. ``parse_error`` is set when its JSON was broken."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    parse_error: str | None = None
    origin: dict[str, Any] | None = Field(
        default=None,
        description="the provider-native call this one was mapped from (e.g. Claude's computer "
        "tool: {'id', 'name', 'input'}); adapters use it to send the history back faithfully",
    )
    note: str | None = Field(
        default=None,
        description="what the model is told with the call's result: a point just off the "
        "screen that was moved onto its edge (the edge rule, jarvis.geometry.place)",
    )


class ToolResultPart(BaseModel):
    """The outcome of one tool call, sent back to the model."""

    type: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    ok: bool
    content: str
    image: ImagePart | None = None
    """A picture the tool returned (Claude's zoom), sent with the result where the API
    allows images in tool results."""


Part = Annotated[TextPart | ImagePart | ToolResultPart, Field(discriminator="type")]


class Message(BaseModel):
    role: Literal["user", "assistant"]
    content: list[Part] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)

    @classmethod
    def user(cls, *parts: str | Part) -> Message:
        return cls(
            role="user", content=[TextPart(text=p) if isinstance(p, str) else p for p in parts]
        )

    @classmethod
    def assistant(cls, text: str, tool_calls: list[ToolCall] | None = None) -> Message:
        content: list[Part] = [TextPart(text=text)] if text else []
        return cls(role="assistant", content=content, tool_calls=tool_calls or [])

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.content if isinstance(p, TextPart))


class ToolSpec(BaseModel):
    """A tool offered to the model: name, description and JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_anthropic(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.parameters}

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


class LLMRequest(BaseModel):
    system: str
    messages: list[Message]
    tools: list[ToolSpec] = Field(default_factory=list)
    max_tokens: int = 4096
    temperature: float | None = None
    tool_mode: ToolMode = "auto"
    cache: bool = True
    cache_tail: bool = True
    """Whether a cache breakpoint may go on the newest message: not when no later request
    starts with this one (the step before a context drop, a one-off verification)."""


class LLMResponse(BaseModel):
    """One model answer. ``stop_reason`` uses Anthropic's words for every provider:
    end_turn, tool_use, max_tokens, stop_sequence, refusal."""

    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    stop_reason: str = ""
    model: str = ""
    tool_mode: Literal["native", "text"] = "native"


# --- stream events ---------------------------------------------------------
class TextDelta(BaseModel):
    type: Literal["text_delta"] = "text_delta"
    text: str


class ToolCallStart(BaseModel):
    type: Literal["tool_call_start"] = "tool_call_start"
    id: str
    name: str


class ToolArgsDelta(BaseModel):
    type: Literal["tool_args_delta"] = "tool_args_delta"
    id: str
    delta: str


class ToolCallDone(BaseModel):
    type: Literal["tool_call_done"] = "tool_call_done"
    call: ToolCall


class UsageSoFar(BaseModel):
    """The tokens the provider has reported for the call so far (Anthropic's
    ``message_start`` and ``message_delta``): a call cut short (a cancel mid-stream) still
    counts them. No output: it does not make a stream "started" for the retry logic."""

    type: Literal["usage_so_far"] = "usage_so_far"
    usage: Usage


class ResponseDone(BaseModel):
    type: Literal["response_done"] = "response_done"
    response: LLMResponse


StreamEvent = TextDelta | ToolCallStart | ToolArgsDelta | ToolCallDone | UsageSoFar | ResponseDone
