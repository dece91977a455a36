"""What the gateway's markdown files share: sections, escaping, canonical values.

How the files are read and written safely is in :mod:`jarvis.gateway.locked_file`.

A file is a preamble (free text, kept as is) followed by sections; a section starts at a
line with a fixed prefix (``## [`` for messages, ``### [`` for todos). A section that cannot
be read is kept verbatim as :class:`Malformed`, reported once, and written back unchanged.
Body lines that would read as structure are escaped with one more leading backslash.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import ValidationError

from jarvis.events import EventBus, MalformedEntry

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S"
_TIMESTAMP = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2}))?")

PRIORITY_NAMES = {"high": 1, "normal": 0, "low": -1}
"""Priorities are integers, larger is more urgent; these three have names."""


# --- canonical values ---------------------------------------------------------------
def now() -> datetime:
    """Local wall-clock time to the second, as the files store it."""
    return datetime.now().replace(microsecond=0)


def canonical_time(value: datetime) -> datetime:
    """Naive local time without microseconds (aware times are converted to local)."""
    if value.tzinfo is not None:
        value = value.astimezone().replace(tzinfo=None)
    return value.replace(microsecond=0)


def parse_timestamp(text: str) -> datetime:
    """``2026-02-01 15:30:00``; a ``T`` separator and a missing ``:SS`` are accepted."""
    match = _TIMESTAMP.fullmatch(text.strip())
    if match:
        with contextlib.suppress(ValueError):
            year, month, day, hour, minute, second = (int(p or 0) for p in match.groups())
            return datetime(year, month, day, hour, minute, second)
    raise ValueError(f"not a timestamp (want YYYY-MM-DD HH:MM:SS): {text!r}")


def format_timestamp(value: datetime) -> str:
    return value.strftime(TIMESTAMP_FORMAT)


def parse_priority(value: str | int) -> int:
    """``high``/``normal``/``low`` or an integer (larger is more urgent)."""
    if isinstance(value, bool):
        raise ValueError(f"not a priority: {value!r}")
    if isinstance(value, int):
        return value
    text = value.strip().lower()
    if text in PRIORITY_NAMES:
        return PRIORITY_NAMES[text]
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"not a priority (high, normal, low or an integer): {value!r}") from None


def format_priority(value: int) -> str:
    for name, number in PRIORITY_NAMES.items():
        if number == value:
            return name
    return str(value)


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def is_blank(line: str) -> bool:
    return not line.strip()


def trim_blank_lines(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and is_blank(lines[start]):
        start += 1
    while end > start and is_blank(lines[end - 1]):
        end -= 1
    return lines[start:end]


def clean_block(text: str) -> str:
    """Canonical multi-line text: ``\\n`` newlines, no leading or trailing blank lines."""
    return "\n".join(trim_blank_lines(normalize_newlines(text).split("\n")))


def clean_line(text: str) -> str:
    """Canonical one-line value: whitespace runs (newlines too) become one space."""
    return " ".join(text.split())


def short_hash(*parts: str, length: int = 6) -> str:
    digest = hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()
    return digest[:length]


# --- escaping ---------------------------------------------------------------------
Structural = Callable[[str], bool]


def escape_lines(lines: list[str], structural: Structural) -> list[str]:
    """Prefix one backslash to lines that are (backslashes followed by) structure."""
    return ["\\" + line if structural(line.lstrip("\\")) else line for line in lines]


def unescape_lines(lines: list[str], structural: Structural) -> list[str]:
    """Inverse of :func:`escape_lines`."""
    return [
        line[1:] if line.startswith("\\") and structural(line.lstrip("\\")) else line
        for line in lines
    ]


# --- documents --------------------------------------------------------------------
@dataclass
class Malformed:
    """A section that could not be read; written back exactly as found."""

    raw: str
    reason: str
    line: int = field(default=0, compare=False)


@dataclass
class Document(Generic[T]):
    """A parsed file: free preamble, then entries and malformed sections in file order."""

    preamble: str = ""
    items: list[T | Malformed] = field(default_factory=list)
    changed: bool = field(default=False, compare=False)
    """Set when parsing filled something in (an id, a time) that should be written back."""
    warnings: list[Malformed] = field(default_factory=list, compare=False)
    """Lines read as text that look like structure (a mistyped header, say)."""

    def entries(self) -> list[T]:
        return [item for item in self.items if not isinstance(item, Malformed)]

    def malformed(self) -> list[Malformed]:
        return [item for item in self.items if isinstance(item, Malformed)]


@dataclass
class Section:
    line: int  # 1-based line number of the section's first line
    lines: list[str]  # trailing blank lines removed

    @property
    def raw(self) -> str:
        return "\n".join(self.lines)


def split_sections(text: str, starts: Structural) -> tuple[str, list[Section]]:
    """The preamble and the sections of ``text``; a section starts where ``starts`` says."""
    lines = normalize_newlines(text).split("\n")
    preamble: list[str] = []
    sections: list[Section] = []
    for number, line in enumerate(lines, start=1):
        if starts(line):
            sections.append(Section(number, [line]))
        elif sections:
            sections[-1].lines.append(line)
        else:
            preamble.append(line)
    for section in sections:
        while section.lines and is_blank(section.lines[-1]):
            section.lines.pop()
    while preamble and is_blank(preamble[-1]):
        preamble.pop()
    return "\n".join(preamble), sections


def near_misses(text: str, prefix: str, real: Structural, reason: str) -> list[Malformed]:
    """Lines that start like a section header but are not one (they are read as text)."""
    return [
        Malformed(line, f"{reason}; read as text", number)
        for number, line in enumerate(normalize_newlines(text).split("\n"), start=1)
        if line.startswith(prefix) and not real(line)
    ]


def join_sections(preamble: str, sections: list[str]) -> str:
    """Preamble and section texts, one blank line between them, newline at the end."""
    blocks = ([preamble] if preamble else []) + sections
    return "\n\n".join(blocks) + "\n" if blocks else ""


def render_document(doc: Document[T], format_entry: Callable[[T], str]) -> str:
    """The file's text: entries as ``format_entry`` writes them, malformed ones as found."""
    blocks = [item.raw if isinstance(item, Malformed) else format_entry(item) for item in doc.items]
    return join_sections(doc.preamble, blocks)


