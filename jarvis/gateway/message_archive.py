"""The inbox archive, ``messages/archive/DATE.md`` (one file a day), and its index by id.

The day files stay the truth, in the format of :mod:`jarvis.gateway.message_format`: a
line ``# Jarvis archive DATE``, then one section per archived message. An archived message is
appended to its day's file (:mod:`.durable_append`: the cost of one entry, whatever the day
holds, and crash-safe: a cut-off entry is removed before the file is next read, under the
file's lock, and its message is still in ``processing.md`` because that file drops it only
after the append is synced).

``index.sqlite`` in the archive folder (:class:`~jarvis.book_index.BookIndex`) maps a message
id to its day file and the byte offset and length of its section, so a lookup by id reads
one section of one file. The index is never the truth: it is rebuilt from the files when it
is missing or unreadable; its ``sources`` table holds the size and ``mtime_ns`` of each day
file as indexed, and a day file that differs is brought up to date under its lock before it
is used (from the indexed size when it only grew, in full when it was edited). At open every
day file is checked so; while open, a lookup checks the one file it reads and, when it finds
nothing, every file again at most every ``resync_s`` (an edit by hand meanwhile).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import stat
import threading
import time
from collections.abc import Collection, Iterable
from datetime import date, timedelta
from pathlib import Path

from filelock import FileLock

from jarvis.book_index import BookIndex
from jarvis.gateway import durable_append
from jarvis.gateway.locked_file import LOCK_POLL_S, LOCK_TIMEOUT_S, ChangedOnDisk, MarkdownFile
from jarvis.gateway.message_format import (
    Message,
    format_message,
    header_id,
    is_header,
    parse_messages,
)

log = logging.getLogger(__name__)

INDEX_NAME = "index.sqlite"
INDEX_VERSION = 1
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS messages (id TEXT NOT NULL, day TEXT NOT NULL, "
    "offset INTEGER NOT NULL, length INTEGER NOT NULL, PRIMARY KEY (id, day)) WITHOUT ROWID",
)
RESYNC_S = 2.0
_DAY_FILE = re.compile(r"\d{4}-\d{2}-\d{2}\.md")
_BOM = b"\xef\xbb\xbf"
_FIND = (
    "SELECT m.day, m.offset, m.length, s.size, s.mtime_ns FROM messages m "
    "LEFT JOIN sources s ON s.name = m.day || '.md' WHERE m.id = ? AND m.day >= ? "
    "ORDER BY m.day DESC"
)
Row = tuple[str, int, int]  # (message id, offset, length) of one section


def title(day: date) -> str:
    return f"# Jarvis archive {day.isoformat()}"


def render_day(day: date, records: Iterable[Message]) -> str:
    """A day file's text, as archiving ``records`` one after the other writes it."""
    return "\n\n".join([title(day), *map(format_message, records)]) + "\n"


