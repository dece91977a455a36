"""Exclusive ownership of a resource by one process: an fcntl lock on a file naming its holder.

The OS releases the lock when the process dies, even by ``kill -9``, so a crash never
leaves a stale lock. The holder writes who it is (pid, host, command, start time) into the
file, so a process that finds the lock taken can say who has it.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import sys
import time
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

HOLDER_WAIT_S = 1.0
RETRY_S = 0.05


class LockHeld(Exception):
    """``what`` is held by another process; ``holder`` says who (or None)."""

    def __init__(
        self, what: str, path: Path, holder: dict[str, Any] | None, message: str | None = None
    ) -> None:
        self.what = what
        self.path = path
        self.holder = holder
        super().__init__(message or f"{what} is in use by {describe_holder(holder)} ({path})")


def describe_holder(holder: dict[str, Any] | None) -> str:
    if not holder:
        return "a process that has not written its name yet"
    command = f"`{holder['command']}`, " if holder.get("command") else ""
    return (
        f"{command}pid {holder.get('pid')} on {holder.get('host')}, started {holder.get('started')}"
    )


def read_holder(path: Path, wait_s: float = HOLDER_WAIT_S) -> dict[str, Any] | None:
    """Who holds the lock, from the file; waits briefly for a holder still writing."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and "pid" in data:
                return data
        except (OSError, ValueError):
            pass
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.02)


def _command() -> str:
    """``jarvis serve``, ``jarvis memory``...: the program and its first argument."""
    words = [Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python", *sys.argv[1:2]]
    return " ".join(w for w in words if w)


class OwnerLock:
    """An exclusive fcntl lock on ``path``; ``acquire`` waits up to ``wait_s`` for it."""

    def __init__(self, path: Path, what: str, *, wait_s: float = 0.0) -> None:
        self.path = Path(path)
        self.what = what
        self.wait_s = wait_s
        self._fd: int | None = None
        self._holder: dict[str, Any] = {}

    def acquire(self) -> None:
        """Take the lock or raise :class:`LockHeld` naming who has it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise self._held(read_holder(self.path)) from None
                time.sleep(RETRY_S)
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": _command(),
            "started": datetime.now().astimezone().isoformat(timespec="seconds"),
            "path": str(self.path.parent.resolve()),
        }
        self._fd = fd
        self._holder = holder
        self._write()

    @property
    def held(self) -> bool:
        return self._fd is not None

    def update(self, **fields: Any) -> None:
        """Add ``fields`` to what the file says about the holder (``serve`` adds the address
        its API listens on). Only while held."""
        if self._fd is None:
            raise RuntimeError(f"{self.path} is not held")
        self._holder = {**self._holder, **fields}
        self._write()

    def _write(self) -> None:
        assert self._fd is not None
        data = (json.dumps(self._holder) + "\n").encode()
        os.pwrite(self._fd, data, 0)  # then cut: a reader never finds the file empty
        os.ftruncate(self._fd, len(data))
        os.fsync(self._fd)

    def _held(self, holder: dict[str, Any] | None) -> LockHeld:
        return LockHeld(self.what, self.path, holder)

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        os.ftruncate(fd, 0)  # a left-over file names nobody
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def __enter__(self) -> OwnerLock:
        self.acquire()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
