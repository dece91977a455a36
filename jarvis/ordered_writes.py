"""Writes done in order on one thread of their own, off the caller's path (run records,
short-term memory: they fsync); :meth:`OrderedWrites.flush` waits for all so far."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


class OrderedWrites:
    """One writer thread named ``name``; a failed write (``OSError``) is said in the log
    at :meth:`flush` as "``what``: the error", and the caller goes on."""

    def __init__(self, name: str, what: str) -> None:
        self.what = what
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=name)
        self._pending: list[Future[Any]] = []
        self._lock = threading.Lock()

    def submit(self, work: Callable[..., T], *args: Any) -> Future[T]:
        """Run ``work(*args)`` after every write submitted before it."""
        future = self._pool.submit(work, *args)
        with self._lock:
            self._pending = [f for f in self._pending if not f.done()] + [future]
        return future

    def flush(self) -> None:
        """Wait until every write so far is done."""
        with self._lock:
            pending, self._pending = self._pending, []
        for future in pending:
            try:
                future.result()
            except OSError as exc:
                log.warning("%s: %s", self.what, exc)

    def close(self) -> None:
        self.flush()
        self._pool.shutdown(wait=True)
