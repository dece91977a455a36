"""The run index, ``runs/index/runs.sqlite``: which folder holds a task's run, whose
journal can hold a line after a given ``seq``, and a page of the listing, without a walk
of every day.

The run folders stay the truth; the index is a :class:`~jarvis.book_index.BookIndex`,
rebuilt from them when it is missing, unreadable or of another schema version. One row
per run folder (``day``, ``name``): the listing's fields (a
:class:`~jarvis.runs.run_info.RunSummary`, as JSON), the start time (a listing's order),
what ``run.json`` was when it was read (inode, size, mtime), and the end of its journal:
``last_seq``, or NULL while a writer (``open_pid``) has it open and may still append.

It is kept current three ways:

- the journal writer calls :meth:`RunIndex.put` when it opens a run folder or saves its
  ``run.json``, and :meth:`RunIndex.closed` when it closes the journal;
- :meth:`RunIndex.sync`, before every lookup, looks at what changed behind its back, by
  ``stat`` (mtime, link count): ``runs/`` itself (a date folder came or went: then every
  date folder, as for a new index) and the newest two date folders (a run folder came or
  went); every date folder again every :data:`SWEEP_S`. A changed date folder is listed
  and only its new run folders are read;
- what a lookup returns is checked: a folder that is gone loses its row, a ``run.json``
  changed since it was read is read again, and a journal left open by a writer that died
  gets its last ``seq`` from its end.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jarvis.book_index import BookIndex
from jarvis.runs.folder import (
    DAY,
    EVENTS_FILE,
    alive,
    folder_name,
    is_run,
    last_seq,
    read_run,
)
from jarvis.runs.run_info import RUN_FILE, RunInfo, RunSummary

log = logging.getLogger(__name__)

INDEX_DIR = "index"
INDEX_FILE = "runs.sqlite"
"""In ``DATA/runs/index/`` (with its ``-wal`` and ``-shm`` files while it is open): not
in ``runs/`` itself, whose mtime then changes only when a date folder comes or goes."""
SWEEP_S = 300.0
"""How often a lookup compares every date folder with the index, at most (a run folder
added by hand to an old day is found then; one in a new or a recent day at once)."""
RECENT_DAYS = 2
VERSION = 1
SCHEMA = (
    "CREATE TABLE runs (day TEXT NOT NULL, name TEXT NOT NULL, started REAL NOT NULL, "
    "summary TEXT NOT NULL, info TEXT, last_seq INTEGER, open_pid INTEGER, "
    "touched REAL NOT NULL, UNIQUE (day, name))",
    "CREATE INDEX runs_newest ON runs (day, started, name)",
    "CREATE INDEX runs_by_name ON runs (name, day)",
    "CREATE INDEX runs_by_last_seq ON runs (last_seq)",
    "CREATE INDEX runs_by_touched ON runs (touched)",
    "CREATE TABLE days (day TEXT PRIMARY KEY, seen TEXT NOT NULL)",
    "CREATE TABLE marks (name TEXT PRIMARY KEY, value TEXT)",
)
_UPSERT = (
    "INSERT INTO runs (day, name, started, summary, info, last_seq, open_pid, touched) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (day, name) DO UPDATE SET "
    "started = excluded.started, summary = excluded.summary, "
    "info = excluded.info, last_seq = excluded.last_seq, "
    "open_pid = excluded.open_pid, touched = excluded.touched"
)
_ADD = _UPSERT.split(" ON CONFLICT")[0].replace("INSERT", "INSERT OR IGNORE", 1)
_DAY_SEEN = (
    "INSERT INTO days (day, seen) VALUES (?, ?) "
    "ON CONFLICT (day) DO UPDATE SET seen = excluded.seen"
)
_MARK = (
    "INSERT INTO marks (name, value) VALUES (?, ?) "
    "ON CONFLICT (name) DO UPDATE SET value = excluded.value"
)
_PAGE = "SELECT day, name, started, summary, info FROM runs"
_NEWEST = " ORDER BY day DESC, started DESC, name DESC LIMIT ?"

Row = tuple[str, str, float, str, str | None, int | None, int | None, float]
"""day, name, started, summary, info, last_seq, open_pid, touched"""
Listed = tuple[str, str, float, str, str | None]
"""day, name, started, summary (JSON), info: a row as a listing reads it"""


def index_files() -> tuple[str, ...]:
    """The names of the index's files (the database and SQLite's files beside it)."""
    return tuple(INDEX_FILE + suffix for suffix in ("", "-wal", "-shm", "-journal"))


class RunIndex:
    """The index of ``data_dir``'s run folders (see the module doc); close it after use."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.root = data_dir / "runs"
        self.book = BookIndex(self.root / INDEX_DIR / INDEX_FILE, SCHEMA, VERSION)

    def close(self) -> None:
        self.book.close()

    def __enter__(self) -> RunIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the writer's side --
    def put(self, folder: Path, info: RunInfo, open_pid: int | None = None) -> None:
        """Index ``folder`` as ``info`` says, its journal open by ``open_pid`` (if given)."""
        row = _row(folder, info, _seen(folder / RUN_FILE), open_pid, time.time())
        with self.book.writing() as db:
            db.execute(_UPSERT, row)

    def closed(self, folder: Path) -> int:
        """The journal of ``folder`` is closed: its last ``seq`` (returned) is final, until
        a writer opens it again."""
        end = last_seq(folder / EVENTS_FILE)
        with self.book.writing() as db:
            db.execute(
                "UPDATE runs SET last_seq = ?, open_pid = NULL, touched = ? "
                "WHERE day = ? AND name = ?",
                (end, time.time(), folder.parent.name, folder.name),
            )
        return end

    # -- catching up with the folders --
    def sync(self) -> None:
        """Index what changed in the date folders: in every one when ``runs/`` itself
        changed (a day added or removed; a new index knows none) or the last look at all
        is :data:`SWEEP_S` old; else in the newest :data:`RECENT_DAYS` (a run's folder is
        made in the day it starts)."""
        root = _seen(self.root)
        marks = dict(self.book.rows("SELECT name, value FROM marks"))
        age = time.time() - float(marks.get("swept") or 0)
        if marks.get("root") != root or not 0 <= age < SWEEP_S:
            self._sweep(root)
            return
        newest = "SELECT day, seen FROM days ORDER BY day DESC LIMIT ?"
        for day, seen in self.book.rows(newest, (RECENT_DAYS,)):
            now = _seen(self.root / day)
            if now != seen:
                self._scan_day(day, now)

    def _sweep(self, root: str | None) -> None:
        """Compare every date folder with the index; read those that changed."""
        on_disk = self._days()
        known = dict(self.book.rows("SELECT day, seen FROM days"))
        changed = [day for day, seen in on_disk.items() if known.get(day) != seen]
        if len(changed) > 1:
            log.info("run index %s: reading %d date folders", self.book.path, len(changed))
        for day in sorted([*changed, *(known.keys() - on_disk.keys())]):
            self._scan_day(day, on_disk.get(day))
        with self.book.writing() as db:
            db.executemany(_MARK, [("root", root), ("swept", repr(time.time()))])

    def _days(self) -> dict[str, str]:
        """Each date folder and what it is now (mtime and link count, see :func:`_seen`)."""
        found: dict[str, str] = {}
        try:
            with os.scandir(self.root) as listing:
                for entry in listing:
                    if DAY.fullmatch(entry.name) and entry.is_dir():
                        found[entry.name] = _signature(entry.stat())
        except (FileNotFoundError, NotADirectoryError):
            pass
        return found

    def _scan_day(self, day: str, seen: str | None) -> None:
        """Rows for the new run folders of ``day``, none for those gone (read outside the
        transaction; a row the writer put meanwhile is newer and stays); ``seen`` is what
        the folder was before it was listed (None: it is gone)."""
        try:
            with os.scandir(self.root / day) as listing:
                names = {e.name for e in listing if e.is_dir()}
        except (FileNotFoundError, NotADirectoryError):
            names = set()
        rows = self.book.rows("SELECT name FROM runs WHERE day = ?", (day,))
        known = {str(name) for (name,) in rows}
        new = [_from_files(self.root / day / name) for name in sorted(names - known)]
        with self.book.writing() as db:
            gone = [(day, name) for name in known - names]
            db.executemany("DELETE FROM runs WHERE day = ? AND name = ?", gone)
            db.executemany(_ADD, [row for row in new if row is not None])
            if seen is None:
                db.execute("DELETE FROM days WHERE day = ?", (day,))
            else:
                db.execute(_DAY_SEEN, (day, seen))

    def _forget(self, day: str, name: str) -> None:
        with self.book.writing() as db:
            db.execute("DELETE FROM runs WHERE day = ? AND name = ?", (day, name))

    # -- lookups --
    def find(self, task_id: str) -> Path | None:
        """The folder of the latest run of ``task_id`` (None when it never ran)."""
        self.sync()
        name = folder_name(task_id)
        days = self.book.rows("SELECT day FROM runs WHERE name = ? ORDER BY day DESC", (name,))
        for (day,) in days:
            folder = self.root / day / name
            if is_run(folder):
                return folder
            self._forget(day, name)
        return None

    def journals_after(self, after: int) -> list[Path]:
        """The journals that can hold a line with ``seq > after``: those still open and
        those whose last line is later (journals of runs from any day)."""
        self.sync()
        found = self.book.rows(
            "SELECT day, name, open_pid FROM runs WHERE last_seq IS NULL OR last_seq > ?",
            (after,),
        )
        out = []
        for day, name, pid in found:
            folder = self.root / day / name
            if pid is not None and not alive(pid) and self.closed(folder) <= after:
                continue  # its writer died with it open, and it ends before ``after``
            out.append(folder / EVENTS_FILE)
        return sorted(p for p in out if p.is_file())

    def touched_since(self, since: float) -> list[Path]:
        """The run folders written to at ``since`` or later (by the index's clock; a
        journal still open counts), e.g. those that can name a file made since then."""
        self.sync()
        found = self.book.rows(
            "SELECT day, name FROM runs WHERE touched >= ? OR last_seq IS NULL "
            "OR open_pid IS NOT NULL ORDER BY day, name",
            (since,),
        )
        return [f for f in (self.root / day / name for day, name in found) if f.is_dir()]

    # -- a listing (jarvis.runs.listing) --
    def newest(self, key: tuple[str, float, str] | None, count: int) -> list[Listed]:
        """At most ``count`` rows, newest first (by day, start, name), after ``key``."""
        if key is None:
            return self.book.rows(_PAGE + _NEWEST, (count,))
        where = " WHERE (day, started, name) < (?, ?, ?)"
        return self.book.rows(_PAGE + where + _NEWEST, (*key, count))

    def current(self, day: str, name: str, seen: str | None) -> bool:
        """Whether the row of ``day/name``, read when run.json was ``seen``, matches the
        folder; when not, the folder is read again (or its row dropped: no run in it)."""
        folder = self.root / day / name
        now = _seen(folder / RUN_FILE)
        if now == seen and (now is not None or is_run(folder)):
            return True
        row = _from_files(folder)
        if row is None:
            self._forget(day, name)
        else:
            with self.book.writing() as db:
                db.execute(_UPSERT, row)
        return False


