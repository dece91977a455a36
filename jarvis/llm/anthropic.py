"""Claude through the official ``anthropic`` SDK (AsyncAnthropic), streamed.

Serializes our messages to Messages API blocks (images as base64, tool results first
in a user message, tool calls as tool_use blocks), puts prompt-cache breakpoints on
the system prompt, the last tool and the last user messages, and assembles streamed
tool arguments from ``input_json_delta`` pieces. With ``native_computer_tool`` Claude's
own ``computer`` tool replaces our mouse/keyboard tools and its actions are mapped
back onto our tool calls (see :mod:`jarvis.llm.computer_tool`), so the same executors run.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

import anthropic

from jarvis.events import EventBus
from jarvis.llm.base import (
    NOT_RUN,
    AdapterBase,
    ProviderAuthError,
    ProviderError,
    StreamInterrupted,
    parse_arguments,
    status_error,
)
from jarvis.llm.computer_tool import (
    BETA_HEADER,
    COMPUTER_TOOL_NAME,
    computer_action_to_calls,
    computer_tools,
)
from jarvis.llm.retry import RetryPolicy, cause_text, error_text
from jarvis.llm.types import (
    ImagePart,
    LLMRequest,
    LLMResponse,
    Message,
    ResponseDone,
    StreamEvent,
    TextDelta,
    TextPart,
    ToolArgsDelta,
    ToolCall,
    ToolCallDone,
    ToolCallStart,
    ToolResultPart,
    Usage,
)

try:
    import httpx2 as _httpx
except ImportError:  # older SDKs ride on httpx
    import httpx as _httpx  # type: ignore[no-redef]

log = logging.getLogger(__name__)

KEY_ENV = "ANTHROPIC_API_KEY"
TOKEN_ENV = "ANTHROPIC_AUTH_TOKEN"
MAX_CACHE_BREAKPOINTS = 4
EPHEMERAL = {"type": "ephemeral"}
_RETRYABLE_STREAM_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error"})


# --- request ------------------------------------------------------------------------


def _image_block(part: ImagePart) -> dict[str, Any]:
    source = {"type": "base64", "media_type": part.media_type, "data": part.data_b64}
    return {"type": "image", "source": source}


def _tool_use_blocks(calls: list[ToolCall], origin_of: dict[str, str]) -> list[dict[str, Any]]:
    """tool_use blocks; calls mapped from one native call become that call again."""
    blocks: list[dict[str, Any]] = []
    seen: set[str] = set()
    for call in calls:
        if call.origin is not None:
            native_id = str(call.origin["id"])
            origin_of[call.id] = native_id
            if native_id not in seen:
                seen.add(native_id)
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": native_id,
                        "name": call.origin.get("name", COMPUTER_TOOL_NAME),
                        "input": call.origin.get("input", {}),
                    }
                )
            continue
        blocks.append(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        )
    return blocks


def _user_blocks(message: Message, origin_of: dict[str, str]) -> list[dict[str, Any]]:
    """Tool results first (the API requires it), merged per native call; then the rest."""
    results: dict[str, dict[str, Any]] = {}
    rest: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, ToolResultPart):
            use_id = origin_of.get(part.call_id, part.call_id)
            block = results.get(use_id)
            if block is None:
                results[use_id] = {
                    "type": "tool_result",
                    "tool_use_id": use_id,
                    "content": part.content,
                    "is_error": not part.ok,
                }
            else:
                block["content"] = f"{block['content']}\n{part.content}"
                block["is_error"] = block["is_error"] or not part.ok
        elif isinstance(part, ImagePart):
            rest.append(_image_block(part))
        elif isinstance(part, TextPart) and part.text:
            rest.append({"type": "text", "text": part.text})
    return [*results.values(), *rest]


def to_anthropic_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Our messages as Messages API ``messages`` (no cache markers)."""
    out: list[dict[str, Any]] = []
    origin_of: dict[str, str] = {}  # our call id -> the tool_use id it came from
    for message in messages:
        if message.role == "assistant":
            blocks = [{"type": "text", "text": p.text} for p in message.content if p.type == "text"]
            blocks = [b for b in blocks if b["text"]]
            blocks += _tool_use_blocks(message.tool_calls, origin_of)
        else:
            blocks = _user_blocks(message, origin_of)
        if not blocks:  # the API rejects empty content
            blocks = [{"type": "text", "text": "(empty)"}]
        out.append({"role": message.role, "content": blocks})
    _answer_every_tool_use(out)
    return out


