"""The JSON mirrors of long-term memory: ``preferences.json`` and ``skills.json``.

A mirror shows what each memory of one type says (id, type, content, importance,
created, task ids, merged ids) for people and cheap reads. The vector store stays
the source of truth: :class:`Mirrors` holds an in-memory view derived from it,
rewrites a file atomically (temp file, fsync, rename) whenever that view changes,
and can check the files against the view or rewrite them from it. Recall
bookkeeping (``access_count``, ``updated``) is left out, so retrieval never
rewrites a file.

Not thread-safe on its own: :class:`~jarvis.memory.long_term.LongTermMemory`
calls it under its lock.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from jarvis.fsutil import atomic_write_text
from jarvis.memory.records import Memory, MemoryType

log = logging.getLogger(__name__)

MIRRORED: dict[MemoryType, str] = {"preference": "preferences.json", "skill": "skills.json"}
MIRROR_VERSION = 1
NOT_MIRRORED = {"access_count", "updated"}  # these change on every retrieval


class RepairReport(BaseModel):
    """What :meth:`LongTermMemory.repair` found and fixed."""

    memories: int = Field(description="memories in the vector store")
    mirrors_created: list[str] = Field(default_factory=list)
    mirrors_rewritten: list[str] = Field(default_factory=list, description="were out of step")
    temp_files_removed: list[str] = Field(default_factory=list)


class Mirrors:
    """The mirrored memories by type and id, and the files under ``root`` that show them."""

    def __init__(self, root: Path, memories: Iterable[Memory]) -> None:
        self.root = root
        self._by_type: dict[MemoryType, dict[str, Memory]] = {}
        self.reset(memories)

    def reset(self, memories: Iterable[Memory]) -> None:
        """Replace the in-memory view with ``memories`` (those of unmirrored types are skipped)."""
        self._by_type = {t: {} for t in MIRRORED}
        for memory in memories:
            if memory.type in self._by_type:
                self._by_type[memory.type][memory.id] = memory

    def path(self, memory_type: MemoryType) -> Path:
        return self.root / MIRRORED[memory_type]

    def text(self, memory_type: MemoryType) -> str:
        """The file content the view gives for one type: oldest first, stable JSON."""
        items = sorted(self._by_type[memory_type].values(), key=lambda m: (m.created, m.id))
        payload = {
            "version": MIRROR_VERSION,
            "type": memory_type,
            "memories": [m.model_dump(mode="json", exclude=NOT_MIRRORED) for m in items],
        }
        return json.dumps(payload, ensure_ascii=False, indent=2) + "\n"

    # -- following writes ----------------------------------------------------------

    def put(self, memories: Sequence[Memory]) -> None:
        """Reflect written memories in the files (also when one changed its type)."""
        touched = self._drop(memories)
        for memory in memories:
            if memory.type in self._by_type:
                self._by_type[memory.type][memory.id] = memory
                touched.add(memory.type)
        self._write(touched)

    def remove(self, memories: Sequence[Memory]) -> None:
        """Reflect deleted memories in the files."""
        self._write(self._drop(memories))

    def _drop(self, memories: Sequence[Memory]) -> set[MemoryType]:
        touched: set[MemoryType] = set()
        for memory in memories:
            for memory_type, mirror in self._by_type.items():
                if mirror.pop(memory.id, None) is not None:
                    touched.add(memory_type)
        return touched

    def _write(self, touched: Iterable[MemoryType]) -> None:
        for memory_type in sorted(touched):
            atomic_write_text(self.path(memory_type), self.text(memory_type))

    # -- checking and repair -------------------------------------------------------

    def check(self) -> list[str]:
        """Where the files disagree with the view (empty when in step)."""
        problems = []
        for memory_type in MIRRORED:
            path = self.path(memory_type)
            if not path.exists():
                problems.append(f"{path.name} missing")
            elif path.read_text(encoding="utf-8") != self.text(memory_type):
                problems.append(f"{path.name} differs from the vector store")
        problems.extend(f"leftover temp file {p.name}" for p in self.temp_files())
        return problems

    def sync(self, memories_in_store: int) -> RepairReport:
        """Rewrite the files that differ from the view and remove half-written temp files."""
        report = RepairReport(memories=memories_in_store)
        for stray in self.temp_files():
            stray.unlink(missing_ok=True)
            report.temp_files_removed.append(stray.name)
        for memory_type in MIRRORED:
            path = self.path(memory_type)
            text = self.text(memory_type)
            current = path.read_text(encoding="utf-8") if path.exists() else None
            if current != text:
                atomic_write_text(path, text)
                fixed = report.mirrors_created if current is None else report.mirrors_rewritten
                fixed.append(path.name)
        if report.mirrors_rewritten or report.temp_files_removed:
            log.warning(
                "long-term memory was out of step; rewrote %s, removed %s",
                report.mirrors_rewritten,
                report.temp_files_removed,
            )
        return report

    def temp_files(self) -> list[Path]:
        """Temp files a crash left behind mid-write of a mirror."""
        names = tuple(f".{name}." for name in MIRRORED.values())
        return sorted(p for p in self.root.glob(".*.tmp") if p.name.startswith(names))
