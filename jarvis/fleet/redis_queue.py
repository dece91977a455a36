"""The Redis Streams engine of the queue protocol, and its janitor.

- dispatch: ``XADD jarvis:tasks`` once per task (``jarvis:carried`` says which entry
  carries it); :meth:`RedisQueue.redispatch` sends again every given task that no entry
  carries (after Redis lost its data: ``todos.md`` is the truth).
- claim: ``XREADGROUP GROUP workers NAME COUNT 1``, then a lease (a random token, PX).
- renew: the lease's expiry, and the entry's idle time (``XCLAIM ... JUSTID``), so the
  janitor leaves a live worker's task alone.
- complete: the outcome onto ``jarvis:events`` and ``XACK``, only with the current token.
- give back: ``XACK`` and a fresh entry for the same attempt, at once.
- janitor: ``XAUTOCLAIM`` entries idle past the lease time; a task whose lease is gone
  goes back to the stream as its next attempt, or fails past ``max_attempts``.

Side: both (the coordinator and the workers).
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jarvis.fleet import keys, scripts
from jarvis.fleet.protocol import Claim, check_status

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger(__name__)

LEASE_MS = 30_000
MAX_ATTEMPTS = 3
REAP_BATCH = 50


def text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def fields_of(raw: dict[Any, Any]) -> dict[str, str]:
    """A stream entry's fields as text (binary values are for artefacts only)."""
    return {text(k): text(v) for k, v in raw.items()}


class MalformedTask(ValueError):
    """A task entry without the fields a worker needs."""


def parse_task(entry: str, fields: dict[str, str]) -> tuple[str, str, tuple[str, ...], int]:
    try:
        task_id, body = fields["task"], fields["text"]
        attempt = int(fields.get("attempt", "1"))
    except (KeyError, ValueError) as exc:
        raise MalformedTask(f"entry {entry} of {keys.TASKS} is malformed: {exc}") from None
    if not task_id or attempt < 1:
        raise MalformedTask(f"entry {entry} of {keys.TASKS} is malformed: no task or attempt")
    channels = tuple(c for c in fields.get("channels", "").split(",") if c)
    return task_id, body, channels, attempt


async def ensure_group(redis: Redis, stream: str, group: str) -> None:
    from redis.exceptions import ResponseError

    try:
        await redis.xgroup_create(stream, group, id="0", mkstream=True)
    except ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise


