"""Reading the inbox channel's drop files safely: which names are read (:func:`wanted`),
a folder or file opened without following a link and only up to the cap on a message
(:func:`open_folder`, :func:`read_drop_file`; anything else is :class:`Refused`), the
front matter of a drop file and the id its message gets."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from jarvis.gateway.markdown import normalize_newlines, short_hash
from jarvis.gateway.message_format import MAX_MESSAGE_CHARS, normalize_key

MAX_DROP_BYTES = 4 * MAX_MESSAGE_CHARS
"""A drop file is read only up to this size (the API's cap on a message, in UTF-8's worst
case); a larger one is refused unread."""


def wanted(name: str) -> bool:
    """Drop files Jarvis reads: ``*.md``, not hidden, not an editor's temp file."""
    return (
        name.lower().endswith(".md")
        and not name.startswith((".", "#", "~"))
        and not name.endswith(("~", ".tmp"))
    )


def split_front_matter(text: str) -> tuple[dict[str, str], str]:
    """``(fields, body)``; text without a well-formed ``---`` header is all body."""
    lines = normalize_newlines(text).split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        return {}, text
    fields: dict[str, str] = {}
    for line in lines[1:end]:
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        if not sep or not key.strip():
            return {}, text  # a horizontal rule, not front matter
        fields[normalize_key(key)] = value.strip().strip("\"'")
    return fields, "\n".join(lines[end + 1 :])


class Refused(Exception):
    """A drop entry that is not read; the message says why."""


DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


@contextlib.contextmanager
def open_folder(parent: Path | int, name: str, *, create: bool = False) -> Iterator[int]:
    """A descriptor of the folder ``name`` in ``parent`` (a path or a folder descriptor),
    opened without following a link: :class:`Refused` when it is a link or not a folder,
    ``FileNotFoundError`` when it is missing and not ``create``."""
    dir_fd, where = (parent, name) if isinstance(parent, int) else (None, str(parent / name))
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(where, 0o700, dir_fd=dir_fd)
    try:
        fd = os.open(where, DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise Refused(f"{where} is a symbolic link or not a folder") from None
        raise Refused(f"{where} cannot be opened: {exc.strerror}") from None
    try:
        yield fd
    finally:
        os.close(fd)


def read_drop_file(path: Path | str, dir_fd: int | None = None) -> tuple[bytes, float]:
    """``(bytes, mtime)`` of a drop file: a regular file opened without following a link
    (relative to ``dir_fd`` when given), at most :data:`MAX_DROP_BYTES`. Raises
    :class:`Refused` for anything else."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refused("a symbolic link (only regular files are read)") from None
        if isinstance(exc, FileNotFoundError):
            raise
        raise Refused(f"cannot be opened: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise Refused("not a regular file")
        if st.st_size > MAX_DROP_BYTES:
            raise Refused(f"{st.st_size} bytes, over the {MAX_DROP_BYTES}-byte limit")
        data = f.read(MAX_DROP_BYTES + 1)
    if len(data) > MAX_DROP_BYTES:
        raise Refused(f"over the {MAX_DROP_BYTES}-byte limit")
    return data, st.st_mtime


def drop_message_id(name: str, mtime: float, text: str) -> str:
    """The same file always gives the same id, so importing it twice is a no-op."""
    return f"m-{datetime.fromtimestamp(mtime):%Y%m%d-%H%M%S}-{short_hash(name, text, length=8)}"


def lexists(name: str, dir_fd: int) -> bool:
    try:
        os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    return True


def fsync_folder(fd: int) -> None:
    """Make a rename in the folder ``fd`` durable."""
    with contextlib.suppress(OSError):
        os.fsync(fd)
