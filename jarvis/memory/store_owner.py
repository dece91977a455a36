"""One process owns the long-term memory store at a time.

Two chromadb PersistentClients on one directory (say ``jarvis serve`` and a
``jarvis memory add`` beside it) can lose each other's writes, so opening the store takes an
owner lock on ``owner.lock`` beside it. Opens within one process share the lock.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from jarvis.owner_lock import LockHeld, OwnerLock, describe_holder

LOCK_NAME = "owner.lock"


class MemoryInUse(LockHeld):
    """Another process has the long-term memory open (``jarvis serve``, a ``jarvis run``)."""


class _StoreLock(OwnerLock):
    def _held(self, holder: dict[str, Any] | None) -> LockHeld:
        who = describe_holder(holder)
        message = (
            f"long-term memory is open in another process: {who}. Only one process may use "
            f"it at a time; stop that one (or wait for it) and run again ({self.path})"
        )
        return MemoryInUse(self.what, self.path, holder, message)


_held_stores: dict[Path, tuple[_StoreLock, int]] = {}
_held_guard = threading.Lock()


def claim_store(root: Path, wait_s: float) -> Path:
    """Own the store at ``root`` for this process (opens within the process share it)."""
    key = root.resolve()
    with _held_guard:
        lock, count = _held_stores.get(key, (None, 0))
        if lock is None:
            lock = _StoreLock(key / LOCK_NAME, "long-term memory", wait_s=wait_s)
            lock.acquire()
        _held_stores[key] = (lock, count + 1)
    return key


def release_store(key: Path) -> None:
    with _held_guard:
        lock, count = _held_stores.pop(key)
        if count > 1:
            _held_stores[key] = (lock, count - 1)
        else:
            lock.release()
