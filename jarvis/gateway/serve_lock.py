"""One ``jarvis serve`` per data dir: an owner lock on ``DATA/serve.lock``; and its stop
on SIGTERM and SIGINT.

The OS releases the lock when the process dies, even by ``kill -9``. The holder writes who
it is into the file, so a second ``serve`` can say who runs (see :mod:`jarvis.owner_lock`).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from jarvis.discovery import LOCK_FILE
from jarvis.owner_lock import LockHeld, OwnerLock, describe_holder

LOCK_NAME = LOCK_FILE


class ServeLockHeld(LockHeld):
    """Another ``jarvis serve`` runs for this data dir; ``holder`` says who (or None)."""

    def __init__(self, path: Path, holder: dict[str, Any] | None) -> None:
        who = describe_holder(holder)
        message = f"another `jarvis serve` is running for this data dir: {who} ({path})"
        super().__init__("the data dir", path, holder, message)


class ServeLock(OwnerLock):
    """An exclusive, non-blocking lock on ``DATA/serve.lock`` naming its holder."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__(Path(data_dir) / LOCK_NAME, "the data dir")

    def _held(self, holder: dict[str, Any] | None) -> LockHeld:
        return ServeLockHeld(self.path, holder)


@contextlib.contextmanager
def stop_on_signals(stop: Callable[[], None], enabled: bool = True) -> Iterator[None]:
    """While inside, SIGTERM and SIGINT call ``stop`` (nothing when not ``enabled``)."""
    if not enabled:
        yield
        return
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop)
    try:
        yield
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