def section_rows(data: bytes, base: int) -> tuple[bool, list[Row]]:
    """The sections of ``data`` (bytes of a day file from offset ``base``): whether what comes
    before the first one is blank, and each one's message id, offset and length (trailing
    blank lines left out). The id is the header's; only an entry without one is parsed."""
    lines: list[tuple[int, bytes]] = []
    pos = len(_BOM) if base == 0 and data.startswith(_BOM) else 0
    for line in data[pos:].splitlines(keepends=True):
        lines.append((pos, line))
        pos += len(line)
    starts = [
        i
        for i, (_, line) in enumerate(lines)
        if line.startswith(b"## [") and is_header(_text(line).rstrip("\r\n"))
    ]
    lead = data[: lines[starts[0]][0]] if starts else data
    rows: list[Row] = []
    for n, first in enumerate(starts):
        last = (starts[n + 1] if n + 1 < len(starts) else len(lines)) - 1
        while last > first and not lines[last][1].strip():
            last -= 1
        start, end = lines[first][0], lines[last][0] + len(lines[last][1].rstrip(b"\r\n"))
        found = header_id(_text(lines[first][1]).rstrip("\r\n"))
        ids = [found] if found else [m.id for m in parse_messages(_text(data[start:end])).entries()]
        rows += [(mid, base + start, end - start) for mid in ids]
    return not lead.strip(), rows


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _read(path: Path, offset: int, length: int | None = None) -> tuple[bytes, os.stat_result]:
    """Bytes of a regular file (never through a link) and its stat."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return b"", st
        size = st.st_size - offset if length is None else length
        return os.pread(fd, max(size, 0), offset), st
    finally:
        os.close(fd)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.lstat()
    except FileNotFoundError:
        return None
    return (st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None


class MessageArchive:
    """The archive folder: day files appended to, looked up by id through the index."""

    def __init__(
        self, folder: Path, *, lock_timeout: float = LOCK_TIMEOUT_S, resync_s: float = RESYNC_S
    ) -> None:
        self.folder = folder
        self.lock_timeout = lock_timeout
        self.resync_s = resync_s
        self._index: BookIndex | None = None
        self._opening = threading.Lock()
        self._synced_at = -math.inf

    def file(self, day: date) -> MarkdownFile:
        return MarkdownFile(self.folder / f"{day.isoformat()}.md", lock_timeout=self.lock_timeout)

    def close(self) -> None:
        with self._opening:
            if self._index is not None:
                self._index.close()
                self._index = None

    # -- the index --
    @property
    def index(self) -> BookIndex:
        """The index, opened (and brought up to date with every day file) on first use."""
        with self._opening:
            if self._index is None:
                self.folder.mkdir(parents=True, exist_ok=True)
                lock = FileLock(str(self.folder / f"{INDEX_NAME}.lock"), timeout=self.lock_timeout)
                with lock.acquire(poll_interval=LOCK_POLL_S):  # one process (re)builds it
                    index = BookIndex(self.folder / INDEX_NAME, SCHEMA, INDEX_VERSION)
                    started = time.monotonic()
                    self._sync(index)
                if index.fresh:
                    count = index.one("SELECT count(*) FROM messages")
                    log.info(
                        "indexed the message archive: %d messages (%.1f s)",
                        count[0] if count else 0,
                        time.monotonic() - started,
                    )
                self._index = index
            return self._index

    def _sync(self, index: BookIndex) -> None:
        """Bring every day file's rows up to date where the file is not as indexed."""
        known = {name: (size, mtime) for name, size, mtime in index.rows("SELECT * FROM sources")}
        on_disk = {}
        with os.scandir(self.folder) as entries:
            for entry in entries:
                if _DAY_FILE.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    on_disk[entry.name] = (st.st_size, st.st_mtime_ns)
        for name in sorted(set(known) | set(on_disk)):
            if known.get(name) != on_disk.get(name):
                with self._locked(name):
                    self._settle(index, name)
        self._synced_at = time.monotonic()

    def _locked(self, name: str) -> contextlib.AbstractContextManager[None]:
        return MarkdownFile(self.folder / name, lock_timeout=self.lock_timeout).locked()

    def _settle(self, index: BookIndex, name: str) -> None:
        """Repair a cut-off append and bring ``name``'s rows up to date (caller holds its
        lock)."""
        path = self.folder / name
        cut = durable_append.repair(path)
        if cut:
            log.warning(
                "%s ended in an entry cut off by a crash (%d bytes); removed it (its message "
                "is still in processing.md and is archived again)",
                path,
                cut,
            )
        source, now = index.source(name), _stamp(path)
        if now is None:
            if source is None:
                return
            with index.writing() as db:
                db.execute("DELETE FROM messages WHERE day = ?", (name[:-3],))
                db.execute("DELETE FROM sources WHERE name = ?", (name,))
            return
        if source == now:
            return
        grew = source is not None and self._only_grew(index, name, source, now)
        start = source[0] if source and grew else 0
        data, st = _read(path, start)
        blank_lead, rows = section_rows(data, start)
        if start and not blank_lead:  # text added to the last indexed section
            start = 0
            data, st = _read(path, 0)
            blank_lead, rows = section_rows(data, 0)
        with index.writing() as db:
            if start == 0:
                db.execute("DELETE FROM messages WHERE day = ?", (name[:-3],))
            db.executemany(
                "INSERT OR IGNORE INTO messages (id, day, offset, length) VALUES (?, ?, ?, ?)",
                [(mid, name[:-3], offset, length) for mid, offset, length in rows],
            )
            index.set_source(db, name, st.st_size, st.st_mtime_ns)
        if source is not None:
            log.info("%s changed outside the archive; indexed it again from byte %d", path, start)

    def _only_grew(
        self, index: BookIndex, name: str, source: tuple[int, int], now: tuple[int, int]
    ) -> bool:
        """The file is at least as long as indexed and its last indexed entry is in place."""
        if now[0] < source[0]:
            return False
        last = index.one(
            "SELECT id, offset, length FROM messages WHERE day = ? ORDER BY offset DESC LIMIT 1",
            (name[:-3],),
        )
        return last is None or self._entry(name, last[1], last[2], last[0]) is not None

    def _entry(self, name: str, offset: int, length: int, message_id: str) -> Message | None:
        """The entry with ``message_id`` at ``offset`` of ``name``; None if it is not there."""
        try:
            data, _ = _read(self.folder / name, offset, length)
        except FileNotFoundError:
            return None
        found = [m for m in parse_messages(_text(data)).entries() if m.id == message_id]
        return found[0] if found else None

    def _resync_due(self) -> bool:
        return time.monotonic() - self._synced_at >= self.resync_s

    # -- reading --
    def find(self, message_id: str, since: date | None = None) -> Message | None:
        """The archived message with this id (the newest day's copy), from the day before
        ``since`` on; one section of one file is read."""
        if not self.folder.is_dir():
            return None
        index = self.index
        floor = "" if since is None else (since - timedelta(days=1)).isoformat()
        rows = self._rows(index, message_id, floor)
        if not rows and self._resync_due():
            self._sync(index)
            rows = self._rows(index, message_id, floor)
        for day, offset, length in rows:
            message = self._entry(f"{day}.md", offset, length, message_id)
            if message is not None:
                return message
        return None

    def present(self, ids: Collection[str]) -> set[str]:
        """Those of ``ids`` the index has an entry for, on any day (one query per 500 ids;
        the day files are compared with the index first when that is due, as for
        :meth:`find`): a queue checks its entries against the archive with this, and reads
        only those found."""
        if not ids or not self.folder.is_dir():
            return set()
        index = self.index
        if self._resync_due():
            self._sync(index)
        wanted, found = sorted(set(ids)), set[str]()
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            rows = index.rows(f"SELECT DISTINCT id FROM messages WHERE id IN ({marks})", chunk)
            found.update(str(row[0]) for row in rows)
        return found

    def _rows(self, index: BookIndex, message_id: str, floor: str) -> list[tuple[str, int, int]]:
        """Where the id is, newest day first, in day files brought up to date first."""
        rows = index.rows(_FIND, (message_id, floor))
        stale = {day for day, _, _, *was in rows if _stamp(self.folder / f"{day}.md") != tuple(was)}
        for day in sorted(stale):
            with self._locked(f"{day}.md"):
                self._settle(index, f"{day}.md")
        if stale:
            rows = index.rows(_FIND, (message_id, floor))
        return [(day, offset, length) for day, offset, length, *_ in rows]

    def messages(self, day: date) -> list[Message]:
        """Every entry of ``day``'s file, in file order."""
        return parse_messages(self.text(day)).entries()

    def text(self, day: date) -> str:
        """``day``'s file (a cut-off append at its end repaired first)."""
        file = self.file(day)
        if not file.path.exists():
            return ""
        index = self.index
        with file.locked():
            self._settle(index, file.path.name)
            return file.read().text

    # -- writing --
    def add(self, day: date, record: Message) -> Message:
        """Append ``record`` to ``day``'s file unless an entry with its id is there already
        (that one is returned)."""
        index = self.index  # (opened before the day's lock: the order is index, then day)
        file = self.file(day)
        with file.locked():
            self._settle(index, file.path.name)
            existing = self._in_day(index, day, record.id)
            if existing is not None:
                return existing
            size = (_stamp(file.path) or (0, 0))[0]
            tail = _read(file.path, max(size - 2, 0), min(size, 2))[0] if size else b""
            head = self._separator(day, size, tail)
            section = format_message(record).encode("utf-8", "surrogateescape")
            done = durable_append.append(file.path, head + section + b"\n")
            if done.replaced:
                raise ChangedOnDisk(str(file.path))
            if done.stat.st_size != done.offset + len(head) + len(section) + 1:
                return record  # someone wrote too, without the lock: the next look reads it
            with index.writing() as db:
                db.execute(
                    "INSERT OR IGNORE INTO messages (id, day, offset, length) VALUES (?, ?, ?, ?)",
                    (record.id, day.isoformat(), done.offset + len(head), len(section)),
                )
                index.set_source(db, file.path.name, done.stat.st_size, done.stat.st_mtime_ns)
            return record

    def _in_day(self, index: BookIndex, day: date, message_id: str) -> Message | None:
        row = index.one(
            "SELECT offset, length FROM messages WHERE id = ? AND day = ?",
            (message_id, day.isoformat()),
        )
        return None if row is None else self._entry(f"{day}.md", row[0], row[1], message_id)

    @staticmethod
    def _separator(day: date, size: int, tail: bytes) -> bytes:
        """What goes before a new section: the title in a new file, else a blank line."""
        if size == 0:
            return f"{title(day)}\n\n".encode()
        if tail.endswith(b"\n\n"):
            return b""
        return b"\n" if tail.endswith(b"\n") else b"\n\n"
