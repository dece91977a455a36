"""Appending to a file that only grows, crash-safe, without rewriting it.

An atomic rewrite (temp file, fsync, rename) leaves a file either as it was or as it
became, whatever the crash; it costs what the file holds. An append costs what it adds, but
a crash can leave a prefix of the new bytes at the end (and, after a power loss on some file
systems, that prefix followed by zeros), and such a prefix can read as a complete entry when
the entry's own text holds a line that closes entries. So an append here writes ahead:

1. ``NAME.append`` beside the file gets the offset, the file's inode and the bytes about to
   be appended, and is synced;
2. the bytes are appended (``O_APPEND``) and the file is synced;
3. the intent is cleared (not synced: an intent whose bytes the file holds in full is done).

:func:`repair`, called under the same lock as the appends before the file is read, cuts off
a tail that is a proper prefix of the intended bytes (zeros after it allowed): the file is
then exactly as before the append, as with the rewrite. A tail that is anything else (a
person's edit since) is never cut. The caller holds the file's lock for both.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from jarvis.fsutil import fsync_dir

log = logging.getLogger(__name__)

INTENT_SUFFIX = ".append"
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class Appended:
    offset: int
    """Where the bytes start in the file."""
    stat: os.stat_result
    """The file after the append (through the descriptor written to)."""
    replaced: bool
    """The path names another file now (an editor saved it meanwhile): the bytes went to the
    old one."""


@dataclass(frozen=True)
class Intent:
    offset: int
    inode: int
    data: bytes


def intent_path(path: Path) -> Path:
    return path.with_name(path.name + INTENT_SUFFIX)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:32]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _open_file(path: Path) -> tuple[int, bool]:
    """A descriptor appending to ``path`` (made if missing) and whether it was made. A link
    or another non-regular file there is replaced by a new file, never written through."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | _CLOEXEC
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(os.lstat(path).st_mode):
            log.warning("%s is not a regular file; replacing it with one", path)
            os.unlink(path)
    try:
        return os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o666), True
    except FileExistsError:
        return os.open(path, flags), False


def write_intent(path: Path, intent: Intent) -> bool:
    """Record ``intent`` durably; True when its file was made (its name is not durable yet)."""
    target = intent_path(path)
    made = not target.exists()
    head = f"{intent.offset} {intent.inode} {len(intent.data)} {_digest(intent.data)}\n"
    fd = os.open(target, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | _CLOEXEC, 0o666)
    try:
        os.ftruncate(fd, 0)
        _write_all(fd, head.encode("ascii") + intent.data)
        os.fdatasync(fd)
    finally:
        os.close(fd)
    return made


def read_intent(path: Path) -> Intent | None:
    """The recorded intent, or None (none, cleared, or itself cut short by a crash: then the
    append it announced never started)."""
    try:
        fd = os.open(intent_path(path), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC)
    except OSError:  # none, or a link (never ours)
        return None
    with os.fdopen(fd, "rb") as f:
        raw = f.read() if stat.S_ISREG(os.fstat(fd).st_mode) else b""
    head, _, data = raw.partition(b"\n")
    try:
        offset, inode, length, digest = head.decode("ascii").split()
        intent = Intent(int(offset), int(inode), data)
    except ValueError:
        return None
    if len(data) != int(length) or _digest(data) != digest:
        return None
    return intent


def clear_intent(path: Path) -> None:
    try:
        fd = os.open(intent_path(path), os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC)
    except OSError:
        return
    try:
        if _regular(os.fstat(fd)):
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)


def append(path: Path, data: bytes) -> Appended:
    """Append ``data`` to ``path`` durably (see the module doc). The caller holds its lock."""
    fd, made = _open_file(path)
    try:
        before = os.fstat(fd)
        made_intent = write_intent(path, Intent(before.st_size, before.st_ino, data))
        if made or made_intent:
            fsync_dir(path.parent)  # the names, before any byte that depends on them
        _write_all(fd, data)
        os.fsync(fd)
        after = os.fstat(fd)
    finally:
        os.close(fd)
    clear_intent(path)
    try:
        replaced = os.lstat(path).st_ino != after.st_ino
    except FileNotFoundError:
        replaced = True
    return Appended(before.st_size, after, replaced)


def repair(path: Path) -> int:
    """Cut off a tail an interrupted :func:`append` left; the number of bytes cut (0 when the
    file is whole). The caller holds the file's lock."""
    intent = read_intent(path)
    if intent is None:
        return 0
    cut = 0
    with contextlib.suppress(FileNotFoundError):
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC)
        try:
            st = os.fstat(fd)
            if st.st_ino == intent.inode and st.st_size > intent.offset and _regular(st):
                tail = os.pread(fd, len(intent.data) + 1, intent.offset)
                if is_torn(tail, intent.data):
                    os.ftruncate(fd, intent.offset)
                    os.fsync(fd)
                    cut = len(tail)
        finally:
            os.close(fd)
    clear_intent(path)
    return cut


def _regular(st: os.stat_result) -> bool:
    return stat.S_ISREG(st.st_mode)


def is_torn(tail: bytes, data: bytes) -> bool:
    """``tail`` (what the file holds from the intent's offset) is a cut-short ``data``:
    a proper prefix of it, maybe followed by zeros."""
    return len(tail) <= len(data) and tail != data and data.startswith(tail.rstrip(b"\0"))
