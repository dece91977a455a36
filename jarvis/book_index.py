"""A rebuildable index beside a book: SQLite, never the truth.

The books (``todos.md`` and its archive, the inbox archive, the run folders) stay plain
files that people read and edit. A book whose lookups must not scan its whole history keeps
an index here: a SQLite file that is deleted and rebuilt from the files whenever it is
missing, unreadable or of another schema version, and brought up to date from a file's
recorded size where the file only grows. Nothing is ever repaired in the other direction.

Writes are not synced (``synchronous=OFF``): a crash can lose the index's last changes, and
the owner notices it by the ``sources`` table (what size of which file was indexed) and
reads the rest again.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 10_000
_SOURCES = (
    "CREATE TABLE IF NOT EXISTS sources ("
    "name TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL)"
)


class BookIndex:
    """One SQLite index file, shared by threads of this process and by other processes.

    ``schema`` is the ``CREATE`` statements of the owner's tables; ``version`` is bumped when
    they change. :attr:`fresh` is true when the index was (re)made empty at open: the owner
    then rebuilds it from its files.
    """

    def __init__(self, path: Path, schema: Sequence[str], version: int) -> None:
        self.path = path
        self.version = version
        self._schema = [*schema, _SOURCES]
        self._lock = threading.RLock()
        self.fresh = False
        self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            db = self._connect()
            found = db.execute("PRAGMA user_version").fetchone()[0]
            tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
            if found == self.version and tables:
                return db
            db.close()
            reason = "new" if not tables else f"schema {found}, want {self.version}"
        except sqlite3.DatabaseError as exc:
            reason = f"unreadable ({exc})"
        if reason != "new":
            log.warning("index %s is %s; rebuilding it from the files", self.path, reason)
        self._remove_files()
        db = self._connect()
        with db:
            for statement in self._schema:
                db.execute(statement)
            db.execute(f"PRAGMA user_version = {int(self.version)}")
        self.fresh = True
        return db

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False, isolation_level=None
        )
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = OFF")
        return db

    def _remove_files(self) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                Path(f"{self.path}{suffix}").unlink()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- queries --
    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        with self._lock:
            row: tuple[Any, ...] | None = self._db.execute(sql, params).fetchone()
            return row

    @contextlib.contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """A transaction (``BEGIN IMMEDIATE``): committed on exit, rolled back on error."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def write(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self.writing() as db:
            db.executemany(sql, rows)

    # -- what of which file is indexed --
    def source(self, name: str) -> tuple[int, int] | None:
        """The (size, mtime_ns) of file ``name`` when it was last indexed."""
        row = self.one("SELECT size, mtime_ns FROM sources WHERE name = ?", (name,))
        return (int(row[0]), int(row[1])) if row else None

    @staticmethod
    def set_source(db: sqlite3.Connection, name: str, size: int, mtime_ns: int) -> None:
        """Record, inside a :meth:`writing` transaction, what of ``name`` is indexed."""
        db.execute(
            "INSERT INTO sources (name, size, mtime_ns) VALUES (?, ?, ?) "
            "ON CONFLICT(name) DO UPDATE SET size = excluded.size, mtime_ns = excluded.mtime_ns",
            (name, size, mtime_ns),
        )