class RedisQueue:
    """One taker's (a worker's, or the coordinator's for dispatch) view of the stream."""

    def __init__(self, redis: Redis, worker: str, *, lease_ms: int = LEASE_MS) -> None:
        self.redis = redis
        self.worker = worker
        self.lease_ms = lease_ms

    async def setup(self) -> None:
        await ensure_group(self.redis, keys.TASKS, keys.WORKERS_GROUP)

    # -- the coordinator's side --
    async def dispatch(
        self,
        task_id: str,
        body: str,
        channels: tuple[str, ...] = (),
        *,
        force: bool = False,
        memories: str = "",
    ) -> str | None:
        """Send ``task_id`` to the workers; None when an entry already carries it.
        ``memories``: the recalled memories' JSON for the task entry (empty: none kept)."""
        args = [task_id, body, ",".join(channels), "1", "1" if force else "0", memories]
        entry = await self._run(scripts.DISPATCH, [keys.TASKS, keys.CARRIED, keys.ENDED], args)
        return text(entry) if entry else None

    async def redispatch(self, tasks: list[tuple[str, str, tuple[str, ...]]]) -> list[str]:
        """Dispatch each (id, text, channels) that no entry carries; the ids sent."""
        sent = []
        for task_id, body, channels in tasks:
            if await self.dispatch(task_id, body, channels):
                sent.append(task_id)
        return sent

    async def recorded(self, task_id: str) -> None:
        """The coordinator wrote ``task_id``'s outcome to todos.md: it may be sent again
        (an answer to its question, an update)."""
        await self.redis.hdel(keys.ENDED, task_id)

    async def carries(self, task_id: str) -> bool:
        """Whether an entry carries ``task_id`` or its outcome is on its way (dispatch
        would refuse it): checked before work that only a dispatch needs."""
        return task_id in await self.carrying([task_id])

    async def carrying(self, task_ids: list[str]) -> set[str]:
        """Those of ``task_ids`` that :meth:`carries` says are carried, in one round trip."""
        if not task_ids:
            return set()
        pipe = self.redis.pipeline(transaction=False)
        for task_id in task_ids:
            pipe.hexists(keys.CARRIED, task_id)
            pipe.hexists(keys.ENDED, task_id)
        found = await pipe.execute()
        return {t for i, t in enumerate(task_ids) if found[2 * i] or found[2 * i + 1]}

    async def carried(self) -> dict[str, str]:
        raw = await self.redis.hgetall(keys.CARRIED)
        return {text(k): text(v) for k, v in raw.items()}

    # -- the worker's side --
    async def claim(self, wait_s: float = 0.0) -> Claim | None:
        block = int(wait_s * 1000) if wait_s > 0 else None
        found: Any = await self.redis.xreadgroup(
            keys.WORKERS_GROUP, self.worker, {keys.TASKS: ">"}, count=1, block=block
        )
        for _stream, entries in found or []:
            for entry_id, raw in entries:
                claim = await self._lease(text(entry_id), fields_of(raw or {}))
                if claim is not None:
                    return claim
        return None

    async def _lease(self, entry: str, fields: dict[str, str]) -> Claim | None:
        try:
            task_id, body, channels, attempt = parse_task(entry, fields)
        except MalformedTask as exc:
            log.warning("%s; acknowledged and skipped", exc)
            await self.redis.xack(keys.TASKS, keys.WORKERS_GROUP, entry)
            await self.redis.xdel(keys.TASKS, entry)
            return None
        token = secrets.token_hex(16)
        args = [keys.WORKERS_GROUP, task_id, entry, token, self.worker, str(self.lease_ms)]
        lease_keys = [keys.TASKS, keys.CARRIED, keys.lease_key(task_id)]
        answer = text(await self._run(scripts.LEASE, lease_keys, args))
        if answer != "ok":
            log.info("entry %s for task %s not taken: %s", entry, task_id, answer)
            return None
        extra = {"memories": fields["memories"]} if "memories" in fields else {}
        return Claim(task_id, body, token, attempt, channels, entry, extra)

    async def renew(self, claim: Claim) -> bool:
        args = [claim.token, str(self.lease_ms), keys.WORKERS_GROUP, self.worker, claim.entry]
        lease_keys = [keys.lease_key(claim.task_id), keys.TASKS]
        return bool(await self._run(scripts.RENEW, lease_keys, args))

    async def complete(self, claim: Claim, status: str, summary: str) -> bool:
        check_status(status)
        run_keys = [
            keys.lease_key(claim.task_id),
            keys.TASKS,
            keys.CARRIED,
            keys.EVENTS,
            keys.ENDED,
        ]
        args = [claim.token, keys.WORKERS_GROUP, claim.entry, claim.task_id, self.worker]
        args += [status, summary, str(claim.attempt)]
        return bool(await self._run(scripts.COMPLETE, run_keys, args))

    async def give_back(self, claim: Claim, note: str = "") -> bool:
        run_keys = [keys.lease_key(claim.task_id), keys.TASKS, keys.CARRIED]
        args = [claim.token, keys.WORKERS_GROUP, claim.entry, claim.task_id, claim.text]
        args += [",".join(claim.channels), str(claim.attempt), claim.extra.get("memories", "")]
        entry = await self._run(scripts.GIVE_BACK, run_keys, args)
        if entry:
            log.info("task %s given back%s", claim.task_id, f": {note}" if note else "")
        return bool(entry)

    async def _run(self, script: str, script_keys: list[str], args: list[str]) -> Any:
        return await self.redis.eval(script, len(script_keys), *script_keys, *args)


@dataclass
class Swept:
    """What one janitor pass did, by task id."""

    again: list[str]
    failed: list[str]
    held: list[str]


class Janitor:
    """Gives the tasks of workers that stopped renewing their lease to other workers."""

    def __init__(
        self, redis: Redis, *, lease_ms: int = LEASE_MS, max_attempts: int = MAX_ATTEMPTS
    ) -> None:
        self.redis = redis
        self.lease_ms = lease_ms
        self.max_attempts = max_attempts

    async def sweep(self) -> Swept:
        swept = Swept([], [], [])
        start = "0-0"
        while True:
            answer = await self.redis.xautoclaim(
                keys.TASKS,
                keys.WORKERS_GROUP,
                keys.JANITOR,
                min_idle_time=self.lease_ms,
                start_id=start,
                count=REAP_BATCH,
            )
            start, entries = text(answer[0]), answer[1]
            for entry_id, raw in entries:
                await self._reap(text(entry_id), fields_of(raw or {}), swept)
            if start == "0-0":
                return swept

    async def _reap(self, entry: str, fields: dict[str, str], swept: Swept) -> None:
        try:
            task_id, body, channels, attempt = parse_task(entry, fields)
        except MalformedTask as exc:
            log.warning("%s; acknowledged and skipped", exc)
            await self.redis.xack(keys.TASKS, keys.WORKERS_GROUP, entry)
            await self.redis.xdel(keys.TASKS, entry)
            return
        reason = f"lost its desktop {attempt} time(s): no worker finished it (attempts capped)"
        run_keys = [keys.lease_key(task_id), keys.TASKS, keys.CARRIED, keys.EVENTS, keys.ENDED]
        args = [keys.WORKERS_GROUP, entry, task_id, body, ",".join(channels)]
        args += [str(attempt), str(self.max_attempts), reason, fields.get("memories", "")]
        args.append(f"janitor-{secrets.token_hex(16)}")
        answer = text(await self.redis.eval(scripts.REAP, len(run_keys), *run_keys, *args))
        if answer == "again":
            log.warning("task %s: its lease expired; attempt %d queued", task_id, attempt + 1)
            swept.again.append(task_id)
        elif answer == "failed":
            log.warning("task %s failed: %s", task_id, reason)
            swept.failed.append(task_id)
        elif answer == "held":
            swept.held.append(task_id)
