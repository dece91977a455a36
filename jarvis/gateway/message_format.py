"""Message entries of the queue files: the :class:`Message` record and its markdown form.

One entry per message (hand-written ones without ``id:`` get one, written back)::

    ## [2026-02-01 15:30:00] from:user via:tui id:m-20260201-153000-1a2b3c
    Open Chrome and search today's weather

    ---

A header is ``## [YYYY-MM-DD HH:MM(:SS)]`` followed by ``key:value`` pairs. Values with
spaces are double-quoted (``from:"Ada Lovelace"``; ``\\"`` and ``\\\\`` escape inside
quotes). The near misses people type are read as headers too, and said
(:func:`forgiven_headings`): no space after ``##`` (``##[2026-...]``) and an unquoted value
with spaces (``from:Ada Lovelace``: a bare word after a value belongs to it). Any other
line, even one starting with ``## [``, is text (reported as a near miss). Known keys:
``from via id priority reply_to source task outcome archived``; other pairs are kept in
``meta``. Archived entries add ``task:``, ``outcome:``, ``archived:`` and a ``**Result:**``
paragraph. An entry runs to the next header (so one without its ``---`` line ends there);
its last ``---`` line closes it, so ``---`` lines inside the text need no escaping. Text
lines that are headers, the forgiven near misses included (and, in archived entries, lines
starting with ``**Result:**``), are written with one more leading backslash, so round trips
are exact.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from jarvis.gateway.markdown import (
    Document,
    Malformed,
    Section,
    canonical_time,
    clean_block,
    clean_line,
    error_summary,
    escape_lines,
    format_priority,
    format_timestamp,
    has_surrogates,
    normalize_newlines,
    parse_priority,
    parse_timestamp,
    render_document,
    short_hash,
    split_sections,
    unescape_lines,
)
from jarvis.gateway.settings import MAX_MESSAGE_CHARS as MAX_MESSAGE_CHARS
from jarvis.redaction import redact

HEADER_START = "## ["
RESULT_MARK = "**Result:**"
SEPARATOR = "---"
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+-]*")
KEY_PATTERN = re.compile(r"[a-z_][a-z0-9_]*")
_HEADER = re.compile(
    r"##(?P<gap>[ \t]*)\[(?P<ts>\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2})?)\]"
    r"(?P<rest>(?:\s.*)?)"
)
_TOKEN = re.compile(r'\s+(?P<key>[A-Za-z_][A-Za-z0-9_-]*):(?P<value>"(?:[^"\\]|\\.)*"|[^\s"]\S*)')
_BARE = re.compile(r'\s+[^\s"]+')
"""A word with no ``key:`` after an unquoted value: the rest of that value."""
NO_SPACE = "no space after '##'"
UNQUOTED = "a value with spaces not in double quotes"
NO_SEPARATOR = f"no '{SEPARATOR}' line closing the message"
_LOOKS_LIKE_HEADER = re.compile(r"\s{0,3}(?:## \[|#{1,6}\s*\[\s*\d)")
"""A line a person meant as a header: ``## [``, or any ``#``-heading opening ``[`` and a
digit (``##[2026-...``, ``### [2026-...``)."""
KNOWN_KEYS = ("from", "via", "id", "priority", "reply_to", "source", "task", "outcome", "archived")


class Message(BaseModel):
    """One message from a person, in canonical form (so that write-then-read is exact)."""

    id: str
    timestamp: datetime
    sender: str = "user"
    channel: str = "inbox"
    text: str
    priority: int | None = None
    reply_to: str | None = None
    source: str | None = None
    task_id: str | None = None
    outcome: str | None = None
    archived_at: datetime | None = None
    result: str | None = None
    meta: dict[str, str] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not ID_PATTERN.fullmatch(value):
            raise ValueError(f"invalid message id {value!r} (letters, digits and ._:@+- only)")
        return value

    @field_validator("timestamp", "archived_at")
    @classmethod
    def _time(cls, value: datetime | None) -> datetime | None:
        return None if value is None else canonical_time(value)

    @field_validator("sender", "channel")
    @classmethod
    def _name(cls, value: str) -> str:
        value = clean_line(value)
        if not value:
            raise ValueError("must not be empty")
        return value

    @field_validator("reply_to", "source", "task_id", "outcome")
    @classmethod
    def _optional_line(cls, value: str | None) -> str | None:
        return (clean_line(value) or None) if value is not None else None

    @field_validator("text")
    @classmethod
    def _text(cls, value: str) -> str:
        return redact(clean_block(value))

    @field_validator("result")
    @classmethod
    def _result(cls, value: str | None) -> str | None:
        return (redact(clean_block(value)) or None) if value is not None else None

    @field_validator("meta")
    @classmethod
    def _meta(cls, value: dict[str, str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for key, item in value.items():
            norm = normalize_key(key)
            if not KEY_PATTERN.fullmatch(norm) or norm in KNOWN_KEYS:
                raise ValueError(f"invalid or reserved header key {key!r}")
            out[norm] = redact(clean_line(item))
        return out

    @model_validator(mode="after")
    def _result_needs_outcome(self) -> Message:
        if self.result is not None and self.outcome is None:
            raise ValueError("a result needs an outcome")
        return self

    def same_as(self, other: Message) -> bool:
        """The same message (a copy left by an interrupted move), whatever happened to it."""
        return (self.id, self.timestamp, self.sender, self.channel, self.text) == (
            other.id,
            other.timestamp,
            other.sender,
            other.channel,
            other.text,
        )


def normalize_key(key: str) -> str:
    return key.strip().lower().replace("-", "_")


def new_message_id(at: datetime) -> str:
    return f"m-{at:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def content_id(message: Message) -> str:
    """The id a hand-written entry gets: the same entry always gets the same id."""
    digest = short_hash(message.sender, message.channel, message.text)
    return f"m-{message.timestamp:%Y%m%d-%H%M%S}-{digest}"


# --- format -----------------------------------------------------------------------
def _split_header(line: str) -> tuple[str, list[tuple[str, str]], list[str]] | None:
    """The timestamp text, the key/value pairs and the near misses forgiven of a header
    line; None if it is not one."""
    if not line.startswith("##"):
        return None
    match = _HEADER.fullmatch(line)
    if not match:
        return None
    forgiven = [] if match["gap"] == " " else [NO_SPACE]
    rest, pos, pairs = match["rest"], 0, []
    quoted = True
    while rest[pos:].strip():
        token = _TOKEN.match(rest, pos)
        if token:
            pairs.append((normalize_key(token["key"]), _unquote(token["value"])))
            quoted, pos = token["value"].startswith('"'), token.end()
            continue
        word = _BARE.match(rest, pos)
        if not word or quoted:
            return None
        key, value = pairs[-1]
        pairs[-1] = (key, value + rest[pos : word.end()])
        pos = word.end()
        if UNQUOTED not in forgiven:
            forgiven.append(UNQUOTED)
    return match["ts"], pairs, forgiven


def is_header(line: str) -> bool:
    """A header: ``## [YYYY-MM-DD HH:MM:SS] key:value ...``, or one of the near misses
    forgiven (the same test splits a file into entries and escapes text lines)."""
    return _split_header(line) is not None


def header_id(line: str) -> str | None:
    """The ``id:`` a header line gives; None when the line is no header or gives no valid
    id (a hand-written entry: its id comes from its content, :func:`content_id`)."""
    split = _split_header(line)
    ids = [value for key, value in split[1] if key == "id"] if split else []
    return ids[0] if len(ids) == 1 and ID_PATTERN.fullmatch(ids[0]) else None


def _archived_structural(line: str) -> bool:
    return line.startswith(RESULT_MARK) or is_header(line)


def _structure(archived: bool) -> Callable[[str], bool]:
    """Only archived entries (with an outcome) have a ``**Result:**`` paragraph."""
    return _archived_structural if archived else is_header


def _quote(value: str) -> str:
    if value and not value.startswith('"') and not any(c.isspace() for c in value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _unquote(value: str) -> str:
    if value.startswith('"'):
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value


def format_message(message: Message) -> str:
    """One entry, without a trailing newline."""
    pairs: list[tuple[str, str | None]] = [
        ("from", message.sender),
        ("via", message.channel),
        ("id", message.id),
        ("priority", None if message.priority is None else format_priority(message.priority)),
        ("reply_to", message.reply_to),
        ("source", message.source),
        ("task", message.task_id),
        ("outcome", message.outcome),
        ("archived", message.archived_at.isoformat() if message.archived_at else None),
        *message.meta.items(),
    ]
    tokens = "".join(f" {key}:{_quote(value)}" for key, value in pairs if value is not None)
    lines = [f"{HEADER_START}{format_timestamp(message.timestamp)}]{tokens}"]
    structural = _structure(message.outcome is not None)
    lines += escape_lines(message.text.split("\n"), structural)
    if message.result:
        first, *rest = message.result.split("\n")
        lines += ["", f"{RESULT_MARK} {first}", *escape_lines(rest, structural)]
    lines += ["", SEPARATOR]
    return "\n".join(lines)


def _parse_header(line: str) -> tuple[datetime, dict[str, str]]:
    split = _split_header(line)
    if split is None:
        raise ValueError("not a header")
    stamp = parse_timestamp(split[0])
    values: dict[str, str] = {}
    for key, value in split[1]:
        if key in values:
            raise ValueError(f"header key {key!r} appears twice")
        values[key] = value
    return stamp, values


def _parse_section(section: Section) -> tuple[Message | Malformed, bool]:
    """The entry and whether it was given an id (hand-written without one)."""

    def bad(reason: str) -> tuple[Malformed, bool]:
        return Malformed(section.raw, reason, section.line), False

    if has_surrogates(section.raw):
        return bad("not valid UTF-8")
    try:
        stamp, values = _parse_header(section.lines[0])
    except ValueError as exc:
        return bad(str(exc))
    body = section.lines[1:]
    if body and body[-1].strip() == SEPARATOR:
        body = body[:-1]
    archived = bool(clean_line(values.get("outcome", "")))
    structural = _structure(archived)
    mark = len(body)
    if archived:
        mark = next((i for i, line in enumerate(body) if line.startswith(RESULT_MARK)), mark)
    result = None
    if mark < len(body):
        first = body[mark][len(RESULT_MARK) :]
        first = first[1:] if first.startswith(" ") else first
        result = "\n".join([first, *unescape_lines(body[mark + 1 :], structural)])
    text = "\n".join(unescape_lines(body[:mark], structural))
    if not clean_block(text):
        return bad("the message has no text")
    fields: dict[str, Any] = {"timestamp": stamp, "text": text, "result": result, "meta": {}}
    try:
        for key, value in values.items():
            if key == "priority":
                fields["priority"] = parse_priority(value)
            elif key == "archived":
                fields["archived_at"] = parse_timestamp(value)
            elif key in KNOWN_KEYS:
                name = {"from": "sender", "via": "channel", "task": "task_id"}.get(key, key)
                fields[name] = value
            else:
                fields["meta"][key] = value
        fields.setdefault("id", "m-pending")
        message = Message.model_validate(fields)
    except (ValueError, ValidationError) as exc:
        return bad(error_summary(exc))
    if "id" not in values:
        message.id = content_id(message)
        return message, True
    return message, False


def _salvage(section: Section) -> tuple[Message, bool, Malformed] | None:
    """An entry followed by junk (bytes that are not UTF-8, say) up to the next header: the
    entry up to one of its ``---`` lines (the last that gives a readable entry) and the
    rest as a malformed section, so that what follows an entry never makes it unreadable."""
    lines = section.lines
    closing = [i for i, line in enumerate(lines) if line.strip() == SEPARATOR]
    for end in reversed(closing):
        rest = lines[end + 1 :]
        skipped = next((i for i, line in enumerate(rest) if line.strip()), len(rest))
        if skipped == len(rest):
            continue  # nothing after this ---: the whole section was tried already
        item, assigned = _parse_section(Section(section.line, lines[: end + 1]))
        if isinstance(item, Message):
            tail = Malformed(
                "\n".join(rest[skipped:]),
                f"not part of an entry (after the {SEPARATOR} that closes the one above)",
                section.line + end + 1 + skipped,
            )
            return item, assigned, tail
    return None


def near_misses(text: str) -> list[Malformed]:
    """Lines that look like a header but are not one (read as text): warned about, with a
    hint at the usual mistake."""
    found = []
    for number, line in enumerate(normalize_newlines(text).split("\n"), start=1):
        if not _LOOKS_LIKE_HEADER.match(line) or is_header(line):
            continue
        if _HEADER.fullmatch(line):
            hint = 'after the time come key:value pairs, as in from:"Ada Lovelace"'
        else:
            hint = "a header is exactly '## [YYYY-MM-DD HH:MM:SS] key:value ...'"
        found.append(
            Malformed(line, f"looks like a header but is not one ({hint}); read as text", number)
        )
    return found


def forgiven_headings(text: str) -> list[tuple[int, str, str]]:
    """(line number, header line, what was forgiven) for each entry whose header is a near
    miss read as a header, or that has no ``---`` line of its own: said in the log when
    the inbox is read, so a person sees how a hand edit was taken."""
    found = []
    for section in split_sections(text, is_header)[1]:
        split = _split_header(section.lines[0])
        notes = list(split[2]) if split else []
        if all(line.strip() != SEPARATOR for line in section.lines):
            notes.append(NO_SEPARATOR)
        if notes:
            found.append((section.line, section.lines[0], "; ".join(notes)))
    return found


def parse_messages(text: str) -> Document[Message]:
    """Read a queue file; never raises, unreadable sections become :class:`Malformed`."""
    preamble, sections = split_sections(text, is_header)
    doc: Document[Message] = Document(preamble)
    doc.warnings = near_misses(text)
    for section in sections:
        item, assigned = _parse_section(section)
        salvaged = _salvage(section) if isinstance(item, Malformed) else None
        if salvaged is not None:
            item, assigned, tail = salvaged
            doc.items += [item, tail]
        else:
            doc.items.append(item)
        doc.changed |= assigned
    return doc


def render_messages(doc: Document[Message]) -> str:
    return render_document(doc, format_message)
