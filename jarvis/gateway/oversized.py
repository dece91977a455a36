"""Messages over ``inbox.max_message_chars`` in ``messages/inbox.md``, cut out before the
inbox is read.

The queue reads the inbox whole and parses it (:mod:`jarvis.gateway.queue`), which costs
many times a message's size in memory; a 5 MB message appended by hand would cost the
daemon hundreds of MB. So before each read, :func:`cut_oversized` looks at the file's size
(one ``stat``: a file of at most ``max_chars`` bytes cannot hold a longer message) and,
only when it is larger, walks it in chunks of :data:`CHUNK` bytes, entry by entry (split by
the same header test the reader uses). An entry whose characters exceed the cap is copied
to ``messages/drop/refused/`` and the inbox is rewritten without it, both in chunks, so
memory stays flat whatever the size. The caller holds the inbox's lock; a file changed
while it was walked is left alone until the next read.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from jarvis.fsutil import fsync_dir
from jarvis.gateway.message_format import SEPARATOR, is_header

CHUNK = 64 * 1024
HEAD_MAX = 4096
"""A line longer than this (in bytes) is never taken for a header."""
BOM = b"\xef\xbb\xbf"
PREAMBLE = "(the text before the first message)"


@dataclass
class Entry:
    """A byte range of the inbox: one entry (or the text before the first one)."""

    start: int
    line: int
    head: str
    end: int = 0
    chars: int = 0


@dataclass(frozen=True)
class Cut:
    """An entry taken out of the inbox: where it was and where it went."""

    line: int
    head: str
    chars: int
    moved_to: Path


def _stamp(fd: int) -> tuple[int, int, int]:
    st = os.fstat(fd)
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _open(path: Path) -> int | None:
    """A descriptor of the regular file ``path`` (never through a link); None otherwise."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return fd


def entries(handle: IO[bytes]) -> list[Entry]:
    """The entries of an open binary file, with their byte ranges and the characters of
    each one's text: the lines after its header, without the blank and ``---`` lines that
    close it."""
    found: list[Entry] = [Entry(0, 1, PREAMBLE)]
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    offset, line, at_start, tail = 0, 0, True, 0
    while chunk := handle.readline(CHUNK):
        if offset == 0 and chunk.startswith(BOM):
            found[0].start = len(BOM)
            chunk, offset = chunk[len(BOM) :], len(BOM)
        whole = at_start and chunk.endswith(b"\n")
        if at_start:
            line += 1
        if at_start and len(chunk) <= HEAD_MAX and chunk.startswith(b"#"):
            head = chunk.decode("utf-8", "surrogateescape").rstrip("\r\n")
            if is_header(head):
                found[-1].end = offset
                found.append(Entry(offset, line, head[:120]))
                decoder.reset()
                offset, at_start, tail = offset + len(chunk), chunk.endswith(b"\n"), 0
                continue
        text = decoder.decode(chunk)
        if whole and text.strip() in ("", SEPARATOR):
            tail += len(text)
        else:
            eol = len(text) - len(text.rstrip("\r\n"))
            found[-1].chars += tail + len(text) - eol
            tail = eol
        offset, at_start = offset + len(chunk), chunk.endswith(b"\n")
    found[-1].end = offset
    return found


class _Changed(Exception):
    """The file changed while it was walked; it is left for the next read."""


def cut_oversized(path: Path, refused_dir: Path, max_chars: int) -> list[Cut]:
    """Move every entry of ``path`` over ``max_chars`` characters to ``refused_dir``; what
    was moved (nothing when the file is small, missing or changed meanwhile)."""
    fd = _open(path)
    if fd is None:
        return []
    with os.fdopen(fd, "rb") as handle:
        before = _stamp(handle.fileno())
        if before[1] <= max_chars:
            return []
        found = entries(handle)
        big = [e for e in found if e.chars > max_chars]
        if not big or _stamp(handle.fileno()) != before:
            return []
        moved = [_copy_out(handle, entry, refused_dir) for entry in big]
        try:
            _rewrite(handle, path, [e for e in found if e not in big], before)
        except _Changed:
            for copy in moved:
                copy.unlink(missing_ok=True)
            return []
    return [Cut(e.line, e.head, e.chars, to) for e, to in zip(big, moved, strict=True)]


def _copy(handle: IO[bytes], start: int, end: int, out: IO[bytes]) -> None:
    handle.seek(start)
    left = end - start
    while left > 0:
        chunk = handle.read(min(CHUNK, left))
        if not chunk:
            break
        out.write(chunk)
        left -= len(chunk)


def _copy_out(handle: IO[bytes], entry: Entry, refused_dir: Path) -> Path:
    refused_dir.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f"inbox-line{entry.line}-", suffix=".md", dir=refused_dir)
    with os.fdopen(fd, "wb") as out:
        _copy(handle, entry.start, entry.end, out)
        out.flush()
        os.fsync(out.fileno())
    fsync_dir(refused_dir)
    return Path(name)


def _rewrite(
    handle: IO[bytes], path: Path, kept: list[Entry], before: tuple[int, int, int]
) -> None:
    """``path`` made of the ``kept`` ranges, atomically, unless it changed since ``before``."""
    mode = os.stat(path).st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), mode)
            for entry in kept:
                _copy(handle, entry.start, entry.end, out)
            out.flush()
            os.fsync(out.fileno())
        st = os.lstat(path)
        if (st.st_ino, st.st_size, st.st_mtime_ns) != before:
            raise _Changed(str(path))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)
