"""Our messages as Messages API requests: the serializer of :mod:`jarvis.llm.anthropic`.

Images become base64 blocks, tool results come first in a user message, tool calls are
``tool_use`` blocks, and prompt-cache breakpoints go on the system prompt, the last tool
and the last user messages. Pure functions: tests read the wire directly.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from jarvis.llm.base import NOT_RUN
from jarvis.llm.computer_tool import BETA_HEADERS, COMPUTER_TOOL_NAME, computer_tools, tool_version
from jarvis.llm.types import ImagePart, LLMRequest, Message, TextPart, ToolCall, ToolResultPart

MAX_CACHE_BREAKPOINTS = 4
EPHEMERAL = {"type": "ephemeral"}


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
                block = results[use_id] = {
                    "type": "tool_result",
                    "tool_use_id": use_id,
                    "content": part.content,
                    "is_error": not part.ok,
                }
            else:
                block["content"] = f"{block['content']}\n{part.content}"
                block["is_error"] = block["is_error"] or not part.ok
            if part.image is not None:  # a zoom: the picture goes inside the tool result
                block["content"] = [
                    {"type": "text", "text": block["content"]},
                    _image_block(part.image),
                ]
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
    system: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    tail: bool = True,
) -> int:
    """Put ephemeral cache breakpoints in place (at most 4); returns how many were set.

    One on the system prompt, one on the last tool (caches all tools), and rolling
    ones on the last block of the last two user messages. Without ``tail`` the newest
    message gets none (no later request starts with it: a write there is never read);
    the earlier ones still read what the previous request wrote.
    """
    used = 0
    if system:
        system[-1]["cache_control"] = dict(EPHEMERAL)
        used += 1
    if tools:
        tools[-1]["cache_control"] = dict(EPHEMERAL)
        used += 1
    budget = min(2, MAX_CACHE_BREAKPOINTS - used)
    users = [m for m in messages if m["role"] == "user"]
    newest = users[-1] if users and not tail else None
    for message in reversed(messages):
        if budget <= 0:
            break
        if message["role"] == "user" and message["content"] and message is not newest:
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


def build_wire(
    request: LLMRequest,
    model: str,
    native_computer_tool: bool = False,
    computer_tool_version: str | None = None,
) -> Wire:
    """The ``messages.create`` arguments for ``request`` (pure; tests read it directly).

    Claude's computer tool comes in the version the model takes (a table in
    :mod:`jarvis.llm.computer_tool`, or ``computer_tool_version``) with its beta header.
    """
    system = [{"type": "text", "text": request.system}] if request.system else []
    messages = to_anthropic_messages(request.messages)
    version = tool_version(model, computer_tool_version)
    tools, computer = computer_tools(request.tools, request.messages, native_computer_tool, version)
    if request.cache:
        mark_cache(system, tools, messages, request.cache_tail)
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
        params["extra_headers"] = {"anthropic-beta": BETA_HEADERS[version]}
    return Wire(params=params, sent_tools=bool(tools), computer=computer)
