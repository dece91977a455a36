"""A provider that speaks a profile's action format over an inner chat adapter.

For a text grammar (UI-TARS, GLM, OpenCUA) the request goes without tools, with the
grammar's action space in the system prompt (or, for Doubao-1.5-UI-TARS, its makers'
fixed prompt in place of the whole system prompt) and the history written as the model
wrote it; the reply's text is parsed into our tool calls at its end. For Qwen's
``computer_use`` tool the request offers that one function in place of our mouse and
keyboard tools, and its calls are mapped onto ours. Either way every point goes through
:func:`jarvis.geometry.place`, onto the grid the screen maps from, with the edge rule: a
point just off the screen lands on its edge and the call's result says so
(:class:`jarvis.llm.placer.Placer`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from jarvis.geometry import Size, tool_grid
from jarvis.llm.computer_tool import COMPUTER_TOOL_NAMES, GRAMMAR_TOOL_NAMES, display_size
from jarvis.llm.placer import Placer
from jarvis.llm.profiles import qwen_tool
from jarvis.llm.profiles.catalog import Profile
from jarvis.llm.profiles.grammar_prompts import fixed_prompt, grammar_prompt
from jarvis.llm.profiles.grammars import TEXT_GRAMMARS
from jarvis.llm.text_mode import call_events
from jarvis.llm.types import (
    LLMRequest,
    Message,
    Part,
    ResponseDone,
    StreamEvent,
    TextPart,
    ToolArgsDelta,
    ToolCall,
    ToolCallDone,
    ToolCallStart,
    ToolResultPart,
)

GRAMMAR_FORMATS = frozenset({"uitars", "glm", "pyautogui", "holo", "venus", "qwen-computer-use"})


def collapse_origins(messages: list[Message]) -> list[Message]:
    """History with calls mapped from one native call sent back as that call, and their
    results merged under its id (so the model sees the call it made)."""
    out: list[Message] = []
    origin_of: dict[str, str] = {}
    for message in messages:
        if message.role == "assistant" and any(c.origin for c in message.tool_calls):
            calls: list[ToolCall] = []
            seen: set[str] = set()
            for call in message.tool_calls:
                if call.origin is None:
                    calls.append(call)
                    continue
                native = str(call.origin["id"])
                origin_of[call.id] = native
                if native not in seen:
                    seen.add(native)
                    calls.append(
                        ToolCall(
                            id=native, name=call.origin["name"], arguments=call.origin["input"]
                        )
                    )
            out.append(message.model_copy(update={"tool_calls": calls}))
            continue
        merged: dict[str, ToolResultPart] = {}
        parts: list[Part] = []
        for part in message.content:
            if isinstance(part, ToolResultPart) and part.call_id in origin_of:
                native = origin_of[part.call_id]
                if native in merged:
                    prev = merged[native]
                    prev.content = f"{prev.content}\n{part.content}"
                    prev.ok = prev.ok and part.ok
                    continue
                merged[native] = part.model_copy(update={"call_id": native})
                parts.append(merged[native])
            else:
                parts.append(part)
        out.append(message.model_copy(update={"content": parts}))
    return out


def grammar_history(messages: list[Message]) -> list[Message]:
    """History for a text grammar: replies as written, results as plain user text."""
    out: list[Message] = []
    for message in messages:
        if message.role == "assistant":
            out.append(Message.assistant(message.text or "(no text)"))
            continue
        parts: list[Part] = []
        for part in message.content:
            if isinstance(part, ToolResultPart):
                state = "ok" if part.ok else "failed"
                parts.append(TextPart(text=f"[{part.name}: {state}] {part.content}"))
            else:
                parts.append(part)
        out.append(message.model_copy(update={"content": parts}))
    return out


_STANDS_IN_FOR = COMPUTER_TOOL_NAMES | GRAMMAR_TOOL_NAMES  # Qwen's computer_use


def first_user_text(messages: list[Message]) -> str:
    """The first user message's text (the task, for a maker's fixed prompt)."""
    return next((m.text for m in messages if m.role == "user" and m.text), "")


class ProfileProvider:
    """Wraps an adapter (``inner``) so it speaks ``profile``'s action format."""

    def __init__(self, inner: Any, profile: Profile) -> None:
        if profile.action_format not in GRAMMAR_FORMATS:
            raise ValueError(f"profile {profile.name} needs no grammar adapter")
        self.inner = inner
        self.profile = profile
        self.name = inner.name
        self.model = inner.model

    async def aclose(self) -> None:
        await self.inner.aclose()

    def _placer(self, request: LLMRequest) -> tuple[Placer, Size]:
        size = display_size(request.messages)
        image = Size(*size) if size is not None else Size(1000, 1000)
        return Placer(self.profile.space, image), tool_grid(self.profile.space, image)

    def wire_request(self, request: LLMRequest) -> LLMRequest:
        """The request as the inner adapter sends it (pure; tests read it)."""
        size = display_size(request.messages)
        note = self.profile.grid_note(Size(*size) if size else Size(1000, 1000))
        if self.profile.action_format == "qwen-computer-use":
            rest = [t for t in request.tools if t.name not in _STANDS_IN_FOR]
            tools = [qwen_tool.tool_spec(note), *rest] if request.tools else []
            return request.model_copy(
                update={"tools": tools, "messages": collapse_origins(request.messages)}
            )
        system = request.system
        if request.tools:  # a call without tools (verify, wrap up) gets no action space
            fixed = fixed_prompt(self.profile.name, first_user_text(request.messages))
            action_space = grammar_prompt(self.profile.action_format, note)
            system = fixed if fixed is not None else f"{system}\n\n{action_space}"
        return request.model_copy(
            update={
                "system": system,
                "tools": [],
                "tool_mode": "native",
                "messages": grammar_history(request.messages),
            }
        )

    async def stream(self, request: LLMRequest) -> AsyncGenerator[StreamEvent, None]:
        placer, grid = self._placer(request)
        wire = self.wire_request(request)
        text_grammar = self.profile.action_format in TEXT_GRAMMARS
        async with aclosing(self.inner.stream(wire)) as events:
            async for event in events:
                if isinstance(event, ToolCallStart | ToolArgsDelta | ToolCallDone):
                    continue  # whole calls are mapped at the end
                if not isinstance(event, ResponseDone):
                    yield event
                    continue
                response = event.response
                if text_grammar and request.tools:
                    calls = TEXT_GRAMMARS[self.profile.action_format](response.text, placer)
                else:
                    calls = qwen_tool.calls_from(response.tool_calls, placer, grid)
                calls = placer.annotate(calls)
                for call in calls:
                    for out in call_events(call):
                        yield out
                update: dict[str, Any] = {"tool_calls": calls}
                if calls and response.stop_reason in ("end_turn", "stop", "stop_sequence"):
                    update["stop_reason"] = "tool_use"
                yield ResponseDone(response=response.model_copy(update=update))
