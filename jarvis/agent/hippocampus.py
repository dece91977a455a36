"""Hippocampus: the agent's memory: short-term steps on disk, long-term vector memory."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path
from typing import Protocol

from jarvis.desktop.screen import Observation
from jarvis.memory.short_term import ScreenshotRef, ShortTermMemory, StepRecord
from jarvis.ordered_writes import OrderedWrites
from jarvis.runs.index import recent_runs


class LongTerm(Protocol):
    """What the loop needs from long-term memory."""

    def recall(self, query: str, top_k: int | None = None) -> list[str]: ...

    @property
    def learns(self) -> bool:
        """Whether what a run learns (its skill, its history) is kept; it may change
        between tasks (a fleet worker's memory is on only for a task whose coordinator
        keeps one)."""
        ...

    def record_task(
        self, task: str, task_id: str, status: str, summary: str, steps: int
    ) -> None: ...

    def direction_changed(self, thought: str) -> bool: ...

    def store_skill(self, task: str, procedure: str, task_id: str) -> object: ...


class Hippocampus:
    """Short-term steps on disk and the long-term store it is made with (none: a run
    recalls and learns nothing)."""

    def __init__(self, data_dir: Path, long_term: LongTerm | None = None) -> None:
        self.short = ShortTermMemory(data_dir, recent_runs(data_dir))
        self.long_term = long_term
        self._writes = OrderedWrites("memory-writes", "a short-term memory write failed")
        """Short-term writes, in order, off the loop's path (they fsync)."""

    def store_screenshot(self, observation: Observation) -> Future[ScreenshotRef]:
        """Store the screenshot on the writer thread (the loop goes on to the model): its
        reference, or the error of the write, comes from the future."""
        return self._writes.submit(
            self.short.save_screenshot, observation.data, observation.media_type, observation.phash
        )

    def add_step(self, record: StepRecord) -> None:
        """Write the step's record on the writer thread (after the screenshots before it);
        :meth:`flush` waits for it. ``record`` must not change after this."""
        self._writes.submit(self.short.add_step, record)

    def flush(self) -> None:
        """Wait until every write so far is on disk (a failed one is said in the log)."""
        self._writes.flush()

    def recent(self, n: int, task_id: str | None = None) -> list[StepRecord]:
        self.flush()
        return self.short.recent(n, task_id)

    def within(self, hours: float = 12.0) -> list[StepRecord]:
        """Step records of the last ``hours``, oldest first."""
        self.flush()
        return self.short.within(hours)

    def cleanup(self, hours: float = 12.0) -> dict[str, int]:
        """Delete step records older than ``hours`` and screenshots no record references."""
        self.flush()
        return self.short.cleanup(hours)

    def recall(self, query: str, top_k: int | None = None) -> list[str]:
        """Relevant long-term memories as text lines; none when there is no long-term store.
        ``top_k`` defaults to the store's own (``memory_top_k``)."""
        if self.long_term is None:
            return []
        return self.long_term.recall(query, top_k)

    def record_task(self, task: str, task_id: str, status: str, summary: str, steps: int) -> None:
        if self.long_term is not None:
            self.long_term.record_task(task, task_id, status, summary, steps)

    def direction_changed(self, thought: str) -> bool:
        return self.long_term is not None and self.long_term.direction_changed(thought)

    def refreshed(self, task: str, thought: str, memories: list[str]) -> list[str]:
        """``memories`` with those recalled for the task and ``thought`` first, when the plan
        moved away from what they were recalled for; else ``memories`` as they are."""
        if not self.direction_changed(thought):
            return memories
        fresh = self.recall(f"{task}\n{thought}")
        merged = list(dict.fromkeys([*fresh, *memories]))
        return merged[: 2 * max(1, len(fresh) or 5)]

    def store_skill(self, task: str, procedure: str, task_id: str) -> None:
        if self.long_term is not None and procedure.strip():
            self.long_term.store_skill(task, procedure, task_id)

    @property
    def learns(self) -> bool:
        """Whether there is a long-term store to learn skills into."""
        return self.long_term is not None and self.long_term.learns
