"""Long-term memory in one place: the coordinator recalls, workers relay what they learn.

- At dispatch the coordinator recalls the memories relevant to a task (as a local run's
  first recall does, on the task's text) and the task entry carries them as ``memories``
  (:func:`recalled_field`). A task entry without the field comes from a coordinator that
  keeps no long-term memory.
- On the worker, :class:`RelayedMemory` is the agent's long-term memory: its recall gives
  what the entry carried, so the lines reach the model's context as local recall puts them
  there; ``remember``, the skill distilled after a verified finish and the task's history
  are sent back as ``memory`` entries of ``jarvis:events`` (:func:`note_fields`), redacted
  here first. The worker keeps no store.
- The coordinator's receiver hands each note to :class:`MemoryKeeper`, which stores it in
  its long-term store as a local run would (the store redacts again, with its own secrets).
  A malformed note is refused by :func:`parse_note` (logged and acknowledged).

Side: both (the coordinator and the workers).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from jarvis.fleet.connection import reason
from jarvis.fleet.wire import ForgedEntry
from jarvis.memory.records import Memory, MemoryType
from jarvis.redaction import redact
from jarvis.tools.results import NOT_RUN, ToolFailure

if TYPE_CHECKING:
    from jarvis.memory.recall import MemoryBridge

log = logging.getLogger(__name__)

MAX_LINES = 50
MAX_TEXT = 20_000
SEND_TIMEOUT_S = 10.0


class _Note(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RememberNote(_Note):
    """What the ``remember`` tool stored (the id it reported to the model)."""

    kind: Literal["remember"] = "remember"
    id: str = Field(pattern=r"^[A-Za-z0-9._:-]{1,128}$")
    type: MemoryType
    content: str = Field(min_length=1, max_length=MAX_TEXT)
    importance: float = Field(ge=0, le=10)


class SkillNote(_Note):
    """The procedure distilled after a verified finish."""

    kind: Literal["skill"] = "skill"
    task: str = Field(max_length=MAX_TEXT)
    procedure: str = Field(min_length=1, max_length=MAX_TEXT)


class HistoryNote(_Note):
    """The task's history memory, recorded at the end of every run."""

    kind: Literal["history"] = "history"
    task: str = Field(max_length=MAX_TEXT)
    status: str = Field(max_length=40)
    summary: str = Field(max_length=MAX_TEXT)
    steps: int = Field(ge=0)


Note = Annotated[RememberNote | SkillNote | HistoryNote, Field(discriminator="kind")]
_NOTE: TypeAdapter[RememberNote | SkillNote | HistoryNote] = TypeAdapter(Note)


def note_fields(
    note: RememberNote | SkillNote | HistoryNote, task_id: str, worker: str
) -> dict[str, str]:
    return {"type": "memory", "task": task_id, "worker": worker, "data": note.model_dump_json()}


def parse_note(data: str) -> RememberNote | SkillNote | HistoryNote:
    """The note in a ``memory`` entry; :class:`ForgedEntry` when it is not one."""
    try:
        return _NOTE.validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "the entry"
        raise ForgedEntry(
            f"a memory note that does not validate: {where}: {first['msg']}"
        ) from None


def recalled_field(lines: list[str]) -> str:
    """The task entry's ``memories`` field for the recalled ``lines``."""
    return json.dumps(lines[:MAX_LINES])


def carried_memories(raw: str, task_id: str) -> list[str]:
    """The recalled lines a task entry carried; none (and a warning) when malformed."""
    try:
        lines = json.loads(raw)
    except ValueError:
        lines = None
    if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
        log.warning("task %s: its entry's memories are malformed; it runs without them", task_id)
        return []
    return [line[:MAX_TEXT] for line in lines[:MAX_LINES]]


