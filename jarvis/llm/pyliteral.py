"""Python-literal values in a model's reply (``{'name': 'click', 'arguments': {...}}``):
read with :func:`ast.literal_eval`, never evaluated. Models trained on Python write them
where JSON is asked for; :mod:`jarvis.llm.text_mode` falls back to them."""

from __future__ import annotations

import ast
import re
from typing import Any

_PYTHONIC = re.compile(r"'|\b(?:True|False|None)\b")


def literal(text: str) -> Any:
    """A Python-literal value (``{'name': 'click', ...}``), never evaluated; ValueError if
    not, or if it has neither a single quote nor True/False/None (then it is broken JSON)."""
    if not _PYTHONIC.search(text):
        raise ValueError("not a Python literal")
    try:
        return ast.literal_eval(text.strip())
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError) as exc:
        raise ValueError(str(exc)) from None


def literal_end(buf: str, i: int) -> int | None:
    """The end of the brace-balanced object starting at ``buf[i]``, or None if it is open."""
    depth, quote = 0, ""
    for j in range(i, len(buf)):
        ch = buf[j]
        if quote:
            if ch == quote and buf[j - 1] != "\\":
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return j + 1
    return None
