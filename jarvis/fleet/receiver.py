"""The coordinator's end of ``jarvis:events``: what workers send becomes local.

Events are emitted on the coordinator's bus (its journal, the API's SSE and the channels
see them as if the task ran here); artefacts are written under its data dir after their
path is checked (:func:`jarvis.fleet.wire.write_artefact`); memory notes (what a worker
learnt: :mod:`jarvis.fleet.memory`) go to ``on_memory``; outcomes (which only the
engine's scripts write, with the current lease token, kept in ``jarvis:ended`` until then;
any other outcome entry is refused) go to ``on_outcome``. A malformed
or forged entry is logged and acknowledged, never raised. Read through the consumer group
``coordinator``: after a restart the coordinator goes on where it left off.

Side: the coordinator.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from jarvis.events import Event, EventBus
from jarvis.fleet import keys
from jarvis.fleet.memory import HistoryNote, RememberNote, SkillNote, parse_note
from jarvis.fleet.redis_queue import ensure_group, text
from jarvis.fleet.wire import ForgedEntry, parse_event, write_artefact
from jarvis.runs.reader import find_run
from jarvis.runs.run_info import RunInfo
from jarvis.runs.step_file import STEPS_DIR, parse_step_folder, step_folder

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger(__name__)
READ_COUNT = 100


@dataclass(frozen=True)
class Outcome:
    task_id: str
    status: str
    summary: str
    worker: str
    attempt: int
    token: str


OutcomeHandler = Callable[[Outcome], Awaitable[None]]
EventFilter = Callable[[Event, str], bool]
"""Sees each worker's event (and who sent it) first; False keeps it off the bus."""
MemoryHandler = Callable[[RememberNote | SkillNote | HistoryNote, str, str], Awaitable[None]]
"""Stores a worker's memory note: (note, task id, worker)."""