class RelayedMemory:
    """A worker's long-term memory (the agent's ``LongTerm``): recall gives what the task
    entry carried; what is learnt goes to the coordinator over ``send`` (an ``XADD`` on
    the worker's loop). Called from the loop and from worker threads."""

    def __init__(self, send: Callable[[dict[str, str]], Awaitable[Any]], worker: str) -> None:
        self.send = send
        self.worker = worker
        self.memories: list[str] = []
        self.task_id = ""
        self.kept = False
        """Whether the coordinator keeps long-term memory for the task that runs."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._pending: set[asyncio.Task[Any]] = set()

    def begin(self, task_id: str, memories: list[str] | None) -> None:
        """A task starts on the running loop, with the memories its entry carried (None:
        the coordinator keeps no long-term memory, so nothing is sent back)."""
        self._loop, self._loop_thread = asyncio.get_running_loop(), threading.get_ident()
        self.task_id, self.kept = task_id, memories is not None
        self.memories = list(memories or [])

    async def flush(self) -> None:
        """Wait for every note sent so far (before the task's outcome goes)."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    # -- LongTerm --
    @property
    def learns(self) -> bool:
        """Whether the coordinator keeps long-term memory for the task that runs (without
        it the run recalls nothing, learns nothing and sends nothing back)."""
        return self.kept

    def recall(self, query: str, top_k: int | None = None) -> list[str]:
        return list(self.memories[:top_k] if top_k else self.memories)

    def direction_changed(self, thought: str) -> bool:
        return False  # the coordinator recalled once, for the task; nothing to recall here

    def record_task(self, task: str, task_id: str, status: str, summary: str, steps: int) -> None:
        note = HistoryNote(task=redact(task), status=status, summary=redact(summary), steps=steps)
        self._relay(note, task_id, wait=False)

    def store_skill(self, task: str, procedure: str, task_id: str) -> None:
        self._relay(SkillNote(task=redact(task), procedure=redact(procedure)), task_id, wait=True)

    # -- the `remember` tool --
    def remember(
        self, content: str, memory_type: MemoryType, importance: float, task_id: str
    ) -> Memory:
        if not self.kept:
            raise ToolFailure(NOT_RUN, "not run: the fleet's coordinator keeps no long-term memory")
        memory = Memory(type=memory_type, content=redact(content), importance=importance)
        note = RememberNote(
            id=memory.id, type=memory.type, content=memory.content, importance=importance
        )
        self._relay(note, task_id, wait=True)
        return memory

    def _relay(
        self, note: RememberNote | SkillNote | HistoryNote, task_id: str, *, wait: bool
    ) -> None:
        """Send ``note``: from a thread, wait until Redis has it (OSError when it did not
        arrive); from the loop itself, send in the background (flushed before the
        outcome). Nothing goes when the coordinator keeps no memory for the task."""
        loop = self._loop
        if loop is None or not self.kept:
            return
        work = self._tracked(note_fields(note, task_id, self.worker))
        if threading.get_ident() == self._loop_thread:
            self._pending.add(loop.create_task(work))
            return
        future = asyncio.run_coroutine_threadsafe(work, loop)
        try:
            error = future.result(SEND_TIMEOUT_S if wait else None)
        except TimeoutError:
            error = f"no answer from Redis within {SEND_TIMEOUT_S:g}s"
        if error is not None:
            raise OSError(f"the {note.kind} memory did not reach the coordinator: {error}")

    async def _tracked(self, fields: dict[str, str]) -> str | None:
        """Send one note; the reason it was not sent, or None."""
        task = asyncio.current_task()
        if task is not None:
            self._pending.add(task)
        try:
            await self.send(fields)
        except Exception as exc:  # Redis away, a closed connection: said, and returned
            log.warning("a memory of task %s was not sent: %s", fields["task"], reason(exc))
            return reason(exc)
        finally:
            if task is not None:
                self._pending.discard(task)
        return None


class MemoryKeeper:
    """The coordinator's long-term store, for the fleet: recall at dispatch, store notes."""

    def __init__(self, bridge: MemoryBridge) -> None:
        self.bridge = bridge
        self._lock = threading.Lock()

    def recall(self, text: str) -> list[str]:
        """Blocking (embedding, chromadb): run it in a thread."""
        with self._lock:
            return self.bridge.recall(text)

    def keep(self, note: RememberNote | SkillNote | HistoryNote, task_id: str) -> None:
        """Store a worker's note as a local run would; blocking."""
        with self._lock:
            if isinstance(note, RememberNote):
                memory = Memory(
                    id=note.id,
                    type=note.type,
                    content=note.content,
                    importance=note.importance,
                    task_ids=[task_id],
                )
                self.bridge.memory.store(memory)
            elif isinstance(note, SkillNote):
                self.bridge.store_skill(note.task, note.procedure, task_id)
            else:
                self.bridge.record_task(note.task, task_id, note.status, note.summary, note.steps)

    async def on_note(
        self, note: RememberNote | SkillNote | HistoryNote, task_id: str, worker: str
    ) -> None:
        try:
            await asyncio.to_thread(self.keep, note, task_id)
        except Exception:  # the boundary: a store that fails must not stop the coordinator
            log.exception(
                "a %s memory of task %s from %s was not stored", note.kind, task_id, worker
            )
            return
        log.info("stored a %s memory of task %s from worker %s", note.kind, task_id, worker)
