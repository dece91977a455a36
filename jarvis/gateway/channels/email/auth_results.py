"""Reading ``Authentication-Results`` headers (RFC 8601): pure functions, failing closed.

:func:`parse` reads one header value into its authserv-id and results, property values
unquoted (``header.d="example.com"`` is ``example.com``), or gives None for anything
outside the grammar. A second parser (``authres``) must count the same results.

:func:`trusted_values` picks which headers of a mail are the receiving server's, by
position. Headers are prepended on the way, so everything below the receiver's own
``Received`` header (and the headers it wrote right under it) was in the mail when it
arrived: the sender's, who may forge any header there. So:

- the topmost header of a trusted authserv-id is the receiver's;
- when it sits directly below a ``Received`` header, the trusted headers that follow it
  without a gap are read together with it (a receiver that writes its results for one
  message in several headers puts them all there). The sender's own headers begin right
  after that run, so a forged header of the trusted id can join it: the run counts only
  when its headers agree (:func:`disagreement`);
- any other header of a trusted id (further down, after another header) is the sender's
  and counts for nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import authres

_PAIR = re.compile(r'([A-Za-z0-9_.\-/]+)=("(?:[^"\\]|\\.)*"|[^\s";]+)(?:\s+|$)')
_ESCAPED = re.compile(r"\\(.)")
_COMMENT = re.compile(r"\((?:[^()\\]|\\.)*\)")


@dataclass(frozen=True)
class Result:
    """One resinfo: ``dkim=pass header.d=example.com`` -> method, result, properties."""

    method: str
    result: str
    props: dict[str, str] = field(default_factory=dict)
    """``ptype.property`` (and ``reason``) -> the value, unquoted; keys lowercased."""

    def prop(self, key: str) -> str | None:
        value = self.props.get(key)
        return value.strip().lower() if value is not None else None


@dataclass(frozen=True)
class Header:
    authserv_id: str
    results: tuple[Result, ...]


def _split(value: str) -> list[str] | None:
    """The value cut at each ``;`` outside quoted strings, comments (nested ones too)
    turned into a space; None when a quoted string or a comment is not closed."""
    parts: list[str] = []
    current: list[str] = []
    i, n = 0, len(value)
    while i < n:
        c = value[i]
        if c == '"':
            j = i + 1
            while j < n and value[j] != '"':
                j += 2 if value[j] == "\\" else 1
            if j >= n:
                return None
            current.append(value[i : j + 1])
            i = j + 1
        elif c == "(":
            depth, j = 1, i + 1
            while j < n and depth:
                if value[j] == "\\":
                    j += 2
                    continue
                depth += {"(": 1, ")": -1}.get(value[j], 0)
                j += 1
            if depth:
                return None
            current.append(" ")
            i = j
        elif c == ")":
            return None
        elif c == ";":
            parts.append("".join(current))
            current = []
            i += 1
        else:
            current.append(c)
            i += 1
    parts.append("".join(current))
    return parts


def _unquote(value: str) -> str:
    if value.startswith('"'):
        return _ESCAPED.sub(r"\1", value[1:-1])
    return value


def _resinfo(text: str) -> Result | None:
    pairs: list[tuple[str, str]] = []
    rest = text
    while rest:
        match = _PAIR.match(rest)
        if match is None:
            return None
        pairs.append((match.group(1).lower(), _unquote(match.group(2))))
        rest = rest[match.end() :]
    if not pairs:
        return None
    (method, result), props = pairs[0], pairs[1:]
    keys = [k for k, _ in props]
    if len(set(keys)) != len(keys):  # one property said twice: which one counts?
        return None
    return Result(method.partition("/")[0], result.strip().lower(), dict(props))


def parse(value: str) -> Header | None:
    """One header value read cleanly, or None when any part of it is off the grammar."""
    parts = _split(re.sub(r"\s+", " ", value))
    if parts is None or len(parts) < 2:
        return None
    head = parts[0].split()
    if not head or len(head) > 2 or (len(head) == 2 and not head[1].isdigit()):
        return None
    results: list[Result] = []
    texts = [p.strip() for p in parts[1:] if p.strip()]
    for text in texts:
        if text.lower() == "none":  # "no-result"
            continue
        result = _resinfo(text)
        if result is None:
            return None
        results.append(result)
    if not _second_parser_agrees(value, len(results)):
        return None
    return Header(head[0].lower(), tuple(results))


def _second_parser_agrees(value: str, count: int) -> bool:
    try:
        parsed: Any = authres.AuthenticationResultsHeader.parse_value(value)
    except Exception:  # the library raises several kinds of error for garbage
        return False
    return len(parsed.results) == count


def authserv_id_of(value: str) -> str:
    """The authserv-id of a raw header value (comments removed), lowercased; read even
    when the rest of the value is off the grammar, so a broken header of a trusted id is
    still seen as that id's (and fails), never skipped for one further down."""
    head = _COMMENT.sub(" ", value).split(";", 1)[0].split()
    return head[0].lower() if head else ""


def trusted_values(
    items: Sequence[tuple[str, str]], authserv_ids: tuple[str, ...]
) -> tuple[list[str], str | None]:
    """The raw values of the receiver's headers among ``items`` (the mail's headers, top
    first), as the module docstring says; or ([], the reason there are none)."""
    if not authserv_ids:
        return [], "no authserv_id configured in whitelist.json"

    def trusted(index: int) -> bool:
        name, value = items[index]
        return name.lower() == "authentication-results" and authserv_id_of(value) in authserv_ids

    top = next((i for i in range(len(items)) if trusted(i)), None)
    if top is None:
        return [], f"no Authentication-Results from {' or '.join(authserv_ids)}"
    end = top + 1
    if top > 0 and items[top - 1][0].lower() == "received":
        while end < len(items) and trusted(end):
            end += 1
    return [value for _, value in items[top:end]], None


def disagreement(headers: Sequence[Header]) -> str | None:
    """Why the results of several headers of one authserv-id cannot be read together, or
    None. DKIM and DMARC are each reported by one header of the run, or by several that
    say exactly the same: a second header that adds to them, or says otherwise, is where
    the sender's forged header would be."""
    if len(headers) < 2:
        return None
    for method in ("dkim", "dmarc"):
        said = {_said(header, method) for header in headers} - {()}
        if len(said) > 1:
            return f"the {method} results of {headers[0].authserv_id}'s headers disagree"
    return None


def _said(header: Header, method: str) -> tuple[tuple[str, str], ...]:
    """What ``header`` says about ``method``: each result with the domain it is for."""
    domain = dkim_domain if method == "dkim" else lambda r: r.prop("header.from")
    return tuple(sorted((r.result, domain(r) or "") for r in header.results if r.method == method))


def dkim_domain(result: Result) -> str | None:
    d = result.prop("header.d")
    if d is None:
        i = result.prop("header.i")
        d = i.rpartition("@")[2] if i else None
    return d
