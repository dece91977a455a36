"""Long-term memory: preferences, skills and task history in a chromadb vector store.

Layout under ``DATA_DIR/memory/long_term/``::

    vector/            chromadb PersistentClient: the source of truth for every memory
    preferences.json   mirror of the preference memories (see :mod:`jarvis.memory.mirrors`)
    skills.json        mirror of the skill memories

Recall bookkeeping (``access_count``, ``updated``) lives in the vector store only. To keep
retrieval a read, it is held in memory (and shown by every read) until the next write,
:meth:`LongTermMemory.flush` or :meth:`LongTermMemory.close`; a crash loses at most those
counters, never a memory.

Write order makes any crash repairable: the vector store is written first, then the
mirrors are rewritten atomically from the in-memory view of the store. A crash in between
leaves a mirror one write behind; :meth:`LongTermMemory.repair` (run on open by default,
and by ``jarvis memory repair``) re-derives both mirrors from the store. Edits made by
hand to a mirror are therefore overwritten.

The collection is named after the embedding's vector space (``memories-minilm-int8``...).
When the configured embedding changes, the memories of the old collection are re-embedded
into the new one on open (resumably) and the old collection is dropped.

One process holds the store at a time (two chromadb PersistentClients on one directory
can lose each other's writes): opening takes an owner lock on ``owner.lock`` beside the
store, waiting up to ``OPEN_WAIT_S``, and raises :class:`MemoryInUse` naming the holder
(``jarvis serve`` keeps it for its lifetime). Within a process, opens share the lock.
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from jarvis.memory.embedding import EmbeddingChoice, disable_telemetry, make_embedding
from jarvis.memory.mirrors import MIRROR_VERSION as MIRROR_VERSION  # re-exported
from jarvis.memory.mirrors import MIRRORED, Mirrors, RepairReport
from jarvis.memory.mirrors import NOT_MIRRORED as NOT_MIRRORED  # re-exported
from jarvis.memory.records import MEMORY_TYPES as MEMORY_TYPES  # re-exported
from jarvis.memory.records import Memory as Memory
from jarvis.memory.records import MemoryNotFound as MemoryNotFound
from jarvis.memory.records import MemoryType as MemoryType
from jarvis.memory.records import now_utc
from jarvis.memory.store_owner import MemoryInUse as MemoryInUse  # re-exported
from jarvis.memory.store_owner import claim_store, release_store
from jarvis.redaction import known_secrets, redact

log = logging.getLogger(__name__)

COLLECTION_PREFIX = "memories-"
RECALLS_HELD = 256  # recall counters kept in memory before they are written anyway
OPEN_WAIT_S = 5.0  # how long an open waits for another process to let the store go

T = TypeVar("T")


def _where(types: Iterable[MemoryType] | None) -> dict[str, Any] | None:
    wanted = sorted(set(types)) if types is not None else []
    if not wanted or len(wanted) == len(MEMORY_TYPES):
        return None
    if len(wanted) == 1:
        return {"type": wanted[0]}
    return {"type": {"$in": wanted}}


class LongTermMemory:
    """The vector store plus its JSON mirrors. Thread-safe; blocking (run it off the event loop)."""

    def __init__(
        self,
        root: Path,
        embedding: EmbeddingChoice,
        *,
        repair_on_open: bool = True,
        wait_s: float | None = None,
    ) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.embedding = embedding
        self._lock = threading.RLock()
        self._recalls: dict[str, tuple[int, datetime]] = {}  # id -> access_count, updated
        wait = OPEN_WAIT_S if wait_s is None else wait_s
        self._owner: Path | None = claim_store(self.root, wait)
        try:
            self._connect(repair_on_open)
        except BaseException:
            self._let_go()
            raise

    def _connect(self, repair_on_open: bool) -> None:
        disable_telemetry()
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        embedding = self.embedding
        self._client = chromadb.PersistentClient(
            path=str(self.root / "vector"),
            settings=ChromaSettings(anonymized_telemetry=False, allow_reset=False),
        )
        self._collection = self._client.get_or_create_collection(
            COLLECTION_PREFIX + embedding.key,
            embedding_function=embedding.function,  # type: ignore[arg-type]
            configuration={"hnsw": {"space": "cosine"}},
        )
        self._batch = self._client.get_max_batch_size()
        self._migrate_old_collections()
        self._mirrors = Mirrors(self.root, self._mirrored_memories())
        if repair_on_open:
            self._mirrors.sync(self._collection.count())

    @classmethod
    def from_settings(cls, settings: Any, **kwargs: Any) -> LongTermMemory:
        root = Path(settings.data_dir) / "memory" / "long_term"
        return cls(root, make_embedding(settings), **kwargs)

    def close(self) -> None:
        """Write pending recall counters and release the chromadb client and the store."""
        try:
            self.flush()
            self._client.close()  # type: ignore[attr-defined]
        finally:
            self._let_go()

    def _let_go(self) -> None:
        owner, self._owner = self._owner, None
        if owner is not None:
            release_store(owner)

    def __enter__(self) -> LongTermMemory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- reading -----------------------------------------------------------------

    def count(self, types: Iterable[MemoryType] | None = None) -> int:
        where = _where(types)
        if where is None:
            return self._collection.count()
        return len(self._collection.get(where=where, include=[])["ids"])

    def get(self, memory_id: str) -> Memory | None:
        found = self._get([memory_id])
        return found[0] if found else None

    def list(
        self, types: Iterable[MemoryType] | None = None, limit: int | None = None
    ) -> builtins.list[Memory]:
        """Memories oldest first (all of them unless ``limit``)."""
        result = self._collection.get(where=_where(types), include=["documents", "metadatas"])
        memories = self._memories(result)
        memories.sort(key=lambda m: (m.created, m.id))
        return memories[:limit] if limit is not None else memories

    def vectors(
        self, memory_type: MemoryType
    ) -> tuple[builtins.list[Memory], npt.NDArray[np.float32]]:
        """All memories of one type with their unit embedding rows (for near-duplicate search)."""
        result = self._collection.get(
            where={"type": memory_type}, include=["documents", "metadatas", "embeddings"]
        )
        memories = self._memories(result)
        if not memories:
            return memories, np.empty((0, 0), dtype=np.float32)
        return memories, np.asarray(result["embeddings"], dtype=np.float32)

    def retrieve(
        self,
        query: str,
        top_k: int = 5,
        types: Iterable[MemoryType] | None = None,
        min_score: float | None = None,
        touch: bool = True,
    ) -> builtins.list[tuple[Memory, float]]:
        """The ``top_k`` memories most similar to ``query``, best first, with cosine scores.

        Each returned memory counts as used (unless ``touch`` is false, for browsing):
        its ``access_count`` goes up by one and its ``updated`` time moves to now,
        which resets its forgetting clock.
        """
        if top_k < 1 or not query.strip():
            return []
        with self._lock:
            result = self._collection.query(
                query_texts=[query],
                n_results=top_k,
                where=_where(types),
                include=["documents", "metadatas", "distances"],
            )
            found = self._memories(
                {
                    "ids": result["ids"][0],
                    "documents": (result["documents"] or [[]])[0],
                    "metadatas": (result["metadatas"] or [[]])[0],
                }
            )
            scores = [1.0 - float(d) for d in (result["distances"] or [[]])[0]]
            hits = [
                (m, s)
                for m, s in zip(found, scores, strict=True)
                if min_score is None or s >= min_score
            ]
            if touch and hits:
                now = now_utc()
                for memory, _ in hits:
                    memory.access_count += 1
                    memory.updated = now
                    self._recalls[memory.id] = (memory.access_count, now)
                if len(self._recalls) >= RECALLS_HELD:
                    self.flush()
            return hits

    # -- writing (each write first flushes the pending recall counters) -----------------

    def flush(self) -> None:
        """Write the recall counters held since the last write."""
        with self._lock:
            pending, self._recalls = self._recalls, {}
            live = {m.id for m in self._get(builtins.list(pending))}
            ids = [i for i in pending if i in live]
            for chunk in self._chunks(ids):
                self._collection.update(
                    ids=chunk,
                    metadatas=[
                        {"access_count": pending[i][0], "updated": pending[i][1].isoformat()}
                        for i in chunk
                    ],
                )

    def store(self, memory: Memory) -> Memory:
        """Add a memory, or replace the one with the same id (the content is re-embedded)."""
        return self.store_many([memory])[0]

    def store_many(self, memories: Sequence[Memory]) -> builtins.list[Memory]:
        """Add or replace many memories, embedded and written in batches. Every content is
        redacted first: a memory is recalled into later prompts and listed by `jarvis
        memory`, so a key or a URL's password in a task's text or failure never lands here."""
        secrets = known_secrets()
        memories = [_redacted(m, secrets) for m in memories]
        with self._lock:
            self.flush()
            for chunk in self._chunks(memories):
                self._collection.upsert(
                    ids=[m.id for m in chunk],
                    documents=[m.content for m in chunk],
                    metadatas=[m.metadata() for m in chunk],
                )
            self._mirrors.put(memories)
        return memories

    def update(
        self,
        memory_id: str,
        *,
        content: str | None = None,
        type: MemoryType | None = None,
        importance: float | None = None,
        task_ids: Sequence[str] | None = None,
    ) -> Memory:
        """Change some fields of a memory; raises :class:`MemoryNotFound`."""
        changes: dict[str, Any] = {
            "content": content,
            "type": type,
            "importance": importance,
            "task_ids": None if task_ids is None else list(task_ids),
        }
        with self._lock:
            self.flush()
            current = self.get(memory_id)
            if current is None:
                raise MemoryNotFound(memory_id)
            changes = {k: v for k, v in changes.items() if v is not None} | {"updated": now_utc()}
            changed = Memory.model_validate(current.model_dump() | changes)
            if changed.content != current.content:
                return self.store(changed)  # a new document: chromadb embeds it again
            self._collection.update(ids=[changed.id], metadatas=[changed.metadata()])
            self._mirrors.put([changed])
            return changed

    def forget(self, memory_id: str) -> bool:
        """Delete one memory; False if there was none with this id."""
        return bool(self.forget_many([memory_id]))

    def forget_many(self, memory_ids: Sequence[str]) -> builtins.list[str]:
        """Delete memories; returns the ids that existed."""
        with self._lock:
            self.flush()
            existing = self._get(list(memory_ids))
            for chunk in self._chunks([m.id for m in existing]):
                self._collection.delete(ids=chunk)
            self._mirrors.remove(existing)
            return [m.id for m in existing]

    def apply_merges(self, merges: Sequence[tuple[Memory, Sequence[str]]]) -> None:
        """Write each merged memory (same content as stored), then delete what it absorbed.

        Two steps in this order, so a crash leaves both records; the merged one lists
        the absorbed ids in ``merged_from``, which lets a second merge skip counting them.
        """
        with self._lock:
            self.flush()
            kept = [merged for merged, _ in merges]
            for chunk in self._chunks(kept):
                self._collection.update(
                    ids=[m.id for m in chunk], metadatas=[m.metadata() for m in chunk]
                )
            self._mirrors.put(kept)
            self.forget_many([mid for _, absorbed in merges for mid in absorbed])

    # -- mirrors and repair (the files themselves: jarvis/memory/mirrors.py) ------------

    def mirror_path(self, memory_type: MemoryType) -> Path:
        return self._mirrors.path(memory_type)

    def check(self) -> builtins.list[str]:
        """Where the mirror files disagree with the vector store (empty when in step)."""
        with self._lock:
            return self._mirrors.check()

    def repair(self) -> RepairReport:
        """Re-derive both mirrors from the vector store and remove half-written temp files."""
        with self._lock:
            self._mirrors.reset(self._mirrored_memories())
            return self._mirrors.sync(self._collection.count())

    def _mirrored_memories(self) -> builtins.list[Memory]:
        return self.list(types=list(MIRRORED))

    # -- chromadb plumbing -------------------------------------------------------------

    def _chunks(self, items: Sequence[T]) -> Iterator[builtins.list[T]]:
        for start in range(0, len(items), self._batch):
            yield builtins.list(items[start : start + self._batch])

    def _get(self, ids: Sequence[str]) -> builtins.list[Memory]:
        return self._memories(self._collection.get(ids=list(ids))) if ids else []

    def _memories(self, result: Any) -> builtins.list[Memory]:
        """Records as memories, with the recall counters not yet written laid over them."""
        memories = []
        for mid, doc, meta in zip(
            result["ids"], result["documents"] or [], result["metadatas"] or [], strict=True
        ):
            memory = Memory.from_record(mid, doc or "", dict(meta or {}))
            if mid in self._recalls:
                memory.access_count, memory.updated = self._recalls[mid]
            memories.append(memory)
        return memories

    def _migrate_old_collections(self) -> None:
        """Re-embed memories left in collections of another embedding, then drop those."""
        current = self._collection.name
        for collection in self._client.list_collections():
            name = collection if isinstance(collection, str) else collection.name
            if not name.startswith(COLLECTION_PREFIX) or name == current:
                continue
            result = self._client.get_collection(name, embedding_function=None).get()
            have = set(self._collection.get(ids=result["ids"], include=[])["ids"])
            todo = [m for m in self._memories(result) if m.id not in have]
            log.warning("re-embedding %d memories from %s into %s", len(todo), name, current)
            for chunk in self._chunks(todo):
                self._collection.add(
                    ids=[m.id for m in chunk],
                    documents=[m.content for m in chunk],
                    metadatas=[m.metadata() for m in chunk],
                )
            self._client.delete_collection(name)


def _redacted(memory: Memory, secrets: Iterable[str]) -> Memory:
    content = redact(memory.content, list(secrets))
    return memory if content == memory.content else memory.model_copy(update={"content": content})