def _seen(path: Path) -> str | None:
    """What the file at ``path`` is now (None: no file): a rewrite changes it."""
    try:
        return _signature(path.stat())
    except (FileNotFoundError, NotADirectoryError):
        return None


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except (FileNotFoundError, NotADirectoryError):
        return None


def _signature(st: os.stat_result) -> str:
    """Inode, size, link count and mtime: a file replaced or written changes it within
    one clock tick too (its inode or size), and so does a folder gaining or losing a
    sub-folder (its link count)."""
    return f"{st.st_ino}:{st.st_size}:{st.st_nlink}:{st.st_mtime_ns}"


def _row(
    folder: Path, info: RunInfo, seen: str | None, open_pid: int | None, touched: float
) -> Row:
    """A row of the index for ``folder`` holding ``info``; ``last_seq`` read from the
    journal's end unless a writer has it open."""
    summary = RunSummary.json_of(info)
    end = None if open_pid is not None else last_seq(folder / EVENTS_FILE)
    started = info.started or 0.0
    return folder.parent.name, folder.name, started, summary, seen, end, open_pid, touched


def _from_files(folder: Path) -> Row | None:
    """A row for ``folder`` from its files (None when it holds no run); open while its
    ``run.json`` says in_progress and its process lives."""
    seen = _seen(folder / RUN_FILE)  # before the read: a later write shows as a change
    journal = _mtime(folder / EVENTS_FILE)
    if seen is None and journal is None:
        return None  # no run in it
    touched = max(journal or 0.0, _mtime(folder / RUN_FILE) or 0.0)
    try:
        info = read_run(folder)
    except OSError as exc:
        log.warning("run folder %s cannot be read: %s", folder, exc)
        return None
    writing = info.status == "in_progress" and alive(info.pid)
    return _row(folder, info, seen, info.pid if writing else None, touched)