def error_summary(exc: Exception) -> str:
    """A one-line reason for a section that fails validation: the first error, with its field."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"{where}: {first['msg']}"
    return str(exc)


# --- problems ---------------------------------------------------------------------
@dataclass(frozen=True)
class Problem:
    """A malformed section, as reported to logs, events and ``jarvis inbox list``."""

    path: str
    line: int
    reason: str
    excerpt: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}: {self.excerpt}"


def problems_of(path: Path, doc: Document[T]) -> list[Problem]:
    return [
        Problem(str(path), bad.line, bad.reason, bad.raw.split("\n", 1)[0][:120])
        for bad in doc.malformed() + doc.warnings
    ]


class ProblemLog:
    """Reports each problem once per process: a warning in the log and an event on the bus."""

    def __init__(self, bus: EventBus | None = None) -> None:
        self.bus = bus
        self._seen: set[tuple[str, str, str]] = set()

    def report(self, problems: list[Problem]) -> None:
        for problem in problems:
            key = (problem.path, problem.reason, problem.excerpt)
            if key in self._seen:
                continue
            self._seen.add(key)
            log.warning("kept an unreadable section in place: %s", problem)
            if self.bus is not None:
                self.bus.emit(
                    MalformedEntry(
                        path=problem.path,
                        line=problem.line,
                        reason=problem.reason,
                        excerpt=problem.excerpt,
                    )
                )


def has_surrogates(text: str) -> bool:
    """True when ``text`` holds bytes that were not valid UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
