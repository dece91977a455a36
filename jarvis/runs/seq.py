"""Journal sequence numbers: unique and increasing across every process of a data dir."""

from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path

from jarvis.runs.folder import newest_seq_on_disk

log = logging.getLogger(__name__)

SEQ_FILE = "seq"


class SeqCounter:
    """Sequence numbers unique across processes sharing a data dir (``runs/seq``, flock'd)."""

    def __init__(self, data_dir: Path) -> None:
        self.root = data_dir / "runs"
        self.path = self.root / SEQ_FILE
        self._fd: int | None = None
        self._floor = 0

    def _open(self) -> int:
        if self._fd is None:
            self.root.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            self._floor = newest_seq_on_disk(self.root)  # in case the counter was lost
        return self._fd

    def next(self) -> int:
        fd = self._open()
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            raw = os.pread(fd, 64, 0).strip()
            try:
                current = int(raw) if raw else 0
            except ValueError:
                log.warning("%s is not a number (%r); continuing from the journals", self.path, raw)
                current = 0
            value = max(current, self._floor) + 1
            os.pwrite(fd, b"%020d\n" % value, 0)
            return value
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
