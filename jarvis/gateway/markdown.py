"""What the gateway's markdown files share: sections, escaping, canonical values, safe writes.

The queue files and ``todos.md`` are written by the daemon, the CLI, the TUI and people
with an editor. So every file is read and written under a cross-process lock (a sibling
``NAME.lock``), written atomically (temp file, fsync, rename, fsync the directory), and a
write is refused when the file changed on disk since it was read (an editor that does not
take our lock), so the caller reads again instead of losing that edit.

A file is a preamble (free text, kept as is) followed by sections; a section starts at a
line with a fixed prefix (``## [`` for messages, ``### [`` for todos). A section that cannot
be read is kept verbatim as :class:`Malformed`, reported once, and written back unchanged.
Body lines that would read as structure are escaped with one more leading backslash.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import random
import re
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Generic, TypeVar

from filelock import FileLock
from pydantic import ValidationError

from jarvis.events import EventBus, MalformedEntry
from jarvis.fsutil import atomic_write_bytes

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

LOCK_TIMEOUT_S = 30.0
LOCK_POLL_S = 0.005
WRITE_ATTEMPTS = 8
RETRY_PAUSE_S = 0.005
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


# --- files ------------------------------------------------------------------------
class ChangedOnDisk(Exception):
    """The file changed between our read and our write; read it again."""


@dataclass(frozen=True)
class Snapshot:
    text: str
    stamp: tuple[int, int, int] | None  # (inode, size, mtime_ns); None when missing


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class _NotRegular(Exception):
    """A gateway file that is a link or not a regular file."""


_REFUSED: set[Path] = set()
"""Gateway files already warned about (one warning while they stay refused)."""


def _read_regular(path: Path) -> bytes:
    """The bytes of ``path``, opened without following a link (never what a link to a file
    outside the data dir points to), and only when it is a regular file."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _NotRegular("a symbolic link (only regular files are read)") from None
        raise
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise _NotRegular("not a regular file")
        return f.read()


class MarkdownFile:
    """One gateway file: locked, atomic, refusing to overwrite changes it has not seen."""

    def __init__(self, path: Path, *, lock_timeout: float = LOCK_TIMEOUT_S) -> None:
        self.path = path
        self.lock_path = path.with_name(path.name + ".lock")
        self.lock_timeout = lock_timeout

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(self.lock_path), timeout=self.lock_timeout)
        with lock.acquire(poll_interval=LOCK_POLL_S):
            yield

    def read(self) -> Snapshot:
        """The text (UTF-8, BOM dropped; undecodable bytes kept as surrogate escapes)."""
        stamp = _stamp(self.path)
        try:
            data = _read_regular(self.path)
        except FileNotFoundError:
            return Snapshot("", None)
        except _NotRegular as exc:
            if self.path not in _REFUSED:
                log.warning(
                    "%s is not read: %s; its next write replaces it with a file", self.path, exc
                )
            _REFUSED.add(self.path)
            return Snapshot("", stamp)
        _REFUSED.discard(self.path)
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        return Snapshot(data.decode("utf-8", "surrogateescape"), stamp)

    def stamp(self) -> tuple[int, int, int] | None:
        """(inode, size, mtime_ns) of the file now; None when it is missing."""
        return _stamp(self.path)

    def replace(self, snapshot: Snapshot, text: str) -> None:
        """Write ``text`` unless the file changed since ``snapshot`` (then ChangedOnDisk)."""
        if _stamp(self.path) != snapshot.stamp:
            raise ChangedOnDisk(str(self.path))
        atomic_write_bytes(self.path, text.encode("utf-8", "surrogateescape"))


def retrying(operation: Callable[[], R], what: str) -> R:
    """Run a read-modify-write ``operation`` again while a file changes under it."""
    for attempt in range(1, WRITE_ATTEMPTS + 1):
        try:
            return operation()
        except ChangedOnDisk as exc:
            log.info(
                "%s: %s changed while we wrote it (attempt %d); reading again", what, exc, attempt
            )
            time.sleep(random.uniform(0, RETRY_PAUSE_S * attempt))  # let the other writer finish
    raise ChangedOnDisk(f"{what}: the file kept changing; gave up after {WRITE_ATTEMPTS} tries")


def has_surrogates(text: str) -> bool:
    """True when ``text`` holds bytes that were not valid UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