def _answer_every_tool_use(messages: list[dict[str, Any]]) -> None:
    """Every tool_use needs a tool_result right after it; add one for calls never run."""
    for current, following in itertools.pairwise(messages):
        if current["role"] != "assistant" or following["role"] != "user":
            continue
        answered = {b.get("tool_use_id") for b in following["content"]}
        missing = [
            {"type": "tool_result", "tool_use_id": b["id"], "content": NOT_RUN, "is_error": True}
            for b in current["content"]
            if b["type"] == "tool_use" and b["id"] not in answered
        ]
        following["content"][:0] = missing


def mark_cache(
    system: list[dict[str, Any]], tools: list[dict[str, Any]], messages: list[dict[str, Any]]
) -> int:
    """Put ephemeral cache breakpoints in place (at most 4); returns how many were set.

    One on the system prompt, one on the last tool (caches all tools), and rolling
    ones on the last block of the last two user messages.
    """
    used = 0
    if system:
        system[-1]["cache_control"] = dict(EPHEMERAL)
        used += 1
    if tools:
        tools[-1]["cache_control"] = dict(EPHEMERAL)
        used += 1
    budget = min(2, MAX_CACHE_BREAKPOINTS - used)
    for message in reversed(messages):
        if budget <= 0:
            break
        if message["role"] == "user" and message["content"]:
            message["content"][-1]["cache_control"] = dict(EPHEMERAL)
            used += 1
            budget -= 1
    return used


@dataclass
class Wire:
    """One request as sent: SDK keyword arguments plus whether tools went native."""

    params: dict[str, Any]
    sent_tools: bool = False
    computer: bool = False


def build_wire(request: LLMRequest, model: str, native_computer_tool: bool = False) -> Wire:
    """The ``messages.create`` arguments for ``request`` (pure; tests read it directly)."""
    system = [{"type": "text", "text": request.system}] if request.system else []
    messages = to_anthropic_messages(request.messages)
    tools, computer = computer_tools(request.tools, request.messages, native_computer_tool)
    if request.cache:
        mark_cache(system, tools, messages)
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens,
        "messages": messages,
    }
    if system:
        params["system"] = system
    if tools:
        params["tools"] = tools
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if computer:
        params["extra_headers"] = {"anthropic-beta": BETA_HEADER}
    return Wire(params=params, sent_tools=bool(tools), computer=computer)


# --- response -----------------------------------------------------------------------


@dataclass
class _ToolBlock:
    id: str
    name: str
    initial: dict[str, Any]
    parts: list[str] = field(default_factory=list)


@dataclass
class Assembler:
    """Builds our events and the final response from the SDK's raw stream events."""

    computer: bool = False
    text: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = ""
    model: str = ""
    finished: bool = False
    _blocks: dict[int, _ToolBlock] = field(default_factory=dict)

    def _is_computer(self, name: str) -> bool:
        return self.computer and name == COMPUTER_TOOL_NAME

    def _take_usage(self, usage: Any) -> None:
        if usage is None:
            return
        for ours, theirs in (
            ("input_tokens", "input_tokens"),
            ("output_tokens", "output_tokens"),
            ("cache_read_tokens", "cache_read_input_tokens"),
            ("cache_write_tokens", "cache_creation_input_tokens"),
        ):
            value = getattr(usage, theirs, None)
            if value is not None:
                setattr(self.usage, ours, int(value))

    def handle(self, event: Any) -> list[StreamEvent]:
        kind = getattr(event, "type", "")
        if kind == "message_start":
            self.model = getattr(event.message, "model", "") or ""
            self._take_usage(getattr(event.message, "usage", None))
        elif kind == "content_block_start":
            return self._block_start(event.index, event.content_block)
        elif kind == "content_block_delta":
            return self._delta(event.index, event.delta)
        elif kind == "content_block_stop":
            return self._block_stop(event.index)
        elif kind == "message_delta":
            self.stop_reason = getattr(event.delta, "stop_reason", None) or self.stop_reason
            self._take_usage(getattr(event, "usage", None))
        elif kind == "message_stop":
            self.finished = True
        return []

    def _block_start(self, index: int, block: Any) -> list[StreamEvent]:
        if getattr(block, "type", "") == "tool_use":
            initial = getattr(block, "input", None)
            tool = _ToolBlock(block.id, block.name, initial if isinstance(initial, dict) else {})
            self._blocks[index] = tool
            if not self._is_computer(tool.name):
                return [ToolCallStart(id=tool.id, name=tool.name)]
        elif getattr(block, "type", "") == "text" and getattr(block, "text", ""):
            self.text.append(block.text)
            return [TextDelta(text=block.text)]
        return []

    def _delta(self, index: int, delta: Any) -> list[StreamEvent]:
        kind = getattr(delta, "type", "")
        if kind == "text_delta" and delta.text:
            self.text.append(delta.text)
            return [TextDelta(text=delta.text)]
        tool = self._blocks.get(index)
        if kind == "input_json_delta" and tool is not None and delta.partial_json:
            tool.parts.append(delta.partial_json)
            if not self._is_computer(tool.name):
                return [ToolArgsDelta(id=tool.id, delta=delta.partial_json)]
        return []

    def _block_stop(self, index: int) -> list[StreamEvent]:
        tool = self._blocks.pop(index, None)
        if tool is None:
            return []
        raw = "".join(tool.parts)
        arguments, error = parse_arguments(raw) if raw else (tool.initial, None)
        if self._is_computer(tool.name) and error is None:
            mapped = computer_action_to_calls(arguments, tool.id)
            self.calls += mapped
            events: list[StreamEvent] = []
            for call in mapped:
                events += [ToolCallStart(id=call.id, name=call.name), ToolCallDone(call=call)]
            return events
        call = ToolCall(id=tool.id, name=tool.name, arguments=arguments, parse_error=error)
        self.calls.append(call)
        return [ToolCallDone(call=call)]

    def response(self) -> LLMResponse:
        return LLMResponse(
            text="".join(self.text),
            tool_calls=self.calls,
            usage=self.usage,
            stop_reason=self.stop_reason,
            model=self.model,
        )


