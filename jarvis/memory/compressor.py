"""Keep long-term memory small: forget what has faded, merge what says the same thing.

``compress`` runs in two passes over the store:

1. Forget: every memory whose ``retention * importance`` (see
   :mod:`jarvis.memory.forgetting`) is below ``threshold`` is deleted.
2. Merge: among the survivors, memories of the same type whose embeddings have a
   cosine similarity of at least ``merge_cosine`` are folded together. Groups are
   formed greedily, most important (then most used, then oldest) first; the group's
   first memory keeps its id and content, takes the highest importance, the sum of
   the access counts, the union of the task ids and the earliest creation time, and
   records the absorbed ids in ``merged_from``.

Near-duplicates are found exactly, by blockwise dot products of the unit vectors
(O(n^2 * d) per type, about a second at 10,000 memories of one type).

The short-term half of compression, pHash dedup of the stored screenshots, lives in
:mod:`jarvis.memory.screenshot_dedup` and is re-exported here;
:func:`jarvis.memory.maintenance.upkeep` runs both (``jarvis memory compress``, and
the daemon when idle).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, Field

from jarvis.memory.forgetting import (
    DEFAULT_BASE_DAYS,
    DEFAULT_THRESHOLD,
    age_in_days,
    should_forget,
)
from jarvis.memory.long_term import MEMORY_TYPES, LongTermMemory, Memory
from jarvis.memory.screenshot_dedup import DedupReport as DedupReport  # re-exported
from jarvis.memory.screenshot_dedup import dedup_screenshots as dedup_screenshots

log = logging.getLogger(__name__)

DEFAULT_MERGE_COSINE = 0.92
_BLOCK_ROWS = 512


class CompressionReport(BaseModel):
    examined: int = 0
    forgotten: list[str] = Field(default_factory=list)
    merged: list[tuple[str, str]] = Field(
        default_factory=list, description="(kept id, absorbed id) pairs"
    )
    dry_run: bool = False


def faded(
    memories: Sequence[Memory],
    now: datetime,
    threshold: float = DEFAULT_THRESHOLD,
    base_days: float = DEFAULT_BASE_DAYS,
) -> list[Memory]:
    """The memories the forgetting curve says to drop at ``now``."""
    return [
        m
        for m in memories
        if should_forget(
            age_in_days(m.updated, now), m.importance, m.access_count, threshold, base_days
        )
    ]


def similar_pairs(
    vectors: npt.NDArray[np.float32], min_cosine: float
) -> list[tuple[int, int, float]]:
    """Index pairs ``(i, j)`` with ``i < j`` whose rows have cosine >= ``min_cosine``.

    Rows must be unit vectors. Pairs come out most similar first.
    """
    pairs: list[tuple[int, int, float]] = []
    n = len(vectors)
    for start in range(0, n, _BLOCK_ROWS):
        block = vectors[start : start + _BLOCK_ROWS] @ vectors[start:].T
        rows, cols = np.nonzero(block >= min_cosine)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            i, j = start + r, start + c
            if i < j:
                pairs.append((i, j, float(block[r, c])))
    pairs.sort(key=lambda p: (-p[2], p[0], p[1]))
    return pairs


def group_duplicates(
    memories: Sequence[Memory], pairs: Sequence[tuple[int, int, float]]
) -> list[list[int]]:
    """Greedy groups: each leader absorbs its near-duplicates that are not leaders or taken.

    Leaders are visited by rank (importance, access count, age); a memory joins at
    most one group and is similar to its leader (no chaining through a third memory).
    """
    neighbours: dict[int, set[int]] = {}
    for i, j, _ in pairs:
        neighbours.setdefault(i, set()).add(j)
        neighbours.setdefault(j, set()).add(i)
    rank = sorted(
        neighbours,
        key=lambda k: (-memories[k].importance, -memories[k].access_count, memories[k].created),
    )
    taken: set[int] = set()
    groups: list[list[int]] = []
    for leader in rank:
        if leader in taken:
            continue
        members = sorted(
            (k for k in neighbours[leader] if k not in taken),
            key=lambda k: (-memories[k].importance, -memories[k].access_count, memories[k].created),
        )
        if members:
            taken.add(leader)
            taken.update(members)
            groups.append([leader, *members])
    return groups


def merge_memories(leader: Memory, others: Sequence[Memory], now: datetime) -> Memory:
    """``leader`` with the others folded in (counts from an earlier, interrupted merge skipped)."""
    fresh = [m for m in others if m.id not in leader.merged_from]
    task_ids = list(leader.task_ids)
    for m in others:
        task_ids.extend(t for t in m.task_ids if t not in task_ids)
    merged_from = list(leader.merged_from)
    for m in others:
        merged_from.extend(i for i in [m.id, *m.merged_from] if i not in merged_from)
    return leader.model_copy(
        update={
            "importance": max([leader.importance, *(m.importance for m in others)]),
            "access_count": leader.access_count + sum(m.access_count for m in fresh),
            "created": min([leader.created, *(m.created for m in others)]),
            "updated": now,
            "task_ids": task_ids,
            "merged_from": merged_from,
        }
    )


def compress(
    memory: LongTermMemory,
    now: datetime | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    merge_cosine: float = DEFAULT_MERGE_COSINE,
    base_days: float = DEFAULT_BASE_DAYS,
    dry_run: bool = False,
) -> CompressionReport:
    """Forget faded memories, then merge near-duplicates; ``dry_run`` only reports."""
    now = now or datetime.now(UTC)
    report = CompressionReport(dry_run=dry_run)
    for memory_type in MEMORY_TYPES:
        memories, vectors = memory.vectors(memory_type)
        report.examined += len(memories)
        gone = {m.id for m in faded(memories, now, threshold, base_days)}
        report.forgotten.extend(sorted(gone))
        keep = [i for i, m in enumerate(memories) if m.id not in gone]
        if not dry_run and gone:
            memory.forget_many(sorted(gone))
        if len(keep) < 2:
            continue
        survivors = [memories[i] for i in keep]
        groups = group_duplicates(survivors, similar_pairs(vectors[keep], merge_cosine))
        merges: list[tuple[Memory, list[str]]] = []
        for group in groups:
            leader, others = survivors[group[0]], [survivors[k] for k in group[1:]]
            merges.append((merge_memories(leader, others, now), [m.id for m in others]))
            report.merged.extend((leader.id, m.id) for m in others)
        if not dry_run and merges:
            memory.apply_merges(merges)
    log.info(
        "compressed long-term memory: %d examined, %d forgotten, %d merged",
        report.examined,
        len(report.forgotten),
        len(report.merged),
    )
    return report
