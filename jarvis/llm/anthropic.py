"""Claude through the official ``anthropic`` SDK (AsyncAnthropic), streamed.

Sends the request :mod:`jarvis.llm.anthropic_wire` serializes (base64 images, tool
results, prompt-cache breakpoints on the system prompt, the last tool and the last user
messages) and assembles streamed tool arguments from ``input_json_delta`` pieces. With
``native_computer_tool`` Claude's own ``computer`` tool replaces our mouse/keyboard tools
and its actions are mapped back onto our tool calls (see :mod:`jarvis.llm.computer_tool`),
so the same executors run.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any, Unpack

import anthropic

from jarvis.llm.anthropic_wire import build_wire
from jarvis.llm.base import (
    AdapterBase,
    Connection,
    ProviderAuthError,
    ProviderError,
    StreamInterrupted,
    connection_error,
    parse_arguments,
    status_error,
)
from jarvis.llm.computer_tool import (
    COMPUTER_TOOL_NAME,
    computer_action_to_calls,
)
from jarvis.llm.retry import cause_text, error_text
from jarvis.llm.types import (
    LLMRequest,
    LLMResponse,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ToolArgsDelta,
    ToolCall,
    ToolCallDone,
    ToolCallStart,
    UsageSoFar,
)
from jarvis.usage import Usage

try:
    import httpx2 as _httpx
except ImportError:  # older SDKs ride on httpx
    import httpx as _httpx  # type: ignore[no-redef]

log = logging.getLogger(__name__)

KEY_ENV = "ANTHROPIC_API_KEY"
URL_ENV = "ANTHROPIC_BASE_URL"
TOKEN_ENV = "ANTHROPIC_AUTH_TOKEN"
_RETRYABLE_STREAM_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error"})


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
            return [UsageSoFar(usage=self.usage.model_copy())]
        elif kind == "content_block_start":
            return self._block_start(event.index, event.content_block)
        elif kind == "content_block_delta":
            return self._delta(event.index, event.delta)
        elif kind == "content_block_stop":
            return self._block_stop(event.index)
        elif kind == "message_delta":
            self.stop_reason = getattr(event.delta, "stop_reason", None) or self.stop_reason
            self._take_usage(getattr(event, "usage", None))
            return [UsageSoFar(usage=self.usage.model_copy())]
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

    def unfinished(self) -> str | None:
        """Why the stream's end is not a normal end, or None.

        ``message_stop`` ends a message. Some endpoints end the body right after the
        ``message_delta`` that carries the stop reason: that is a normal end too, when
        no content block is still open and every tool call is complete JSON (or the stop
        reason says the reply was cut off at max_tokens, which the agent handles).
        """
        if self.finished:
            return None
        if not self.stop_reason:
            return "before message_stop, without a stop reason"
        if self._blocks:
            return "before message_stop, inside a content block"
        broken = [c.name for c in self.calls if c.parse_error]
        if broken and self.stop_reason != "max_tokens":
            return f"before message_stop, with a broken tool call ({broken[0]})"
        return None

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

    _client: anthropic.AsyncAnthropic

    def __init__(
        self,
        model: str,
        *,
        native_computer_tool: bool = False,
        computer_tool_version: str | None = None,
        **connection: Unpack[Connection],
    ) -> None:
        super().__init__(model, **connection)
        self.native_computer_tool = native_computer_tool
        self.computer_tool_version = computer_tool_version

    def _connect(
        self, api_key: str | None, base_url: str | None, timeout_s: float
    ) -> anthropic.AsyncAnthropic:
        key, token = resolve_credentials(api_key)
        return anthropic.AsyncAnthropic(
            api_key=key, auth_token=token, base_url=base_url, timeout=timeout_s, max_retries=0
        )

    async def _attempt(self, request: LLMRequest) -> AsyncGenerator[StreamEvent, None]:
        wire = build_wire(
            request, self.model, self.native_computer_tool, self.computer_tool_version
        )
        try:
            stream = await self._client.messages.create(**wire.params, stream=True)
        except anthropic.APIStatusError as exc:
            raise _status_error(exc, wire.sent_tools) from exc
        except anthropic.APIConnectionError as exc:
            raise connection_error(exc, "Anthropic", self.base_url, URL_ENV) from exc
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
        problem = assembler.unfinished()
        if problem is not None:
            raise StreamInterrupted(f"the Anthropic stream ended {problem}", retryable=True)
        yield ResponseDone(response=assembler.response())
