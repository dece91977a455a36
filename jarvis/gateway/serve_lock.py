"""One ``jarvis serve`` per data dir: an fcntl lock on ``DATA/serve.lock``.

The OS releases the lock when the process dies, even by ``kill -9``. The holder writes who
it is into the file, so a second ``serve`` can say who runs.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from jarvis.gateway.markdown import format_timestamp, now

LOCK_NAME = "serve.lock"
HOLDER_WAIT_S = 1.0


class ServeLockHeld(Exception):
    """Another ``jarvis serve`` runs for this data dir; ``holder`` says who (or None)."""

    def __init__(self, path: Path, holder: dict[str, Any] | None) -> None:
        self.path = path
        self.holder = holder
        if holder:
            who = (
                f"pid {holder.get('pid')} on {holder.get('host')}, started {holder.get('started')}"
            )
        else:
            who = "a process that has not written its name yet"
        super().__init__(f"another `jarvis serve` is running for this data dir: {who} ({path})")


def read_holder(path: Path, wait_s: float = HOLDER_WAIT_S) -> dict[str, Any] | None:
    """Who holds the serve lock, from the file; waits briefly for a holder still writing."""
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


class ServeLock:
    """An exclusive, non-blocking fcntl lock on ``DATA/serve.lock`` naming its holder."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise ServeLockHeld(self.path, read_holder(self.path)) from None
            raise
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": format_timestamp(now()),
            "data_dir": str(self.path.parent.resolve()),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(holder) + "\n").encode(), 0)
        os.fsync(fd)
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        os.ftruncate(fd, 0)  # a left-over file names nobody
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def __enter__(self) -> ServeLock:
        self.acquire()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
