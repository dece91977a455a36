"""Control messages to one worker (``jarvis:ctl:WORKER``): cancel, stop, approval answers,
and a person's takeover of its screen (``takeover``: pause at the next tool boundary;
``handback``: go on, with the person's ``note`` and the ``reason`` it ended), and ``view``:
serve a live view of its display through Redis (``session``, ``access`` view or full;
:mod:`jarvis.fleet.view_tunnel`), and ``frames``: send pictures of its display for a while
(``monitor``, ``max_side``; :mod:`jarvis.fleet.frames`); these two name no task.

A message names the task it is for; a worker ignores (with a warning) one for a task it
does not run, and a malformed one. Workers only read this stream; the coordinator writes.

Side: both (the coordinator and the workers).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jarvis.fleet import keys
from jarvis.fleet.redis_queue import fields_of

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger(__name__)
KINDS = ("cancel", "stop", "approval", "takeover", "handback", "view", "frames")
OF_THE_DISPLAY = ("view", "frames")
"""The kinds about the display, whatever task runs on it."""
MAX_CONTROL_LEN = 1000


@dataclass(frozen=True)
class Control:
    kind: str
    task: str
    by: str = ""
    approval_id: str = ""
    decision: str = ""
    note: str = ""
    reason: str = ""
    session: str = ""
    access: str = ""
    monitor: str = ""
    max_side: str = ""


async def send(redis: Redis, worker: str, control: Control) -> str:
    fields: Any = {k: v for k, v in control.__dict__.items() if v}
    entry = await redis.xadd(keys.control_key(worker), fields, maxlen=MAX_CONTROL_LEN)
    return entry.decode() if isinstance(entry, bytes) else str(entry)


def parse(entry: str, raw: dict[Any, Any]) -> Control | None:
    fields = fields_of(raw)
    kind, task = fields.get("kind", ""), fields.get("task", "")
    if kind in OF_THE_DISPLAY:
        task = task or "-"  # of the display, whatever runs there
    if kind not in KINDS or not task or (kind == "view" and not fields.get("session")):
        log.warning("control entry %s is malformed (kind %r, task %r); ignored", entry, kind, task)
        return None
    return Control(
        kind=kind,
        task=task,
        by=fields.get("by", ""),
        approval_id=fields.get("approval_id", ""),
        decision=fields.get("decision", ""),
        note=fields.get("note", ""),
        reason=fields.get("reason", ""),
        session=fields.get("session", ""),
        access=fields.get("access", ""),
        monitor=fields.get("monitor", ""),
        max_side=fields.get("max_side", ""),
    )


async def read(redis: Redis, worker: str, after: str, wait_s: float) -> tuple[str, list[Control]]:
    """Control messages after entry ``after`` (``$``: from now); the last id read."""
    found: Any = await redis.xread(
        {keys.control_key(worker): after}, count=20, block=int(wait_s * 1000)
    )
    out: list[Control] = []
    for _stream, entries in found or []:
        for entry_id, raw in entries:
            after = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
            control = parse(after, raw or {})
            if control is not None:
                out.append(control)
    return after, out
