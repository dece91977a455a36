"""OpenAI chat completions through the official ``openai`` SDK (AsyncOpenAI), streamed.

Works against any OpenAI-compatible endpoint (``base_url`` or ``OPENAI_BASE_URL``).
Images go as ``image_url`` data URLs, tool results as ``role: "tool"`` messages, and
streamed tool calls are assembled by their ``index``. Usage comes from the final
chunk (``stream_options.include_usage``), cached tokens from
``prompt_tokens_details``. Stop reasons are given in Anthropic's words (end_turn,
tool_use, max_tokens) so the loop needs no per-provider branches.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any, Unpack
from urllib.parse import urlparse

import openai

from jarvis.llm.base import (
    NOT_RUN,
    AdapterBase,
    Connection,
    ProviderAuthError,
    ProviderError,
    StreamInterrupted,
    connection_error,
    parse_arguments,
    status_error,
)
from jarvis.llm.retry import cause_text, error_text
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
)
from jarvis.usage import Usage

log = logging.getLogger(__name__)

KEY_ENV = "OPENAI_API_KEY"
URL_ENV = "OPENAI_BASE_URL"
STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


# --- request ------------------------------------------------------------------------


def _user_messages(message: Message) -> list[dict[str, Any]]:
    """Tool results as ``tool`` messages first, then the rest as one user message."""
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, ToolResultPart):
            content = part.content if part.ok else f"ERROR: {part.content}"
            out.append({"role": "tool", "tool_call_id": part.call_id, "content": content})
        elif isinstance(part, ImagePart):
            parts.append({"type": "image_url", "image_url": {"url": part.data_url}})
        elif isinstance(part, TextPart) and part.text:
            parts.append({"type": "text", "text": part.text})
    if parts:
        if all(p["type"] == "text" for p in parts):  # plain string: the most compatible form
            out.append({"role": "user", "content": "\n\n".join(p["text"] for p in parts)})
        else:
            out.append({"role": "user", "content": parts})
    elif not out:
        out.append({"role": "user", "content": "(empty)"})
    return out


def to_openai_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    """Our conversation as chat-completions ``messages``, system prompt first."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        if message.role == "user":
            out += _user_messages(message)
            continue
        entry: dict[str, Any] = {"role": "assistant", "content": message.text or None}
        if message.tool_calls:
            entry["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": json.dumps(call.arguments, ensure_ascii=False),
                    },
                }
                for call in message.tool_calls
            ]
        elif entry["content"] is None:
            entry["content"] = "(no text)"
        out.append(entry)
    return _answer_every_tool_call(out)