# --- errors -------------------------------------------------------------------------


def _status_error(exc: anthropic.APIStatusError, sent_tools: bool) -> ProviderError:
    detail = error_text(exc.body, exc.message)
    if exc.status_code == 200:  # an error event inside the stream
        kind = exc.body.get("error", {}).get("type") if isinstance(exc.body, dict) else None
        return StreamInterrupted(
            f"Anthropic stream error: {detail}", retryable=kind in _RETRYABLE_STREAM_ERRORS
        )
    return status_error(
        exc.status_code,
        detail,
        exc.response.headers,
        sent_tools=sent_tools,
        vendor="Anthropic",
        endpoint="Anthropic",
        key_env=KEY_ENV,
    )


def resolve_credentials(api_key: str | None) -> tuple[str | None, str | None]:
    """(api_key, auth_token) from ``api_key`` or the environment; raises if there are none."""
    if api_key:
        return api_key, None
    if os.environ.get(KEY_ENV):
        return os.environ[KEY_ENV], None
    if os.environ.get(TOKEN_ENV):
        return None, os.environ[TOKEN_ENV]
    raise ProviderAuthError(f"no Anthropic API key: set {KEY_ENV} (or pass api_key)")


class AnthropicProvider(AdapterBase):
    """Claude via AsyncAnthropic. Keys and base URL come from the SDK's env vars by default."""

    name = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        bus: EventBus | None = None,
        retry: RetryPolicy | None = None,
        timeout_s: float = 120.0,
        native_computer_tool: bool = False,
    ) -> None:
        super().__init__(model, bus=bus, retry=retry)
        self.native_computer_tool = native_computer_tool
        key, token = resolve_credentials(api_key)
        self._client = anthropic.AsyncAnthropic(
            api_key=key,
            auth_token=token,
            base_url=base_url,
            timeout=timeout_s,
            max_retries=0,  # our own loop retries, so it can report each retry
        )

    @property
    def base_url(self) -> str:
        return str(self._client.base_url)

    async def aclose(self) -> None:
        await self._client.close()

    async def _attempt(self, request: LLMRequest) -> AsyncGenerator[StreamEvent, None]:
        wire = build_wire(request, self.model, self.native_computer_tool)
        try:
            stream = await self._client.messages.create(**wire.params, stream=True)
        except anthropic.APIStatusError as exc:
            raise _status_error(exc, wire.sent_tools) from exc
        except anthropic.APIConnectionError as exc:
            raise ProviderError(
                f"cannot reach Anthropic at {self.base_url}: {cause_text(exc)}", retryable=True
            ) from exc
        assembler = Assembler(computer=wire.computer)
        try:
            async with stream:
                async for raw in stream:
                    for event in assembler.handle(raw):
                        yield event
        except anthropic.APIStatusError as exc:
            raise _status_error(exc, wire.sent_tools) from exc
        except (anthropic.APIConnectionError, _httpx.TransportError) as exc:
            raise StreamInterrupted(
                f"the Anthropic stream broke off: {cause_text(exc)}", retryable=True
            ) from exc
        if not assembler.finished:
            raise StreamInterrupted(
                "the Anthropic stream ended before message_stop", retryable=True
            )
        yield ResponseDone(response=assembler.response())
