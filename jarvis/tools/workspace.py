"""Paths inside the workspace folder: resolve, then open without leaving it.

:func:`resolve_inside` walks the path one component at a time from the workspace root,
following symlinks itself (at most :data:`MAX_LINKS`), so it can say exactly why a path
is refused: ``..`` above the root, an absolute path elsewhere, a symlink that leads out,
a symlink loop. The result contains no symlink and lies inside the root.

Opening closes the gap between that check and the use (TOCTOU): the last component is
opened with ``O_NOFOLLOW`` (and ``O_NONBLOCK``, so a FIFO swapped in never blocks), the
file type is checked with ``fstat`` on the open descriptor, and the descriptor's real
path (``/proc/self/fd``) must still be inside the root. Writes go through a directory
descriptor checked the same way: a temporary file, ``fsync``, then ``rename``.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path, PurePosixPath

MAX_LINKS = 40


class Refused(Exception):
    """A path or file the workspace tools must not touch; the message says why."""


class Missing(Exception):
    """The path names nothing (a mistake the model can fix)."""


def kind_of(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device file"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


def _inside(root: Path, path: Path | str) -> bool:
    path = Path(path)
    return path == root or root in path.parents


def resolve_inside(root: Path, user_path: str) -> Path:
    """The real path ``user_path`` names inside ``root`` (an absolute, resolved folder).

    Components that do not exist yet are kept as written (for a file to create).
    Raises :class:`Refused` with the reason when the path would leave the root.
    """
    if "\x00" in user_path:
        raise Refused("the path contains a NUL character")
    given = PurePosixPath(user_path.strip() or ".")
    if given.is_absolute():
        if not _inside(root, Path(given)):
            raise Refused(
                f"'{user_path}' is an absolute path outside the workspace; use a path "
                "relative to the workspace"
            )
        given = PurePosixPath(Path(given).relative_to(root))
    pending: deque[str] = deque(given.parts)
    current = root
    links = 0
    while pending:
        part = pending.popleft()
        if part in ("", "."):
            continue
        if part == "..":
            if current == root:
                raise Refused(f"'{user_path}' goes above the workspace with '..'")
            current = current.parent
            continue
        step = current / part
        try:
            info = os.lstat(step)
        except FileNotFoundError:
            current = step
            continue
        except NotADirectoryError:
            raise Missing(f"'{user_path}': {current.name} is not a folder") from None
        if not stat.S_ISLNK(info.st_mode):
            current = step
            continue
        links += 1
        if links > MAX_LINKS:
            raise Refused(f"'{user_path}' runs into a symlink loop")
        target = PurePosixPath(os.readlink(step))
        if target.is_absolute():
            if not _inside(root, Path(target)):
                raise Refused(f"'{user_path}' is a symlink that leads outside the workspace")
            current = root
            target = PurePosixPath(Path(target).relative_to(root))
        pending.extendleft(reversed(target.parts))
    return current


def relative(root: Path, path: Path) -> str:
    return str(path.relative_to(root)) if path != root else "."


def _check_fd(root: Path, fd: int, shown: str) -> None:
    """The open descriptor really is inside the root (nothing was swapped under us)."""
    try:
        real = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # no /proc: the component-wise walk and O_NOFOLLOW stand alone
        return
    if not _inside(root, real):
        raise Refused(f"'{shown}' changed while it was opened and now lies outside the workspace")


def _open_flags(base: int) -> int:
    return base | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


@contextmanager
def open_checked(root: Path, path: Path, shown: str, *, directory: bool = False) -> Iterator[int]:
    """A descriptor for an existing file (or folder) inside the root, type-checked."""
    try:
        before = os.lstat(path)
    except FileNotFoundError:
        raise Missing(f"'{shown}' does not exist") from None
    wanted = "dir" if directory else "file"
    if kind_of(before.st_mode) != wanted:
        raise Refused(f"'{shown}' is a {kind_of(before.st_mode)}, not a {_word(wanted)}")
    flags = _open_flags(os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refused(f"'{shown}' became a symlink while it was opened") from None
        raise
    try:
        after = os.fstat(fd)
        if kind_of(after.st_mode) != wanted or (after.st_dev, after.st_ino) != (
            before.st_dev,
            before.st_ino,
        ):
            raise Refused(f"'{shown}' changed while it was opened")
        _check_fd(root, fd, shown)
        yield fd
    finally:
        os.close(fd)


def _word(kind: str) -> str:
    return "folder" if kind == "dir" else "regular file"


def read_capped(fd: int, limit: int) -> bytes:
    """At most ``limit + 1`` bytes (one more tells the file grew past the cap)."""
    chunks: list[bytes] = []
    left = limit + 1
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def write_atomic(root: Path, path: Path, data: bytes, shown: str) -> bool:
    """Replace (or create) ``path`` with ``data`` atomically; True when it was created.

    Missing parent folders are made inside the root. The temporary file is created with
    ``O_EXCL | O_NOFOLLOW`` in the checked parent folder and renamed over the target,
    which replaces a FIFO or symlink there rather than writing through it; a folder or a
    special file at the target is refused.
    """
    parent = path.parent
    if not _inside(root, parent):  # resolve_inside guarantees it; a last guard
        raise Refused(f"'{shown}' lies outside the workspace")
    with _folder_fd(root, parent, shown) as dir_fd:
        try:
            existing = os.lstat(path.name, dir_fd=dir_fd)
        except FileNotFoundError:
            existing = None
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            raise Refused(f"'{shown}' is a {kind_of(existing.st_mode)}; write_file writes files")
        temp = f".{path.name}.{secrets.token_hex(6)}.tmp"
        fd = os.open(
            temp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
            0o644,
            dir_fd=dir_fd,
        )
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(temp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with suppress(FileNotFoundError):
                os.unlink(temp, dir_fd=dir_fd)
            raise
        os.fsync(dir_fd)
    return existing is None


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


@contextmanager
def _folder_fd(root: Path, folder: Path, shown: str) -> Iterator[int]:
    """A descriptor of ``folder``, its missing parts made on the way down from the root.

    Each part is made and opened relative to its parent's descriptor, never by path, with
    ``O_NOFOLLOW``: a folder swapped for a symlink meanwhile is refused, not followed, so
    no folder is ever made outside the root.
    """
    fd = os.open(root, _DIR_FLAGS)
    current = root
    try:
        for part in folder.relative_to(root).parts:
            current = current / part
            with suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=fd)
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                    raise
                try:
                    kind = kind_of(os.lstat(part, dir_fd=fd).st_mode)
                except FileNotFoundError:
                    kind = "folder that vanished"
                raise Refused(f"'{shown}': {relative(root, current)} is a {kind}") from None
            os.close(fd)
            fd = child
        _check_fd(root, fd, shown)
        yield fd
    finally:
        os.close(fd)
