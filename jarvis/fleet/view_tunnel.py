"""A live-view session carried through Redis, for a worker whose display the coordinator
cannot reach (another host; DESIGN section 11). Both sides use it.

The coordinator (the relay of ``/api/vnc/worker/NAME``) makes a session id, sends the
worker a ``view`` control message (the session, and the access: ``view`` or ``full``, the
latter only after it checked the takeover's ticket) and waits for the worker's first
entry. The worker starts x11vnc on its own display (127.0.0.1 only), logs in to it with
the password of that access (passwords never leave the worker), says ``ready`` and then
copies bytes: what x11vnc sends goes to the stream ``jarvis:view:SESSION:down``, what
the viewer sends comes on ``jarvis:view:SESSION:up``. Either side ends the session with an
``end`` entry (its reason). The worker opens no port; both streams expire when idle.

Side: both (the coordinator and the workers).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from typing import TYPE_CHECKING, Any

from jarvis.fleet import control, keys
from jarvis.fleet.redis_queue import fields_of

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger(__name__)
IDLE_EXPIRY_S = 120
"""A session's streams go this long after their last entry (a side that died)."""
READY_WAIT_S = 20.0
"""How long the coordinator waits for the worker's x11vnc and login."""
READ_BLOCK_MS = 1000
MAX_ENTRIES = 4000


class TunnelError(RuntimeError):
    """The worker did not serve the view; the message says why."""


class TunnelEnd:
    """One side of a session: writes to ``out``, reads from ``into``. As the coordinator's
    end it is the relay's upstream (:class:`jarvis.api.vnc_relay.Upstream`)."""

    def __init__(self, redis: Redis, session: str, out: str, into: str) -> None:
        self.redis = redis
        self.session = session
        self.out_key = keys.view_key(session, out)
        self.into_key = keys.view_key(session, into)
        self.after = "0-0"
        self.ended = False
        self._said_end = False

    async def say(self, **fields: str | bytes) -> None:
        entry: Any = fields
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.xadd(self.out_key, entry, maxlen=MAX_ENTRIES, approximate=True)
            pipe.expire(self.out_key, IDLE_EXPIRY_S)
            await pipe.execute()

    async def write(self, data: bytes) -> None:
        if data and not self._said_end:
            await self.say(d=data)

    async def read(self) -> bytes:
        """The next bytes the other side sent; b"" once it ended the session."""
        while not self.ended:
            chunks = [e["d"] for e in await self.entries() if "d" in e]
            if chunks:
                return b"".join(chunks)
        return b""

    async def entries(self, block_ms: int = READ_BLOCK_MS) -> list[dict[str, Any]]:
        """The other side's next entries (raw ``d`` bytes kept); marks the end."""
        found: Any = await self.redis.xread({self.into_key: self.after}, count=64, block=block_ms)
        out: list[dict[str, Any]] = []
        for _stream, rows in found or []:
            for entry_id, raw in rows:
                self.after = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
                data = raw.get(b"d", raw.get("d"))
                if data is not None:
                    out.append({"d": data if isinstance(data, bytes) else data.encode()})
                    continue
                fields = fields_of(raw)
                out.append(fields)
                if "end" in fields:
                    self.ended = True
                    log.info("view %s: the other side ended it: %s", self.session, fields["end"])
                    return out
        return out

    async def close(self, why: str = "closed") -> None:
        """End the session (once); the other side's reads return b""."""
        if self._said_end:
            return
        self._said_end = True
        try:
            await self.say(end=why)
        except Exception as exc:  # Redis gone: the streams expire by themselves
            log.info("view %s: could not say its end: %s", self.session, exc)


async def open_view(redis: Redis, worker: str, access: str) -> TunnelEnd:
    """The coordinator's end of a new session with ``worker`` (``access``: view or full),
    once the worker said it is ready; :class:`TunnelError` when it refused or did not
    answer within :data:`READY_WAIT_S`."""
    session = secrets.token_urlsafe(18)
    end = TunnelEnd(redis, session, out="up", into="down")
    message = control.Control("view", "-", session=session, access=access)
    await control.send(redis, worker, message)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + READY_WAIT_S
    while loop.time() < deadline:
        for entry in await end.entries():
            if entry.get("ready"):
                return end
            if "end" in entry:
                raise TunnelError(f"worker {worker} cannot serve its view: {entry['end']}")
    await end.close("no answer")
    raise TunnelError(f"worker {worker} did not answer the view request in {READY_WAIT_S:.0f} s")
