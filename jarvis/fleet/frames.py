"""The once-a-second picture of a worker's display for a coordinator on another machine
(``GET /api/screen/live`` of a task a remote worker runs; DESIGN section 11).

The coordinator cannot capture a display on another host, and the worker opens no port.
So the coordinator asks, with a ``frames`` control message (the monitor and size it wants),
and the worker sends a JPEG of its display to the stream ``jarvis:frame:WORKER`` (one entry
kept) once a second for :data:`SEND_FOR_S` after the last ask. The coordinator asks again
before that ends while someone watches, so the pictures stop soon after the last viewer
leaves. A picture is fresh when Redis added it within :data:`FRESH_S` (Redis's clock: the
two machines' clocks are never compared).

Side: both (the coordinator and the workers): :class:`FrameSender` runs on the worker,
:class:`RemoteFrames` on the coordinator.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from jarvis.desktop.live_frame import NoDisplay, capture_jpeg
from jarvis.fleet import control, keys

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from jarvis.desktop.backend import Where

log = logging.getLogger(__name__)
SEND_FOR_S = 10.0
"""How long a worker sends pictures after the last ask."""
SEND_EVERY_S = 1.0
ASK_AGAIN_S = 4.0
"""The coordinator asks again this long after its last ask (well before the sending ends)."""
FRESH_S = 2.5
WAIT_S = 6.0
"""How long the coordinator waits for a fresh picture (the worker's first capture)."""
KEEP_S = 30
"""The stream goes this long after its last picture."""


class FrameError(RuntimeError):
    """No fresh picture of the worker's display; the message says why."""


class FrameSender:
    """The worker's side: pictures of ``where`` while the coordinator asks."""

    def __init__(self, redis: Redis, worker: str, where: Where) -> None:
        self.redis = redis
        self.key = keys.frame_key(worker)
        self.where = where
        self.until = 0.0
        self.shape = (1, 1280)
        self._task: asyncio.Task[None] | None = None

    def want(self, message: control.Control) -> None:
        """A ``frames`` ask: send for :data:`SEND_FOR_S` more, at the size it names."""
        try:
            shape = (int(message.monitor or 1), int(message.max_side or 1280))
        except ValueError:
            log.warning("a frames ask with a malformed size ignored: %r", message)
            return
        if shape[0] < 0 or not 64 <= shape[1] <= 8192:
            log.warning("a frames ask with a size out of range ignored: %r", shape)
            return
        self.shape = shape
        self.until = time.monotonic() + SEND_FOR_S
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._send(), name=f"frames of {self.where.name}")

    async def _send(self) -> None:
        from redis.exceptions import RedisError

        while time.monotonic() < self.until:
            began = time.monotonic()
            entry: dict[str, Any]
            try:
                data = await asyncio.to_thread(capture_jpeg, self.where, *self.shape)
                entry = {"data": data, "monitor": str(self.shape[0])}
            except NoDisplay as exc:
                entry = {"error": str(exc)[:300]}
            try:
                fields: Any = entry
                async with self.redis.pipeline(transaction=False) as pipe:
                    pipe.xadd(self.key, fields, maxlen=1, approximate=False)
                    pipe.expire(self.key, KEEP_S)
                    await pipe.execute()
            except (RedisError, OSError) as exc:
                log.warning("a picture of %s was not sent: %s", self.where.name, exc)
                return
            if "error" in entry:
                return
            await asyncio.sleep(max(0.0, SEND_EVERY_S - (time.monotonic() - began)))

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


class RemoteFrames:
    """The coordinator's side: the fresh picture of a worker's display, asked for."""

    def __init__(self, redis: Redis) -> None:
        self.redis = redis
        self._asked: dict[str, float] = {}

    async def frame(self, worker: str, monitor: int, max_side: int) -> bytes:
        """Worker ``worker``'s display now (JPEG, at most :data:`FRESH_S` old); raises
        :class:`FrameError` when none comes within :data:`WAIT_S`."""
        from redis.exceptions import RedisError

        try:
            await self._ask(worker, monitor, max_side)
            return await self._fresh(worker)
        except (RedisError, OSError) as exc:
            raise FrameError("the fleet's Redis does not answer") from exc

    async def _ask(self, worker: str, monitor: int, max_side: int) -> None:
        if time.monotonic() - self._asked.get(worker, -ASK_AGAIN_S) < ASK_AGAIN_S:
            return
        ask = control.Control(kind="frames", task="-", monitor=str(monitor), max_side=str(max_side))
        await control.send(self.redis, worker, ask)
        self._asked[worker] = time.monotonic()

    async def _fresh(self, worker: str) -> bytes:
        key = keys.frame_key(worker)
        seconds, micros = await self.redis.time()
        oldest = int(seconds * 1000 + micros / 1000 - FRESH_S * 1000)
        after = f"{oldest}-0"  # entries Redis added within FRESH_S
        deadline = time.monotonic() + WAIT_S
        while (left := deadline - time.monotonic()) > 0:
            found: Any = await self.redis.xread({key: after}, count=1, block=int(left * 1000) + 1)
            for _stream, entries in found or []:
                for entry_id, raw in entries:
                    after = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
                    fields = {_text(k): v for k, v in (raw or {}).items()}
                    if "error" in fields:
                        raise FrameError(f"worker {worker}: {_text(fields['error'])}")
                    if isinstance(fields.get("data"), bytes) and fields["data"]:
                        return bytes(fields["data"])
        raise FrameError(f"worker {worker} sent no picture of its display within {WAIT_S:.0f} s")


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