def _answer_every_tool_call(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each assistant tool call needs a ``tool`` message; add one for calls never run."""
    out: list[dict[str, Any]] = []
    pending: list[str] = []
    for entry in messages:
        if entry["role"] == "tool" and entry["tool_call_id"] in pending:
            pending.remove(entry["tool_call_id"])
        elif pending and entry["role"] != "tool":
            out += [{"role": "tool", "tool_call_id": i, "content": NOT_RUN} for i in pending]
            pending = []
        out.append(entry)
        if entry["role"] == "assistant":
            pending = [c["id"] for c in entry.get("tool_calls", [])]
    if pending and out[-1]["role"] == "tool":
        out += [{"role": "tool", "tool_call_id": i, "content": NOT_RUN} for i in pending]
    return out


def build_params(request: LLMRequest, model: str, max_tokens_key: str) -> dict[str, Any]:
    """The ``chat.completions.create`` arguments for ``request`` (pure)."""
    params: dict[str, Any] = {
        "model": model,
        "messages": to_openai_messages(request.system, request.messages),
        max_tokens_key: request.max_tokens,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        params["tools"] = [t.to_openai() for t in request.tools]
    if request.temperature is not None:
        params["temperature"] = request.temperature
    return params


# --- response -----------------------------------------------------------------------


@dataclass
class _Slot:
    id: str = ""
    name: str = ""
    parts: list[str] = field(default_factory=list)
    started: bool = False


@dataclass
class ChunkAssembler:
    """Builds our events and the final response from streamed chat-completion chunks."""

    text: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = ""
    model: str = ""
    finished: bool = False
    calls: list[ToolCall] = field(default_factory=list)
    _slots: list[_Slot] = field(default_factory=list)
    _by_index: dict[int | None, _Slot] = field(default_factory=dict)

    def handle(self, chunk: Any) -> list[StreamEvent]:
        self.model = getattr(chunk, "model", None) or self.model
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            details = getattr(usage, "prompt_tokens_details", None)
            cached = int(getattr(details, "cached_tokens", None) or 0)
            prompt = int(getattr(usage, "prompt_tokens", None) or 0)
            self.usage = Usage(
                input_tokens=max(0, prompt - cached),
                output_tokens=int(getattr(usage, "completion_tokens", None) or 0),
                cache_read_tokens=cached,
            )
        events: list[StreamEvent] = []
        for choice in getattr(chunk, "choices", None) or []:
            if getattr(choice, "index", 0) != 0:
                continue
            delta = choice.delta
            if delta is not None and delta.content:
                self.text.append(delta.content)
                events.append(TextDelta(text=delta.content))
            for piece in (delta.tool_calls if delta is not None else None) or []:
                events += self._tool_piece(piece)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
                self.finished = True
        return events

    def _slot_for(self, piece: Any) -> _Slot:
        """The call a delta belongs to, keyed by its index (servers may start at 1, repeat
        the id and name in every chunk, send a whole call in one chunk, or send no index)."""
        piece_id: str = getattr(piece, "id", None) or ""
        index: int | None = getattr(piece, "index", None)
        slot = self._by_index.get(index)
        # some servers reuse one index (or none) for every call; a new id means a new call
        if slot is None or (piece_id and slot.id and piece_id != slot.id):
            slot = _Slot(id=piece_id)
            self._by_index[index] = slot
            self._slots.append(slot)
        return slot

    def _tool_piece(self, piece: Any) -> list[StreamEvent]:
        slot = self._slot_for(piece)
        function = piece.function
        if function is not None and function.name and not slot.name:
            slot.name = function.name
        events: list[StreamEvent] = []
        if function is not None and function.arguments:
            slot.parts.append(function.arguments)
            if slot.started:
                events.append(ToolArgsDelta(id=slot.id, delta=function.arguments))
        if not slot.started and slot.name:
            slot.started = True
            slot.id = slot.id or f"call_{uuid.uuid4().hex[:16]}"
            events.insert(0, ToolCallStart(id=slot.id, name=slot.name))
            if slot.parts:
                events.append(ToolArgsDelta(id=slot.id, delta="".join(slot.parts)))
        return events

    def finish(self) -> list[StreamEvent]:
        """ToolCallDone for every assembled call; call once the stream has ended."""
        for slot in self._slots:
            arguments, error = parse_arguments("".join(slot.parts))
            if not slot.name:
                error = error or "the tool call has no function name"
            self.calls.append(
                ToolCall(
                    id=slot.id or f"call_{uuid.uuid4().hex[:16]}",
                    name=slot.name or "unknown",
                    arguments=arguments,
                    parse_error=error,
                )
            )
        return [ToolCallDone(call=call) for call in self.calls]

    def unfinished(self) -> str | None:
        """Why the stream's end is not a normal end, or None (call after :meth:`finish`).

        A finish_reason ends a response. Without one (OpenRouter sends only ``[DONE]``
        for some providers) the end of the body is a normal end when there was output
        and every tool call is complete JSON; a call cut short means the body broke off.
        """
        if self.finished:
            return None
        if not self.text and not self.calls:
            return "without a finish_reason or any output"
        broken = [c.name for c in self.calls if c.parse_error]
        if broken:
            return f"without a finish_reason, in the middle of a tool call ({broken[0]})"
        return None

    def response(self) -> LLMResponse:
        reason = self.finish_reason or ("tool_calls" if self.calls else "stop")
        return LLMResponse(
            text="".join(self.text),
            tool_calls=self.calls,
            usage=self.usage,
            stop_reason=STOP_REASONS.get(reason, reason),
            model=self.model,
        )


# --- errors -------------------------------------------------------------------------


def _status_error(exc: openai.APIStatusError, sent_tools: bool) -> ProviderError:
    return status_error(
        exc.status_code,
        error_text(exc.body, exc.message),
        exc.response.headers,
        sent_tools=sent_tools,
        vendor="OpenAI",
        endpoint="the OpenAI endpoint",
        key_env=KEY_ENV,
    )


def resolve_key(api_key: str | None) -> str:
    key = api_key or os.environ.get(KEY_ENV)
    if not key:
        raise ProviderAuthError(
            f"no OpenAI API key: set {KEY_ENV} (or pass api_key; any non-empty value "
            "works for a local OpenAI-compatible server without auth)"
        )
    return key


def openai_client(
    api_key: str | None, base_url: str | None, timeout_s: float
) -> openai.AsyncOpenAI:
    """The client both OpenAI adapters use (chat completions and the Responses API)."""
    return openai.AsyncOpenAI(
        api_key=resolve_key(api_key), base_url=base_url, timeout=timeout_s, max_retries=0
    )


class OpenAIProvider(AdapterBase):
    """Chat completions via AsyncOpenAI; any OpenAI-compatible base URL."""

    name = "openai"

    _client: openai.AsyncOpenAI

    def __init__(
        self,
        model: str,
        *,
        max_tokens_key: str | None = None,
        **connection: Unpack[Connection],
    ) -> None:
        super().__init__(model, **connection)
        # api.openai.com wants max_completion_tokens (newer models refuse max_tokens);
        # compatible servers widely know only max_tokens
        official = urlparse(self.base_url).hostname == "api.openai.com"
        self.max_tokens_key = max_tokens_key or (
            "max_completion_tokens" if official else "max_tokens"
        )

    def _connect(
        self, api_key: str | None, base_url: str | None, timeout_s: float
    ) -> openai.AsyncOpenAI:
        return openai_client(api_key, base_url, timeout_s)

    async def _attempt(self, request: LLMRequest) -> AsyncGenerator[StreamEvent, None]:
        params = build_params(request, self.model, self.max_tokens_key)
        sent_tools = "tools" in params
        try:
            stream = await self._client.chat.completions.create(**params, stream=True)
        except openai.APIStatusError as exc:
            raise _status_error(exc, sent_tools) from exc
        except openai.APIConnectionError as exc:
            raise connection_error(exc, "the OpenAI endpoint", self.base_url, URL_ENV) from exc
        assembler = ChunkAssembler(model=self.model)
        try:
            async with stream:
                async for chunk in stream:
                    for event in assembler.handle(chunk):
                        yield event
        except openai.APIStatusError as exc:
            raise _status_error(exc, sent_tools) from exc
        except openai.APIConnectionError as exc:
            raise StreamInterrupted(
                f"the OpenAI stream broke off: {cause_text(exc)}", retryable=True
            ) from exc
        except openai.APIError as exc:  # an error object inside the stream
            raise StreamInterrupted(
                f"OpenAI stream error: {error_text(exc.body, exc.message)}", retryable=True
            ) from exc
        done = assembler.finish()
        problem = assembler.unfinished()
        if problem is not None:
            raise StreamInterrupted(f"the OpenAI stream ended {problem}", retryable=True)
        for event in done:
            yield event
        yield ResponseDone(response=assembler.response())
