"""A worker's artefacts, sent to the coordinator: the files its run wrote under its own
data dir (step records and pictures, screenshots, approval screenshots), each once per
version, as ``artefact`` entries of ``jarvis:events`` with their relative path.

What was sent is remembered (path -> mtime and size), so only new or changed files go.
Finding them walks the folders, off the event loop: after a step, only the date folders
(``YYYY-MM-DD``) from ``since`` on and the folders that are not dates (a run writes into
today's folders); before the outcome, everything (a run may write into an older run's
folder, and that last walk is what promises the coordinator every file before the
outcome).

Side: the worker.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jarvis.fleet import keys
from jarvis.fleet.wire import KEPT_HERE, MAX_ARTEFACT_BYTES, artefact_fields

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger(__name__)

SHIPPED_DIRS = ("runs", "memory/steps", "memory/screenshots", "approvals")
DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def since_day(now: float) -> str:
    """The first date folder a run started at ``now`` may write into: the day before, in
    local time or UTC, whichever is earlier (folders are named in one or the other)."""
    local = datetime.fromtimestamp(now).date()
    utc = datetime.fromtimestamp(now, UTC).date()
    return (min(local, utc) - timedelta(days=1)).isoformat()


class Shipper:
    def __init__(self, redis: Redis, data_dir: Path, worker: str) -> None:
        self.redis = redis
        self.data_dir = data_dir
        self.worker = worker
        self._sent: dict[str, tuple[int, int]] = {}
        self._one_at_a_time = asyncio.Lock()

    def prime(self) -> None:
        """Count what is already on disk as sent (an earlier life's files stay here)."""
        for rel, path in self.changed():
            st = path.stat()
            self._sent[rel] = (st.st_mtime_ns, st.st_size)

    def changed(self, since: str | None = None) -> list[tuple[str, Path]]:
        """Files new or changed since they were last sent, by relative path; with
        ``since`` (a day, ``YYYY-MM-DD``), date folders before it are not looked at."""
        found: list[tuple[str, Path]] = []
        for top in SHIPPED_DIRS:
            self._walk(self.data_dir / top, top, since, found)
        return found

    def _walk(self, folder: Path, rel: str, since: str | None, found: list[Any]) -> None:
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            return
        for entry in entries:
            name, path = entry.name, folder / entry.name
            if entry.is_dir():
                if since is None or not DAY.fullmatch(name) or name >= since:
                    self._walk(path, f"{rel}/{name}", since, found)
                continue
            if not entry.is_file() or name in KEPT_HERE or name.startswith("."):
                continue
            try:
                st = entry.stat()
            except FileNotFoundError:
                continue
            if self._sent.get(f"{rel}/{name}") != (st.st_mtime_ns, st.st_size):
                found.append((f"{rel}/{name}", path))

    async def ship(self, task_id: str, since: str | None = None) -> int:
        """Send what changed (see :meth:`changed`); the number of files sent. One ship at a
        time: two lanes asking at once do not send a file twice."""
        async with self._one_at_a_time:
            sent = 0
            for rel, path in await asyncio.to_thread(self.changed, since):
                try:
                    st, data = await asyncio.to_thread(_read, path)
                except OSError as exc:
                    log.warning("artefact %s not sent: %s", rel, exc)
                    continue
                if data is None:
                    log.warning("artefact %s not sent: %d bytes is too large", rel, st.st_size)
                    continue
                fields: Any = artefact_fields(rel, data, task_id, self.worker)
                await self.redis.xadd(keys.EVENTS, fields)
                self._sent[rel] = (st.st_mtime_ns, st.st_size)
                sent += 1
            return sent


def _read(path: Path) -> tuple[os.stat_result, bytes | None]:
    """The file's stat and bytes (None when it is over the artefact limit)."""
    with path.open("rb") as f:
        st = os.fstat(f.fileno())  # (a file written meanwhile differs from it: sent again)
        data = f.read(MAX_ARTEFACT_BYTES + 1)
    return st, data if len(data) <= MAX_ARTEFACT_BYTES else None