class JournalIndex:
    """The journal writer's side of the index: opened at first use; a failure is logged
    and the journal goes on without it (a later sync or lookup catches up)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._index: RunIndex | None = None

    def _call(self, action: str, call: Callable[[RunIndex], Any]) -> Any:
        try:
            if self._index is None:
                self._index = RunIndex(self.data_dir)
            return call(self._index)
        except (sqlite3.Error, OSError) as exc:
            log.warning("run index: %s failed: %s", action, exc)
            return None

    def find(self, task_id: str) -> Path | None:
        found: Path | None = self._call(f"finding {task_id}", lambda index: index.find(task_id))
        return found

    def put(self, folder: Path, info: RunInfo) -> None:
        """``folder`` holds ``info`` and this process has its journal open."""
        self._call(f"indexing {folder}", lambda index: index.put(folder, info, os.getpid()))

    def closed(self, folder: Path) -> None:
        self._call(f"closing {folder}", lambda index: index.closed(folder))

    def close(self) -> None:
        if self._index is not None:
            self._index.close()
            self._index = None


def recent_runs(data_dir: Path) -> Callable[[float], list[Path]]:
    """The run folders of ``data_dir`` written at a time or later, as the screenshot
    upkeep asks (:func:`jarvis.memory.screenshot_refs.scan`'s ``recent_runs``)."""

    def touched(since: float) -> list[Path]:
        with RunIndex(data_dir) as index:
            return index.touched_since(since)

    return touched
