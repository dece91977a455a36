"""A worker's artefacts, sent to the coordinator: the files its run wrote under its own
data dir (step records and pictures, screenshots, approval screenshots), each once per
version, as ``artefact`` entries of ``jarvis:events`` with their relative path."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jarvis.fleet import keys
from jarvis.fleet.wire import MAX_ARTEFACT_BYTES, artefact_fields

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger(__name__)

SHIPPED_DIRS = ("runs", "memory/steps", "memory/screenshots", "approvals")
KEPT_HERE = ("events.jsonl", "run.json", "seq")
"""The coordinator writes these itself (its journal): never shipped."""


class Shipper:
    def __init__(self, redis: Redis, data_dir: Path, worker: str) -> None:
        self.redis = redis
        self.data_dir = data_dir
        self.worker = worker
        self._sent: dict[str, tuple[int, int]] = {}

    def prime(self) -> None:
        """Count what is already on disk as sent (an earlier life's files stay here)."""
        for rel, path in self.changed():
            st = path.stat()
            self._sent[rel] = (st.st_mtime_ns, st.st_size)

    def changed(self) -> list[tuple[str, Path]]:
        """Files new or changed since they were last sent, by relative path."""
        found = []
        for top in SHIPPED_DIRS:
            root = self.data_dir / top
            if not root.is_dir():
                continue
            for path in sorted(root.rglob("*")):
                if not path.is_file() or path.name in KEPT_HERE or path.name.startswith("."):
                    continue
                st = path.stat()
                rel = path.relative_to(self.data_dir).as_posix()
                if self._sent.get(rel) != (st.st_mtime_ns, st.st_size):
                    found.append((rel, path))
        return found

    async def ship(self, task_id: str) -> int:
        """Send what changed; the number of files sent."""
        sent = 0
        for rel, path in self.changed():
            try:
                st = path.stat()
                data = path.read_bytes()
            except OSError as exc:
                log.warning("artefact %s not sent: %s", rel, exc)
                continue
            if len(data) > MAX_ARTEFACT_BYTES:
                log.warning("artefact %s not sent: %d bytes is too large", rel, len(data))
                continue
            fields: Any = artefact_fields(rel, data, task_id, self.worker)
            await self.redis.xadd(keys.EVENTS, fields)
            self._sent[rel] = (st.st_mtime_ns, st.st_size)
            sent += 1
        return sent
