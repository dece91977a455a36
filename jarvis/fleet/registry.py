"""The fleet's workers, as they announce themselves: a heartbeat key per worker with a
TTL (JSON: name, host, display, size, version, task, state, last heartbeat, and the path
of the display's cookie file, which only a coordinator on the same host can use for its
live view). A worker that dies disappears when its key expires.

Side: both (the coordinator and the workers)."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from jarvis.fleet import keys

if TYPE_CHECKING:
    from redis.asyncio import Redis

HEARTBEAT_TTL_S = 15
HEARTBEAT_EVERY_S = 5.0


@dataclass
class WorkerInfo:
    name: str
    host: str
    display: str
    size: str
    version: str
    state: str = "idle"
    """idle, running, stopping"""
    task: str | None = None
    heartbeat: float = 0.0
    xauthority: str = ""
    """The cookie file of ``display`` on ``host`` (empty: the default one); a path, never
    the cookie, and not shown by the API."""
    views: bool = False
    """It serves a live view of its display through Redis (x11vnc on its own loopback;
    :mod:`jarvis.fleet.view_tunnel`), for a coordinator on another host."""
    frames: bool = False
    """It sends pictures of its display through Redis when asked (:mod:`jarvis.fleet.frames`):
    the coordinator's once-a-second live picture when it runs on another host."""


async def beat(redis: Redis, info: WorkerInfo, ttl_s: int = HEARTBEAT_TTL_S) -> None:
    info.heartbeat = time.time()
    await redis.set(keys.worker_key(info.name), json.dumps(asdict(info)), ex=ttl_s)


async def forget(redis: Redis, name: str) -> None:
    await redis.delete(keys.worker_key(name))


async def workers(redis: Redis) -> list[dict[str, Any]]:
    """Every live worker's last heartbeat, by name (a malformed key is skipped)."""
    found = []
    async for key in redis.scan_iter(match=keys.WORKER_PATTERN, count=100):
        raw = await redis.get(key)
        if raw is None:
            continue
        try:
            info = json.loads(raw)
        except ValueError:
            continue
        if isinstance(info, dict) and isinstance(info.get("name"), str):
            found.append(info)
    return sorted(found, key=lambda w: w["name"])
