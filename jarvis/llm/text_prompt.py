"""The request side of tool calling in text (:mod:`jarvis.llm.text_mode`): the tools
described in the system prompt, past calls and results written as ``<tool_call>`` and
``<tool_result>`` blocks, and no tools sent."""

from __future__ import annotations

import json

from jarvis import prompts
from jarvis.llm.types import LLMRequest, Message, Part, TextPart, ToolCall, ToolResultPart, ToolSpec

OPEN = "<tool_call>"
CLOSE = "</tool_call>"


# --- rendering ----------------------------------------------------------------------


def render_tools_prompt(tools: list[ToolSpec]) -> str:
    """The system-prompt section that teaches the block protocol and lists the tools."""
    lines = [prompts.render_text("tools_text", open=OPEN, close=CLOSE)]
    for tool in tools:
        schema = json.dumps(tool.parameters, ensure_ascii=False, separators=(",", ":"))
        lines += ["", f"## {tool.name}", tool.description.strip(), f"arguments schema: {schema}"]
    return "\n".join(lines)


def format_tool_call(call: ToolCall) -> str:
    body = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
    return f"{OPEN}{body}{CLOSE}"


def format_tool_result(part: ToolResultPart) -> str:
    ok = "true" if part.ok else "false"
    return (
        f'<tool_result name="{part.name}" call_id="{part.call_id}" ok="{ok}">\n'
        f"{part.content}\n</tool_result>"
    )


def has_tool_history(messages: list[Message]) -> bool:
    return any(
        m.tool_calls or any(isinstance(p, ToolResultPart) for p in m.content) for m in messages
    )


def messages_to_text(messages: list[Message]) -> list[Message]:
    """The same conversation with tool calls and results written in the block protocol."""
    out: list[Message] = []
    for message in messages:
        if message.role == "assistant" and message.tool_calls:
            blocks = [format_tool_call(c) for c in message.tool_calls]
            text = "\n".join([message.text, *blocks]) if message.text else "\n".join(blocks)
            out.append(Message(role="assistant", content=[TextPart(text=text)]))
        elif any(isinstance(p, ToolResultPart) for p in message.content):
            parts: list[Part] = [
                TextPart(text=format_tool_result(p)) if isinstance(p, ToolResultPart) else p
                for p in message.content
            ]
            out.append(Message(role=message.role, content=parts))
        else:
            out.append(message)
    return out


def text_request(request: LLMRequest) -> LLMRequest:
    """The request as sent in text mode: tools described in the system prompt, none sent."""
    system = request.system
    if request.tools:
        system = f"{system}\n\n{render_tools_prompt(request.tools)}"
    return request.model_copy(
        update={"system": system, "messages": messages_to_text(request.messages), "tools": []}
    )
