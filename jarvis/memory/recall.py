"""How the agent loop uses long-term memory.

- ``recall(query)``: the memories relevant to a task, as lines for ``{{memories}}``.
- ``direction_changed(thought)``: whether the model's plan moved far enough from
  what memories were last recalled for that it is worth recalling again.
- ``record_task``: a history memory at the end of every task.
- ``store_skill``: a distilled procedure after a verified finish.
- ``remember``: what the ``remember`` tool stores (the user's stated preferences).

All methods block (embedding, chromadb); the loop calls them in a worker thread.
"""

from __future__ import annotations

import logging

import numpy as np

from jarvis.memory.long_term import LongTermMemory, Memory, MemoryType
from jarvis.redaction import redact

log = logging.getLogger(__name__)

HISTORY_IMPORTANCE = {"finished": 4.0, "failed": 3.0, "needs_user": 3.0, "cancelled": 2.0}
SKILL_IMPORTANCE = 6.0


def format_memory(memory: Memory) -> str:
    return f"[{memory.type}, importance {memory.importance:g}] {memory.content}"


class MemoryBridge:
    def __init__(
        self,
        memory: LongTermMemory,
        top_k: int = 5,
        min_score: float = 0.2,
        change_below: float = 0.55,
    ) -> None:
        self.memory = memory
        self.top_k = top_k
        self.min_score = min_score
        self.change_below = change_below
        self._last_query: np.ndarray | None = None

    def _embed(self, text: str) -> np.ndarray:
        vector = np.asarray(self.memory.embedding.function([text])[0], dtype=np.float32)
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector

    def recall(self, query: str, top_k: int | None = None) -> list[str]:
        """Relevant memories, best first: preferences and skills before history."""
        self._last_query = self._embed(query)
        hits = self.memory.retrieve(query, top_k or self.top_k, min_score=self.min_score)
        order = {"preference": 0, "skill": 1, "history": 2}
        hits.sort(key=lambda hit: (order[hit[0].type], -hit[1]))
        return [format_memory(m) for m, _ in hits]

    @property
    def learns(self) -> bool:
        """Always: what a run learns is stored here."""
        return True

    def direction_changed(self, thought: str) -> bool:
        """True when ``thought`` is far (cosine) from the text memories were last recalled for."""
        if not thought.strip() or self._last_query is None:
            return False
        similarity = float(np.dot(self._embed(thought), self._last_query))
        return similarity < self.change_below

    def record_task(self, task: str, task_id: str, status: str, summary: str, steps: int) -> None:
        content = f"Task: {task}\nOutcome: {status} after {steps} step(s). {summary}".strip()
        content = redact(content)  # before the cut, so no secret is cut in half
        self.memory.store(
            Memory(
                type="history",
                content=content[:2000],
                importance=HISTORY_IMPORTANCE.get(status, 3.0),
                task_ids=[task_id],
            )
        )

    def store_skill(self, task: str, procedure: str, task_id: str) -> Memory:
        content = redact(f"How to: {task}\n{procedure.strip()}")
        return self.memory.store(
            Memory(
                type="skill",
                content=content[:2000],
                importance=SKILL_IMPORTANCE,
                task_ids=[task_id],
            )
        )

    def remember(
        self, content: str, memory_type: MemoryType, importance: float, task_id: str
    ) -> Memory:
        return self.memory.store(
            Memory(type=memory_type, content=content, importance=importance, task_ids=[task_id])
        )