class Receiver:
    def __init__(
        self,
        redis: Redis,
        data_dir: Path,
        bus: EventBus,
        on_outcome: OutcomeHandler,
        *,
        consumer: str = "coordinator",
        on_event: EventFilter | None = None,
        on_memory: MemoryHandler | None = None,
    ) -> None:
        self.redis = redis
        self.data_dir = data_dir
        self.bus = bus
        self.on_outcome = on_outcome
        self.consumer = consumer
        self.on_event = on_event
        self.on_memory = on_memory
        self.refused = 0
        self._outcomes: asyncio.Queue[tuple[str, dict[str, Any]] | None] | None = None
        """While :meth:`run` runs: where outcomes go to be written in their own lane."""

    async def setup(self) -> None:
        await ensure_group(self.redis, keys.EVENTS, keys.COORDINATOR_GROUP)

    async def read_once(self, wait_s: float = 1.0) -> int:
        """Handle what is waiting (first what this consumer read but did not finish before
        a restart); the number of entries handled."""
        return await self._read("0", None) + await self._read(">", wait_s)

    async def run(self, stopping: Callable[[], bool], wait_s: float = 1.0) -> None:
        """Handle entries as they come, until ``stopping()``: what this consumer read but
        did not finish first, then each new entry as soon as XREADGROUP's BLOCK hands it
        over (checking ``stopping`` at least every ``wait_s``). Outcomes are written in a
        lane of their own, in order, each acknowledged once written: the events of other
        tasks do not wait for ``todos.md`` (a task's own entries all came before its
        outcome, and its next run's come only once the outcome is written)."""
        queue: asyncio.Queue[tuple[str, dict[str, Any]] | None] = asyncio.Queue()
        lane = asyncio.create_task(self._outcome_lane(queue))
        self._outcomes = queue
        try:
            await self._read("0", None)
            while not stopping() and not lane.done():
                await self._read(">", wait_s)
            self._outcomes = None
            queue.put_nowait(None)  # the outcomes handed over are written first
            await lane  # (its error, if it stopped on one)
        finally:
            self._outcomes = None
            lane.cancel()

    async def _outcome_lane(self, queue: asyncio.Queue[tuple[str, dict[str, Any]] | None]) -> None:
        while (item := await queue.get()) is not None:
            await self._handled(*item, "outcome")

    async def _read(self, start: str, wait_s: float | None) -> int:
        found: Any = await self.redis.xreadgroup(
            keys.COORDINATOR_GROUP,
            self.consumer,
            {keys.EVENTS: start},
            count=READ_COUNT,
            block=int(wait_s * 1000) if wait_s is not None else None,
        )
        handled = 0
        for _stream, entries in found or []:
            for entry_id, raw in entries:
                await self.handle(text(entry_id), raw or {})
                handled += 1
        return handled

    async def handle(self, entry: str, raw: dict[Any, Any]) -> None:
        fields = {text(k): v for k, v in raw.items()}
        kind = text(fields.get("type", b""))
        if kind == "outcome" and self._outcomes is not None:
            self._outcomes.put_nowait((entry, fields))  # acknowledged once written
            return
        await self._handled(entry, fields, kind)

    async def _handled(self, entry: str, fields: dict[str, Any], kind: str) -> None:
        """Act on one entry, then acknowledge and delete it (a refused one too)."""
        try:
            if kind == "event":
                event = parse_event(text(fields.get("data", b"")))
                worker = text(fields.get("worker", b""))
                if self.on_event is None or self.on_event(event, worker):
                    self.bus.emit(event)
            elif kind == "artefact":
                data = fields.get("data", b"")
                await asyncio.to_thread(
                    self._write,
                    text(fields.get("task", b"")),
                    text(fields.get("path", b"")),
                    data if isinstance(data, bytes) else b"",
                )
            elif kind == "memory":
                await self._memory(fields)
            elif kind == "outcome":
                outcome = _outcome({k: text(v) for k, v in fields.items()})
                await self._fenced(outcome)
                await self.on_outcome(outcome)
            else:
                raise ForgedEntry(f"unknown entry type {kind!r}")
        except (ForgedEntry, KeyError, ValueError) as exc:
            self.refused += 1
            worker = text(fields.get("worker", b"?"))
            log.warning("entry %s of %s from %r refused: %s", entry, keys.EVENTS, worker, exc)
        except OSError as exc:
            log.warning("entry %s of %s could not be written: %s", entry, keys.EVENTS, exc)
        pipe = self.redis.pipeline(transaction=False)  # done with it: one round trip
        pipe.xack(keys.EVENTS, keys.COORDINATOR_GROUP, entry)
        pipe.xdel(keys.EVENTS, entry)
        await pipe.execute()

    def _write(self, task_id: str, rel: str, data: bytes) -> None:
        write_artefact(self.data_dir, self.placed(task_id, rel), data)

    async def _memory(self, fields: dict[str, Any]) -> None:
        note = parse_note(text(fields.get("data", b"")))
        task_id, worker = text(fields.get("task", b"")), text(fields.get("worker", b""))
        if not task_id:
            raise ForgedEntry("a memory note without a task")
        if self.on_memory is None:
            log.warning(
                "a %s memory of task %s from %r dropped: long-term memory is off here",
                note.kind,
                task_id,
                worker,
            )
            return
        await self.on_memory(note, task_id, worker)

    async def _fenced(self, outcome: Outcome) -> None:
        """:class:`ForgedEntry` unless ``outcome`` carries the token its lease had when it
        ended (kept in ``jarvis:ended`` by the engine's scripts): an outcome entry put on
        the stream by a worker that lost its lease, or replayed, is not written."""
        ended = await self.redis.hget(keys.ENDED, outcome.task_id)
        if not outcome.token or ended is None or text(ended) != outcome.token:
            raise ForgedEntry(f"outcome of {outcome.task_id} without the current lease's token")

    def placed(self, task_id: str, rel: str) -> str:
        """Where a worker's step file goes here: into this task's journal folder and its
        current run (a worker numbers its steps as the task's first run on its own disk;
        the journal here knows it is attempt 2, or an answer's run)."""
        parts = PurePosixPath(rel).parts
        if len(parts) < 6 or parts[0] != "runs" or parts[3] != STEPS_DIR or not task_id:
            return rel
        step = parse_step_folder(parts[4])
        folder = find_run(self.data_dir, task_id)
        if step is None or folder is None or parts[2] != folder.name:
            return rel
        try:
            run = RunInfo.load(folder).current.run
        except (OSError, ValueError):
            return rel
        target = step_folder(folder, step[1], run).joinpath(*parts[5:])
        return target.relative_to(self.data_dir).as_posix()


def _outcome(fields: dict[str, str]) -> Outcome:
    return Outcome(
        task_id=fields["task"],
        status=fields["status"],
        summary=fields.get("summary", ""),
        worker=fields.get("worker", ""),
        attempt=int(fields.get("attempt", "1")),
        token=fields.get("token", ""),
    )
