"""A gateway file read and written safely beside other writers.

The queue files and ``todos.md`` are written by the daemon, the CLI, the TUI and people
with an editor. So every file is read and written under a cross-process lock (a sibling
``NAME.lock``), written atomically (temp file, fsync, rename, fsync the directory), and a
write is refused when the file changed on disk since it was read (an editor that does not
take our lock), so the caller reads again instead of losing that edit. A read made while an
editor saves in place is made again rather than parsed half-written.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import random
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from filelock import FileLock

from jarvis.fsutil import atomic_write_bytes

log = logging.getLogger(__name__)

R = TypeVar("R")

LOCK_TIMEOUT_S = 30.0
LOCK_POLL_S = 0.005
WRITE_PATIENCE_S = 10.0
"""How long a change is tried again while other writers keep changing its file (an editor
saving every few milliseconds); a change given up is lost, a wait is only slow."""
RETRY_PAUSE_S = 0.005
RETRY_PAUSE_MAX_S = 0.05
TORN_READS = 20


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
        try:
            stamp, data = self._read_whole()
        except FileNotFoundError:
            return Snapshot("", None)
        except _NotRegular as exc:
            stamp = _stamp(self.path)
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

    def _read_whole(self) -> tuple[tuple[int, int, int] | None, bytes]:
        """The file's stamp and bytes, read again while a writer that does not replace the
        file (an editor saving in place) is half-way through: a torn read is neither parsed
        nor taken for a person's malformed edit. Past :data:`TORN_READS` the last read is
        returned; a write made from it is refused by its stamp."""
        for _ in range(TORN_READS):
            stamp = _stamp(self.path)
            data = _read_regular(self.path)
            if stamp is not None and stamp[1] == len(data) and _stamp(self.path) == stamp:
                break
            time.sleep(LOCK_POLL_S)
        return stamp, data

    def stamp(self) -> tuple[int, int, int] | None:
        """(inode, size, mtime_ns) of the file now; None when it is missing."""
        return _stamp(self.path)

    def replace(self, snapshot: Snapshot, text: str) -> None:
        """Write ``text`` unless the file changed since ``snapshot`` (then ChangedOnDisk)."""
        if _stamp(self.path) != snapshot.stamp:
            raise ChangedOnDisk(str(self.path))
        atomic_write_bytes(self.path, text.encode("utf-8", "surrogateescape"))


def retrying(operation: Callable[[], R], what: str) -> R:
    """Run a read-modify-write ``operation`` again while a file changes under it, for up
    to :data:`WRITE_PATIENCE_S` (then ChangedOnDisk)."""
    deadline = time.monotonic() + WRITE_PATIENCE_S
    attempt = 0
    while True:
        attempt += 1
        try:
            return operation()
        except ChangedOnDisk as exc:
            if time.monotonic() >= deadline:
                raise ChangedOnDisk(
                    f"{what}: the file kept changing; gave up after {attempt} tries"
                    f" in {WRITE_PATIENCE_S:.0f} s"
                ) from exc
            log.info(
                "%s: %s changed while we wrote it (attempt %d); reading again", what, exc, attempt
            )
            # let the other writer finish
            time.sleep(random.uniform(0, min(RETRY_PAUSE_S * attempt, RETRY_PAUSE_MAX_S)))
