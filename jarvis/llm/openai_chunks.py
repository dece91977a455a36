"""Streamed chat-completion chunks assembled into our events and one response.

Tool calls are assembled by their ``index`` (servers may start at 1, repeat the id and name
in every chunk, send a whole call in one chunk, or send no index). Usage comes from the
final chunk (``stream_options.include_usage``), cached tokens from
``prompt_tokens_details``. A server's separate reasoning field is kept apart from the text.
Stop reasons are given in Anthropic's words (end_turn, tool_use, max_tokens).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from jarvis.llm.base import parse_arguments
from jarvis.llm.types import (
    LLMResponse,
    StreamEvent,
    TextDelta,
    ToolArgsDelta,
    ToolCall,
    ToolCallDone,
    ToolCallStart,
)
from jarvis.usage import Usage

STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


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
    reasoning: list[str] = field(default_factory=list)
    """The server's separate reasoning field (vLLM >= 0.11 and Ollama: ``reasoning``;
    SGLang, llama.cpp, older vLLM: ``reasoning_content``); never shown as text."""
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
            thought = delta and (_extra(delta, "reasoning") or _extra(delta, "reasoning_content"))
            if thought:
                self.reasoning.append(thought)
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


def _extra(delta: Any, name: str) -> str:
    """A field the SDK's model does not declare (kept as an extra), when it is text."""
    value = getattr(delta, name, None)
    return value if isinstance(value, str) else ""
