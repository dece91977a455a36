"""One long-term memory as a record: its type, content, importance and bookkeeping."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Literal, get_args
from uuid import uuid4

from pydantic import BaseModel, Field

MemoryType = Literal["preference", "skill", "history"]
MEMORY_TYPES: tuple[MemoryType, ...] = get_args(MemoryType)


def now_utc() -> datetime:
    return datetime.now(UTC)


def new_memory_id() -> str:
    return f"mem-{uuid4().hex[:16]}"


class Memory(BaseModel):
    """One long-term memory. ``updated`` moves on every change and every retrieval."""

    id: str = Field(default_factory=new_memory_id, pattern=r"^[A-Za-z0-9._:-]{1,128}$")
    type: MemoryType
    content: str = Field(min_length=1)
    importance: float = Field(5.0, ge=0, le=10)
    access_count: int = Field(0, ge=0)
    created: datetime = Field(default_factory=now_utc)
    updated: datetime = Field(default_factory=now_utc)
    task_ids: list[str] = Field(default_factory=list)
    merged_from: list[str] = Field(
        default_factory=list, description="ids of near-duplicates folded into this one"
    )

    def metadata(self) -> dict[str, str | int | float]:
        """The chromadb metadata for this memory (content is the document)."""
        return {
            "type": self.type,
            "importance": float(self.importance),
            "access_count": self.access_count,
            "created": self.created.isoformat(),
            "updated": self.updated.isoformat(),
            "task_ids": json.dumps(self.task_ids),
            "merged_from": json.dumps(self.merged_from),
        }

    @classmethod
    def from_record(cls, id: str, document: str, metadata: dict[str, Any]) -> Memory:
        return cls(
            id=id,
            content=document,
            type=metadata["type"],
            importance=metadata["importance"],
            access_count=metadata["access_count"],
            created=metadata["created"],
            updated=metadata["updated"],
            task_ids=json.loads(metadata.get("task_ids") or "[]"),
            merged_from=json.loads(metadata.get("merged_from") or "[]"),
        )


class MemoryNotFound(KeyError):
    """No memory has this id."""
