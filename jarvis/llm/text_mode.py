"""Tool calling for models without native tools: a block protocol in the model's reply.

The protocol (told to the model by :func:`jarvis.llm.text_prompt.render_tools_prompt`)::

    <tool_call>{"name": "click", "arguments": {"x": 120, "y": 48}}</tool_call>

One JSON object per block, several blocks per reply, run in order. Also accepted,
because models drift: the same JSON inside a ```tool_call or ```json fence (or a
bare ``` fence, or a fence around ``<tool_call>`` blocks), a bare JSON object in the
text whose "name" is an offered tool (or that has "arguments"), a list of call objects
in one block, "tool" for "name" and "parameters"/"args"/"input" for "arguments", and
arguments given as a JSON string, and Python-literal dicts (single quotes, True/None)
where JSON fails. Reasoning is never parsed: a ``<think>...</think>`` block stays text,
and a reply that closes a ``</think>`` no ``<think>`` opened (templates that open it in
the prompt) has its calls read only after it, so a call drafted while thinking never
runs. Broken JSON inside a ``<tool_call>`` block or a
tool_call fence gives a ToolCall with ``parse_error`` set, never an exception; broken
bare JSON stays text.

Tool results go back to the model as user text::

    <tool_result name="click" call_id="call_1" ok="true">
    {"ok": true}
    </tool_result>

:class:`BlockFilter` strips call blocks from the text as it streams: it withholds
anything that may start a block until it knows, so the streamed text equals
:func:`parse_tool_calls` on the whole reply, however the reply was chunked.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncGenerator, Iterable
from contextlib import aclosing
from typing import Any

from jarvis.llm.pyliteral import literal as _literal
from jarvis.llm.pyliteral import literal_end as _literal_end
from jarvis.llm.text_prompt import CLOSE, OPEN
from jarvis.llm.types import (
    ResponseDone,
    StreamEvent,
    TextDelta,
    ToolArgsDelta,
    ToolCall,
    ToolCallDone,
    ToolCallStart,
    ToolSpec,
    UsageSoFar,
)

FENCE = "```"
_CALL_FENCES = frozenset({"tool_call", "tool", "tool_calls"})
_ARG_KEYS = ("arguments", "parameters", "args", "input")
_CANDIDATE = re.compile(r"[<`{]")
_BARE_START = re.compile(r"""\{\s*["'](?:name|tool)["']\s*:""")
_BARE_PREFIX = re.compile(
    r"""\{\s*(?:["'](?:n(?:a(?:m(?:e(?:["']\s*)?)?)?)?|t(?:o(?:o(?:l(?:["']\s*)?)?)?)?)?)?"""
)
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
_NAME_GUESS = re.compile(r'"(?:name|tool)"\s*:\s*"([^"\\]{1,100})"')
_DECODER = json.JSONDecoder()

# --- parsing ------------------------------------------------------------------------


def _new_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"


def _call_from(obj: Any, loose: bool, known: frozenset[str]) -> ToolCall | None:
    """A ToolCall from a decoded object; ``loose`` objects must look like a call."""
    if not isinstance(obj, dict):
        return None if loose else _broken("", f"a tool call must be a JSON object, got {obj!r}")
    name = obj.get("name", obj.get("tool"))
    arg_key = next((k for k in _ARG_KEYS if k in obj), None)
    if loose and not (isinstance(name, str) and (arg_key or name in known)):
        return None
    if not isinstance(name, str) or not name:
        return _broken("", 'the tool call has no "name"')
    args: Any = obj.get(arg_key) if arg_key else {}
    if args is None:
        args = {}
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as exc:
            return _broken(name, f"arguments are not valid JSON: {exc.msg}")
    if not isinstance(args, dict):
        return _broken(name, f"arguments must be a JSON object, got {type(args).__name__}")
    return ToolCall(id=_new_id(), name=name, arguments=args)


def _broken(name: str, error: str) -> ToolCall:
    return ToolCall(id=_new_id(), name=name or "unknown", parse_error=error)


def _calls_from_json(text: str, known: frozenset[str]) -> list[ToolCall]:
    """The calls in a block that must hold calls; broken JSON gives one call with parse_error."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        try:
            value = _literal(text)
        except ValueError:
            pass
        else:
            items = value if isinstance(value, list) else [value]
            return [c for c in (_call_from(i, False, known) for i in items) if c is not None]
        guess = _NAME_GUESS.search(text)
        snippet = text.strip()[:200]
        return [
            _broken(
                guess.group(1) if guess else "",
                f"tool call is not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno}): "
                f"{snippet}",
            )
        ]
    items = value if isinstance(value, list) else [value]
    return [c for c in (_call_from(i, False, known) for i in items) if c is not None]


class _Wait(Exception):
    """More text is needed to decide what this position starts."""


def _tool_call_block(
    buf: str, i: int, final: bool, known: frozenset[str]
) -> tuple[int, list[ToolCall]]:
    start = i + len(OPEN)
    close = buf.find(CLOSE, start)
    if close < 0:
        if not final:
            raise _Wait
        return len(buf), _calls_from_json(buf[start:], known)
    return close + len(CLOSE), _calls_from_json(buf[start:close], known)


def _fence(buf: str, i: int, final: bool, known: frozenset[str]) -> tuple[int, str, list[ToolCall]]:
    newline = buf.find("\n", i + len(FENCE))
    if newline < 0:
        if not final:
            raise _Wait
        return len(buf), buf[i:], []
    info = buf[i + len(FENCE) : newline].strip().lower()
    close = buf.find(FENCE, newline + 1)
    if close < 0 and not final:
        raise _Wait
    end = len(buf) if close < 0 else close + len(FENCE)
    inner = buf[newline + 1 : len(buf) if close < 0 else close]
    if OPEN in inner:
        visible, calls, _ = scan(inner, True, known)
        if not visible.strip():
            return end, "", calls
        closing = FENCE if close >= 0 else ""
        return end, buf[i : newline + 1] + visible + closing, calls
    if info in _CALL_FENCES:
        return end, "", _calls_from_json(inner, known)
    try:
        value = json.loads(inner)
    except json.JSONDecodeError:
        return end, buf[i:end], []
    call = _call_from(value, True, known)
    return (end, "", [call]) if call is not None else (end, buf[i:end], [])


def _bare(
    buf: str, i: int, final: bool, known: frozenset[str]
) -> tuple[int, list[ToolCall]] | None:
    if not _BARE_START.match(buf, i):
        if not final and _BARE_PREFIX.fullmatch(buf, i):
            raise _Wait
        return None
    try:
        value, end = _DECODER.raw_decode(buf, i)
    except json.JSONDecodeError:
        literal_end = _literal_end(buf, i)
        if literal_end is None:
            if not final:
                raise _Wait from None
            return None
        try:
            value, end = _literal(buf[i:literal_end]), literal_end
        except ValueError:
            return None
    call = _call_from(value, True, known)
    return (end, [call]) if call is not None else None


def _block_at(
    buf: str, i: int, final: bool, known: frozenset[str]
) -> tuple[int, str, list[ToolCall]] | None:
    """(end, visible text, calls) for a block starting at ``i``, or None if none starts here."""
    rest = buf[i : i + len(OPEN)]
    if buf.startswith(THINK_OPEN, i):  # reasoning stays text: nothing in it runs
        close = buf.find(THINK_CLOSE, i)
        if close < 0 and not final:
            raise _Wait
        end = len(buf) if close < 0 else close + len(THINK_CLOSE)
        return end, buf[i:end], []
    if not final and len(rest) < len(THINK_OPEN) and THINK_OPEN.startswith(rest):
        raise _Wait
    if buf.startswith(OPEN, i):
        end, calls = _tool_call_block(buf, i, final, known)
        return end, "", calls
    if buf.startswith(FENCE, i):
        return _fence(buf, i, final, known)
    if not final and len(rest) < len(OPEN) and (OPEN.startswith(rest) or FENCE.startswith(rest)):
        raise _Wait
    if buf[i] == "{":
        found = _bare(buf, i, final, known)
        return None if found is None else (found[0], "", found[1])
    return None


def scan(buf: str, final: bool, known: frozenset[str]) -> tuple[str, list[ToolCall], int]:
    """Split ``buf`` into visible text and calls; returns how much of ``buf`` was decided.

    With ``final`` False it stops at the first position that may start a block it
    cannot decide yet; with ``final`` True it decides everything.
    """
    out: list[str] = []
    calls: list[ToolCall] = []
    pos = 0
    while pos < len(buf):
        match = _CANDIDATE.search(buf, pos)
        if match is None:
            out.append(buf[pos:])
            pos = len(buf)
            break
        i = match.start()
        out.append(buf[pos:i])
        pos = i
        try:
            block = _block_at(buf, i, final, known)
        except _Wait:
            break
        if block is None:
            out.append(buf[i])
            pos = i + 1
            continue
        pos, visible, found = block
        out.append(visible)
        calls.extend(found)
    return "".join(out), calls, pos


def _after_unopened_think(text: str) -> int:
    """Where the answer starts when the reply closes a ``</think>`` no ``<think>`` opened."""
    close = text.find(THINK_CLOSE)
    if close >= 0 and THINK_OPEN not in text[:close]:
        return close + len(THINK_CLOSE)
    return 0


def parse_tool_calls(text: str, known_tools: Iterable[str] = ()) -> tuple[str, list[ToolCall]]:
    """(text without call blocks, calls) for a whole reply."""
    start = _after_unopened_think(text)
    visible, calls, _ = scan(text[start:], True, frozenset(known_tools))
    return text[:start] + visible, calls


STRAY_CALL_ERROR = (
    "this reply wrote a tool call as text, and nothing was run: call the tool itself "
    "(native tool calling is in use)"
)


def stray_calls(text: str, tools: Iterable[str], run: bool) -> list[ToolCall]:
    """Tool calls written as text in a native-mode reply: the calls themselves (``run``), or
    one failed call per call telling the model to call the tool natively (never dropped)."""
    _, calls = parse_tool_calls(text, tools)
    if run:
        return calls
    return [ToolCall(id=c.id, name=c.name, parse_error=STRAY_CALL_ERROR) for c in calls]


class BlockFilter:
    """Streaming version of :func:`parse_tool_calls`: feed chunks, get the visible text."""

    def __init__(self, known_tools: Iterable[str] = ()) -> None:
        self._known = frozenset(known_tools)
        self._buf = ""
        self._calls: list[ToolCall] = []

    def feed(self, chunk: str) -> str:
        self._buf += chunk
        return self._run(final=False)

    def flush(self) -> str:
        return self._run(final=True)

    def take_calls(self) -> list[ToolCall]:
        """Calls completed since the last take."""
        calls, self._calls = self._calls, []
        return calls

    def _run(self, final: bool) -> str:
        visible, calls, consumed = scan(self._buf, final, self._known)
        self._buf = self._buf[consumed:]
        self._calls.extend(calls)
        return visible


def call_events(call: ToolCall) -> list[StreamEvent]:
    """The stream events for a call that arrived whole."""
    return [
        ToolCallStart(id=call.id, name=call.name),
        ToolArgsDelta(id=call.id, delta=json.dumps(call.arguments, ensure_ascii=False)),
        ToolCallDone(call=call),
    ]


async def parse_stream(
    events: AsyncGenerator[StreamEvent, None], tools: list[ToolSpec]
) -> AsyncGenerator[StreamEvent, None]:
    """Turn a plain-text stream into one with tool calls parsed from the block protocol."""
    filt = BlockFilter(t.name for t in tools)
    shown: list[str] = []
    raw: list[str] = []

    def pending(visible: str) -> list[StreamEvent]:
        filt.take_calls()  # calls are decided on the whole reply (reasoning may close late)
        if not visible:
            return []
        shown.append(visible)
        return [TextDelta(text=visible)]

    async with aclosing(events) as stream:
        async for event in stream:
            if isinstance(event, TextDelta):
                raw.append(event.text)
                for out in pending(filt.feed(event.text) if tools else event.text):
                    yield out
            elif isinstance(event, UsageSoFar):
                yield event
            elif isinstance(event, ResponseDone):
                for out in pending(filt.flush() if tools else ""):
                    yield out
                calls = parse_tool_calls("".join(raw), (t.name for t in tools))[1] if tools else []
                for call in calls:
                    for out in call_events(call):
                        yield out
                text = "".join(shown).strip()
                response = event.response.model_copy(
                    update={"text": text, "tool_calls": calls, "tool_mode": "text"}
                )
                if calls and response.stop_reason in ("end_turn", "stop", "stop_sequence"):
                    response.stop_reason = "tool_use"
                yield ResponseDone(response=response)
            else:
                yield event
