"""Tasks of ``data/todos.md``: the :class:`Todo` record and its markdown form.

Entry format (fields in this order; empty ones left out)::

    ### [T001] Open Chrome and search today's weather
    - status: pending
    - priority: normal
    - created: 2026-02-01 15:30:05
    - started: 2026-02-01 15:30:09
    - completed: 2026-02-01 15:32:40
    - source: tui
    - messages: m-20260201-153000-1a2b3c, m-20260201-153102-9f8e7d
    - reply_to: ada@example.com
    - parent: T000
    - summary: It is 21 degrees and sunny.
    - note: interrupted while in progress (2026-02-01 15:31:00); back to pending

    Description: the message text and any updates merged into it.

A header is exactly ``### [T<digits>] title``; ``### [] title`` or ``### [new] title`` are
hand-written tasks that get the next id (and a created time) written back. Field lines
``- key: value`` follow the header; longer values continue on lines indented by two spaces.
The description starts after the first other line (the writer leaves a blank one). Status:
pending, in_progress, completed, failed, needs_user, cancelled. Priority: an integer, larger
is more urgent, with names high (1), normal (0) and low (-1). Unknown fields are kept.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, get_args

from pydantic import BaseModel, Field, ValidationError, field_validator

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
    near_misses,
    now,
    parse_priority,
    parse_timestamp,
    render_document,
    split_sections,
    unescape_lines,
)
from jarvis.gateway.message_format import ID_PATTERN, KEY_PATTERN
from jarvis.redaction import redact
from jarvis.task_words import TaskStatus

TodoStatus = TaskStatus
"""The task status words of every face (:mod:`jarvis.task_words`)."""
STATUSES: tuple[str, ...] = get_args(TodoStatus)
OPEN_STATUSES = ("pending", "in_progress", "needs_user")
FINAL_STATUSES = ("completed", "failed", "needs_user", "cancelled")
_STATUS_ALIASES = {"done": "completed", "todo": "pending", "canceled": "cancelled"}

HEADER_START = "### ["
_HEADER = re.compile(r"### \[\s*(?P<id>[Tt]\d+|[Nn][Ee][Ww])?\s*\]\s+(?P<title>\S.*)")
# the colon ends the line or is followed by a space, so "- https://x" or "- at 12:30" is text
_FIELD = re.compile(r"- (?P<key>[A-Za-z][A-Za-z0-9_ -]*?)\s*:(?:\s(?P<value>.*))?")
_ID_IN_RAW = re.compile(r"^### \[\s*[Tt](\d+)\s*\]", re.MULTILINE)
_KEY_ALIASES = {"message_ids": "messages", "notes": "note", "replyto": "reply_to"}
_SINGLE = (
    *("status", "priority", "created", "started", "completed"),
    *("source", "messages", "reply_to", "parent", "summary"),
)


def clean_field(value: str) -> str:
    """Canonical field value: no blank lines, no trailing spaces, first line stripped."""
    lines = [line.rstrip() for line in clean_block(value).split("\n") if line.strip()]
    if lines:
        lines[0] = lines[0].lstrip()
    return "\n".join(lines)


def _normalize_key(key: str) -> str:
    key = re.sub(r"[\s-]+", "_", key.strip().lower())
    return _KEY_ALIASES.get(key, key)


def parse_status(value: str) -> str:
    text = re.sub(r"[\s-]+", "_", value.strip().lower())
    text = _STATUS_ALIASES.get(text, text)
    if text not in STATUSES:
        raise ValueError(f"unknown status {value!r} (one of {', '.join(STATUSES)})")
    return text


class Todo(BaseModel):
    """One task, in canonical form (so that write-then-read is exact)."""

    id: str
    title: str
    status: TodoStatus = "pending"
    priority: int = 0
    created: datetime
    started: datetime | None = None
    completed: datetime | None = None
    source: str | None = None
    message_ids: list[str] = Field(default_factory=list)
    reply_to: str | None = None
    parent: str | None = None
    summary: str | None = None
    notes: list[str] = Field(default_factory=list)
    description: str = ""
    extra: list[tuple[str, str]] = Field(default_factory=list)

    @field_validator("id", "parent")
    @classmethod
    def _id(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip().upper()
        if not re.fullmatch(r"T\d+", value):
            raise ValueError(f"a task id is T followed by digits, not {value!r}")
        return value

    @field_validator("title")
    @classmethod
    def _title(cls, value: str) -> str:
        value = redact(clean_line(value))
        if not value:
            raise ValueError("a task needs a title")
        return value

    @field_validator("status", mode="before")
    @classmethod
    def _status(cls, value: Any) -> Any:
        return parse_status(value) if isinstance(value, str) else value

    @field_validator("priority", mode="before")
    @classmethod
    def _priority(cls, value: Any) -> Any:
        return parse_priority(value) if isinstance(value, str | int) else value

    @field_validator("created", "started", "completed")
    @classmethod
    def _time(cls, value: datetime | None) -> datetime | None:
        return None if value is None else canonical_time(value)

    @field_validator("source", "reply_to")
    @classmethod
    def _line(cls, value: str | None) -> str | None:
        return (clean_line(value) or None) if value is not None else None

    @field_validator("summary")
    @classmethod
    def _summary(cls, value: str | None) -> str | None:
        return (redact(clean_field(value)) or None) if value is not None else None

    @field_validator("message_ids")
    @classmethod
    def _message_ids(cls, value: list[str]) -> list[str]:
        for item in value:
            if not ID_PATTERN.fullmatch(item):
                raise ValueError(f"invalid message id {item!r}")
        return list(dict.fromkeys(value))

    @field_validator("notes")
    @classmethod
    def _notes(cls, value: list[str]) -> list[str]:
        return [redact(note) for note in (clean_field(v) for v in value) if note]

    @field_validator("description")
    @classmethod
    def _description(cls, value: str) -> str:
        return redact(clean_block(value))

    @field_validator("extra")
    @classmethod
    def _extra(cls, value: list[tuple[str, str]]) -> list[tuple[str, str]]:
        out = []
        for key, item in value:
            norm = _normalize_key(key)
            if not KEY_PATTERN.fullmatch(norm) or norm in _SINGLE or norm == "note":
                raise ValueError(f"invalid or reserved field name {key!r}")
            out.append((norm, redact(clean_field(item))))
        return out

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES


# --- format -----------------------------------------------------------------------
def is_header(line: str) -> bool:
    return _HEADER.fullmatch(line) is not None


def _field_lines(key: str, value: str) -> list[str]:
    first, *rest = value.split("\n")
    return [f"- {key}: {first}".rstrip(), *(f"  {line}" for line in rest)]


def format_todo(todo: Todo) -> str:
    """One entry, without a trailing newline."""
    stamp = lambda value: format_timestamp(value) if value else None  # noqa: E731
    pairs: list[tuple[str, str | None]] = [
        ("status", todo.status),
        ("priority", format_priority(todo.priority)),
        ("created", stamp(todo.created)),
        ("started", stamp(todo.started)),
        ("completed", stamp(todo.completed)),
        ("source", todo.source),
        ("messages", ", ".join(todo.message_ids) or None),
        ("reply_to", todo.reply_to),
        ("parent", todo.parent),
        ("summary", todo.summary),
        *(("note", note) for note in todo.notes),
        *todo.extra,
    ]
    lines = [f"{HEADER_START}{todo.id}] {todo.title}"]
    for key, value in pairs:
        if value is not None:
            lines += _field_lines(key, value)
    if todo.description:
        lines += ["", *escape_lines(todo.description.split("\n"), is_header)]
    return "\n".join(lines)


def _read_fields(lines: list[str]) -> tuple[list[tuple[str, str]], int]:
    """The ``- key: value`` pairs right after the header, and where the description starts."""
    pairs: list[tuple[str, str]] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        match = _FIELD.fullmatch(line)
        if pairs and line.startswith("  ") and line.strip():
            key, value = pairs[-1]
            pairs[-1] = (key, f"{value}\n{line[2:]}")
        elif match:
            pairs.append((_normalize_key(match["key"]), match["value"] or ""))
        else:
            break
        index += 1
    return pairs, index


def _parse_section(section: Section) -> tuple[Todo | Malformed, bool]:
    """The task, and whether an id or created time is still to be filled in."""

    def bad(reason: str) -> tuple[Malformed, bool]:
        return Malformed(section.raw, reason, section.line), False

    if has_surrogates(section.raw):
        return bad("not valid UTF-8")
    header = _HEADER.fullmatch(section.lines[0])
    assert header is not None  # sections start at headers
    pairs, end = _read_fields(section.lines[1:])
    fields: dict[str, Any] = {"title": header["title"], "notes": [], "extra": []}
    fields["id"] = header["id"] if header["id"] and header["id"].lower() != "new" else "T0"
    for key, value in pairs:
        value = clean_field(value)
        if key in _SINGLE and key in fields:
            return bad(f"field {key!r} appears twice")
        if key == "messages":
            fields["message_ids"] = [v for v in re.split(r"[\s,]+", value) if v]
        elif key in ("created", "started", "completed"):
            try:
                fields[key] = parse_timestamp(value) if value else None
            except ValueError as exc:
                return bad(f"{key}: {exc}")
        elif key == "note":
            fields["notes"].append(value)
        elif key in _SINGLE:
            fields[key] = value or None
        else:
            fields["extra"].append((key, value))
    description = section.lines[1 + end :]
    fields["description"] = "\n".join(unescape_lines(description, is_header))
    missing = fields["id"] == "T0" or fields.get("created") is None
    fields["created"] = fields.get("created") or now()
    for key in ("status", "priority"):
        if fields.get(key) is None:
            fields.pop(key, None)
    try:
        return Todo.model_validate(fields), missing
    except ValidationError as exc:
        return bad(error_summary(exc))


def parse_todos(text: str, first_free: int = 1) -> Document[Todo]:
    """Read ``todos.md``; never raises. New tasks and id clashes get fresh ids, none below
    ``first_free`` (the id counter's next number)."""
    preamble, sections = split_sections(text, is_header)
    doc: Document[Todo] = Document(preamble)
    doc.warnings = near_misses(text, HEADER_START, is_header, "looks like a task header but is not")
    taken = [int(n) for n in _ID_IN_RAW.findall(text)]
    next_number = max(max(taken, default=0) + 1, first_free)
    seen: set[str] = set()
    for section in sections:
        item, missing = _parse_section(section)
        if isinstance(item, Todo):
            if item.id == "T0" or item.id in seen:
                item.id, next_number = format_id(next_number), next_number + 1
                missing = True
            seen.add(item.id)
            doc.changed |= missing
        doc.items.append(item)
    return doc


def render_todos(doc: Document[Todo]) -> str:
    return render_document(doc, format_todo)


def highest_number(doc: Document[Todo]) -> int:
    """The highest task number in ``doc``, readable tasks and unreadable sections alike."""
    text = "\n".join(item.raw if isinstance(item, Malformed) else "" for item in doc.items)
    numbers = [int(t.id[1:]) for t in doc.entries()] + [int(n) for n in _ID_IN_RAW.findall(text)]
    return max(numbers, default=0)


def format_id(number: int) -> str:
    return f"T{number:03d}"
