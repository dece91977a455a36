"""What every text grammar shares: the reply cleaned of what serving stacks add, and
calls written as code read with :mod:`ast` (never evaluated).

What serving stacks do to the text is undone first (:func:`clean_reply`): reasoning
(``<think>...</think>``, or a reply that starts inside it and only closes it) is dropped
when the answer outside it says anything, so a call drafted while thinking never runs in
place of the answer's; a reply that is all reasoning (the model wrote its action inside
``<think>`` and stopped) is read from its reasoning; full-width punctuation outside quotes
(``Action：``, ``（x，y）``) reads as ASCII. An action that cannot be run becomes a call
with ``parse_error`` set, which the agent reports back to the model.
"""

from __future__ import annotations

import ast
import re
import uuid
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from jarvis.llm.types import ToolCall

Point = Callable[[Sequence[float]], tuple[int, int]]
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.S)
_FULL_WIDTH = str.maketrans({"（": "(", "）": ")", "，": ",", "：": ":", "［": "[", "］": "]"})


def strip_reasoning(text: str) -> str:
    """The reply without its reasoning: ``<think>...</think>`` blocks, and everything up to
    a ``</think>`` that no ``<think>`` opened (chat templates that open it in the prompt).

    When nothing but blanks is left outside the reasoning, the reasoning is the reply (its
    last block: where a model that acts while thinking wrote its action)."""
    blocks: list[str] = []
    close = text.find("</think>")
    if close >= 0 and "<think>" not in text[:close]:
        blocks.append(text[:close])
        text = text[close + len("</think>") :]
    blocks += [m.group(1) for m in _THINK.finditer(text)]
    answer = _THINK.sub("", text)
    if answer.strip() or not any(b.strip() for b in blocks):
        return answer
    return [b for b in blocks if b.strip()][-1].strip()


def ascii_punctuation(text: str) -> str:
    """Full-width brackets, commas and colons outside quoted strings as ASCII ones."""
    out: list[str] = []
    quote = ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = ""
            out.append(ch)
        elif ch in "'\"":
            quote = ch
            out.append(ch)
        else:
            out.append(ch.translate(_FULL_WIDTH))
    return "".join(out)


def clean_reply(text: str) -> str:
    return ascii_punctuation(strip_reasoning(text))


class GrammarError(ValueError):
    pass


def new_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"


def numbers(text: str) -> list[float]:
    """The numbers in a point string: "(x,y)", "[x1,y1,x2,y2]", "<point>x y</point>"."""
    return [float(n) for n in _NUMBER.findall(text)]


def point_of(value: Any, point: Point, what: str) -> tuple[int, int]:
    if isinstance(value, str):
        nums = numbers(value)
    elif isinstance(value, list | tuple):
        nums = [float(v) for v in value]
    else:
        raise GrammarError(f"{what} must be a point like '(x,y)', got {value!r}")
    if len(nums) not in (2, 4):
        raise GrammarError(f"{what} must be a point (x,y) or a box (x1,y1,x2,y2), got {value!r}")
    return point(nums)


def keys_action(text: str) -> tuple[str, dict[str, Any]]:
    parts = [k for k in re.split(r"[\s+]+", text.strip()) if k]
    if not parts:
        raise GrammarError("a key action needs a key, e.g. 'enter' or 'ctrl c'")
    if len(parts) == 1:
        return "press_key", {"key": parts[0]}
    return "hotkey", {"keys": "+".join(parts)}


def parse_call(source: str) -> tuple[str, dict[str, Any], list[Any]]:
    """(name, keyword arguments, positional arguments) of one call written as code."""
    try:
        with warnings.catch_warnings():  # a lone backslash in a typed text stays as it is
            warnings.simplefilter("ignore")
            node = ast.parse(source.strip(), mode="eval").body
    except SyntaxError as exc:
        raise GrammarError(f"not a call: {source.strip()[:120]!r} ({exc.msg})") from exc
    if not isinstance(node, ast.Call):
        raise GrammarError(f"not a call: {source.strip()[:120]!r}")
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    try:
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
        args = [ast.literal_eval(a) for a in node.args]
    except ValueError as exc:
        raise GrammarError(f"arguments must be literals: {source.strip()[:120]!r}") from exc
    return name, kwargs, args


_CALL_START = re.compile(r"([A-Za-z_][\w.]*)\s*[(（]")
_CONTENT = re.compile(r"\s*content\s*=\s*(['\"])")


def _content_end(text: str, start: int, quote: str) -> tuple[int, int] | None:
    """(where the text of ``content=`` ends, where its call ends): at the first closing
    quote and bracket that end a line, else the last ones; None when it never closes."""
    close = re.compile(re.escape(quote) + r"\s*[)）]")
    found = list(close.finditer(text, start))
    for m in found:
        if re.match(r"[ \t]*(?:\n|$)", text[m.end() :]):
            return m.start(), m.end()
    return (found[-1].start(), found[-1].end()) if found else None


def _content_call(name: str, quote: str, body: str) -> str:
    """The call with its text argument written as a Python literal: quotes the model left
    unescaped are escaped (as ByteDance's parser does for ``type``), real line breaks
    become ``\\n``; what the model escaped itself is read as Python reads it."""
    body = re.sub(r"(?<!\\)" + re.escape(quote), "\\" + quote, body)
    body = body.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n")
    return f"{name}(content={quote}{body}{quote})"


def read_calls(text: str) -> list[str]:
    """The calls of an action text as sources :func:`parse_call` reads. A call whose
    argument is ``content='...'`` (type, finished, call_user) is read as ByteDance's
    UI-TARS parser reads it: its text runs to the closing quote and bracket, apostrophes and
    line breaks in it included, and is never changed; the other calls have full-width
    brackets, commas and colons outside their quoted arguments read as ASCII. An
    unterminated call is kept as it is (:func:`parse_call` then says why it is not one)."""
    calls: list[str] = []
    pos = 0
    while m := _CALL_START.search(text, pos):
        content = _CONTENT.match(text, m.end())
        if content:
            end = _content_end(text, content.end(), content.group(1))
            if end is None:
                calls.append(text[m.start() :])
                break
            body = text[content.end() : end[0]]
            calls.append(_content_call(m.group(1), content.group(1), body))
            pos = end[1]
            continue
        rest = ascii_punctuation(text[m.start() :])
        found = split_calls(rest)
        if not found or not rest.startswith(found[0]):
            calls.append(rest)
            break
        calls.append(found[0])
        pos = m.start() + len(found[0])
    return calls


def to_calls(actions: list[tuple[str, dict]] | str) -> list[ToolCall]:
    if isinstance(actions, str):
        return [ToolCall(id=new_id(), name="unknown", parse_error=actions)]
    return [ToolCall(id=new_id(), name=n, arguments=a) for n, a in actions]


def split_calls(text: str) -> list[str]:
    """Top-level calls in an action text (several may follow each other)."""
    calls: list[str] = []
    depth, start, quote = 0, None, ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = ""
            continue
        if ch in "'\"" and depth:
            quote = ch
        elif ch == "(":
            if depth == 0:
                m = re.search(r"[A-Za-z_][\w.]*\s*$", text[:i])
                start = m.start() if m else i
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
            if depth == 0 and start is not None:
                calls.append(text[start : i + 1])
                start = None
    return calls
