"""Tool calls read from a served open model's reply itself (DESIGN section 13).

A serving stack's tool parser turns the model's call into native ``tool_calls`` only when
it is set up for it, and it loses calls in known cases: vLLM 0.19's ``qwen3_coder`` /
``qwen3_xml`` parsers see only the answer, so a Qwen3.5 ``<tool_call>`` written inside
``<think>`` ends in ``reasoning`` with ``tool_calls: []`` (vllm-project/vllm#39056); a
server without a tool parser (or Ollama's and llama.cpp's fallbacks) leaves the block in
the text. So for served profiles Jarvis reads, in this order:

1. the native ``tool_calls``, when there are any;
2. the calls written in the answer (outside the reasoning): ``<tool_call>{json}</tool_call>``
   blocks (and the other shapes :func:`jarvis.llm.text_mode.parse_tool_calls` reads), and
   Qwen's XML form ``<tool_call><function=NAME><parameter=NAME>value</parameter>
   </function></tool_call>`` read as vLLM's ``qwen3_coder`` parser reads it (an unclosed
   block runs to the end, one newline around a value is dropped, a value is converted by
   the tool's schema: strings stay strings, anything else is JSON or a Python literal);
3. only when the answer has none: the calls in the reasoning, the ``<think>`` part of the
   text or the server's separate ``reasoning`` / ``reasoning_content`` field.
"""

from __future__ import annotations

import ast
import json
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from jarvis.llm.text_mode import parse_tool_calls
from jarvis.llm.types import LLMResponse, ToolCall, ToolSpec

Where = Literal["native", "text", "reasoning", ""]
_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.S)
_XML_CALL = re.compile(
    r"(?:<tool_call>\s*)?<function=([^>\n]*)>(.*?)(?:</function>\s*(?:</tool_call>)?|(?=<function=)|$)",
    re.S,
)
_PARAM = re.compile(r"<parameter=([^>\n]*)>(.*?)(?:</parameter>|(?=<parameter=)|$)", re.S)
_EMPTY_BLOCK = re.compile(r"<tool_call>\s*</tool_call>|<tool_call>\s*$")
_STRINGS = frozenset({"string", "str", "text", "varchar", "char", "enum"})


@dataclass(frozen=True)
class ServedReply:
    """The reply's calls and where they were found; ``text`` is the reply without them."""

    text: str
    calls: list[ToolCall] = field(default_factory=list)
    where: Where = ""


def split_reasoning(text: str) -> tuple[str, str]:
    """(the answer, the reasoning) of a reply: ``<think>...</think>`` blocks (an unclosed
    one runs to the end) and everything before a ``</think>`` no ``<think>`` opened (chat
    templates that open it in the prompt) are reasoning."""
    reasoning: list[str] = []
    close = text.find("</think>")
    if close >= 0 and "<think>" not in text[:close]:
        reasoning.append(text[:close])
        text = text[close + len("</think>") :]
    reasoning += [m.group(1) for m in _THINK.finditer(text)]
    return _THINK.sub("", text), "\n".join(r.strip() for r in reasoning if r.strip())


def _value(raw: str, schema: dict[str, Any]) -> Any:
    if raw.startswith("\n"):
        raw = raw[1:]
    if raw.endswith("\n"):
        raw = raw[:-1]
    kind = str(schema.get("type", "")).lower()
    if kind in _STRINGS:
        return raw
    if raw.strip().lower() == "null":
        return None
    try:
        return json.loads(raw)
    except ValueError:
        pass
    try:
        return ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return raw


def _properties(tools: Iterable[ToolSpec]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for tool in tools:
        props = tool.parameters.get("properties", {}) if isinstance(tool.parameters, dict) else {}
        out[tool.name] = props if isinstance(props, dict) else {}
    return out


def xml_calls(text: str, tools: Iterable[ToolSpec] = ()) -> tuple[str, list[ToolCall]]:
    """The Qwen XML calls in ``text`` (vLLM ``qwen3_coder`` / ``qwen3_xml`` form) and the
    text without them."""
    props = _properties(tools)
    calls: list[ToolCall] = []
    for match in _XML_CALL.finditer(text):
        name = match.group(1).strip()
        schema = props.get(name, {})
        arguments = {
            p.group(1).strip(): _value(p.group(2), schema.get(p.group(1).strip(), {}))
            for p in _PARAM.finditer(match.group(2))
        }
        call_id = f"call_{uuid.uuid4().hex[:16]}"
        if not name:
            calls.append(ToolCall(id=call_id, name="unknown", parse_error="no function name"))
            continue
        calls.append(ToolCall(id=call_id, name=name, arguments=arguments))
    rest = _EMPTY_BLOCK.sub("", _XML_CALL.sub("", text)) if calls else text
    return rest, calls


def read_calls(text: str, tools: Iterable[ToolSpec] = ()) -> tuple[str, list[ToolCall]]:
    """Every call written in ``text`` (XML form and the JSON forms), in order of place
    within each form, and the text without them."""
    specs = list(tools)
    rest, calls = xml_calls(text, specs)
    rest, json_calls = parse_tool_calls(rest, [t.name for t in specs])
    return rest, calls + json_calls


def served_reply(
    content: str, reasoning: str, native: list[ToolCall], tools: Iterable[ToolSpec] = ()
) -> ServedReply:
    """The calls of a served reply: native ones, else those in the answer, else (only
    then) those in the reasoning (``reasoning`` is the server's separate field)."""
    if native:
        return ServedReply(content, native, "native")
    specs = list(tools)
    answer, inline = split_reasoning(content)
    _, calls = read_calls(answer, specs)
    where: Where = "text"
    if not calls:
        thought = "\n".join(r for r in (reasoning, inline) if r.strip())
        _, calls = read_calls(thought, specs)
        where = "reasoning"
    if not calls:
        return ServedReply(content)
    text, _ = read_calls(content, specs)
    return ServedReply(text.strip(), calls, where)


_SERVER_TOOLS_OFF = re.compile(
    r"--jinja|--enable-auto-tool-choice|--tool-call-parser|cannot use tools with stream", re.I
)


def tools_switched_off(status: int, detail: str) -> bool:
    """True when the server says its tool calling is switched off by a start flag
    (llama.cpp: HTTP 500 "tools param requires --jinja flag"; vLLM: HTTP 400 '"auto" tool
    choice requires --enable-auto-tool-choice and --tool-call-parser to be set'; llama.cpp
    builds before streamed tool calls: "Cannot use tools with stream"): a served profile
    then writes its calls as text."""
    return status in (400, 422, 500) and bool(_SERVER_TOOLS_OFF.search(detail))


def served_response(
    response: LLMResponse, reasoning: str, tools: Iterable[ToolSpec]
) -> tuple[LLMResponse, Where]:
    """``response`` with its calls read as :func:`served_reply` reads them."""
    reply = served_reply(response.text, reasoning, response.tool_calls, tools)
    if reply.where in ("native", ""):
        return response, reply.where
    update: dict[str, Any] = {"text": reply.text, "tool_calls": reply.calls}
    if response.stop_reason in ("end_turn", "stop", "stop_sequence"):
        update["stop_reason"] = "tool_use"
    return response.model_copy(update=update), reply.where
