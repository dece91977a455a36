"""Which open tasks the router shows the model for one message: a bounded list.

With a thousand open tasks, listing them all would make every routing request a hundred
thousand tokens. The router shows at most ``router.candidates`` of them (DESIGN 14), chosen
in this order, each task once:

1. the thread (at most half the list): the task the message answers (``answers:`` in its
   header, when that task could not take it directly), then the open tasks that reply to the
   message's reply address or sender (their ``reply_to``), then the same sender's
   ``SENDER_RECENT`` most recent open tasks (same channel, same reply address); within each,
   a task waiting for the user comes before the newest;
2. the open tasks most similar to the message, by the long-term memory's offline embedding
   model (when there is one and it works), leaving a quarter of the list for
3. the newest open tasks, until the list is full.

:func:`choose` is pure; :class:`Similarity` keeps each task's vector by (task id, text
hash), so an unchanged task is embedded once, not once per message. Similarity is optional:
without an embedding model, or when it fails, the list is the thread and the newest, and a
warning says so in the log; routing never fails for it.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt

from jarvis.gateway.message_format import Message
from jarvis.gateway.todo_format import Todo

if TYPE_CHECKING:
    from jarvis.memory.embedding import EmbeddingChoice

log = logging.getLogger(__name__)

Embed = Callable[[list[str]], npt.NDArray[np.float32]]
"""Texts to one vector per text, in order (an embedding model)."""
Reason = Literal["thread", "similar", "newest"]

SENDER_RECENT = 3
"""The same sender's most recent open tasks taken into the thread."""
TASK_TEXT_MAX = 1000
"""Characters of a task (title, then description) that are embedded."""
MESSAGE_TEXT_MAX = 2000
"""Characters of a message that are embedded (the model reads only the start anyway)."""


@dataclass(frozen=True)
class Candidates:
    """The open tasks shown to the model (in the list's order), and what was left out."""

    shown: list[Todo]
    total: int
    """How many tasks were open."""
    reasons: dict[str, Reason] = field(default_factory=dict)
    """Why each shown task was chosen (by task id); empty when every open task is shown."""
    open_ids: frozenset[str] = frozenset()
    """Every open task's id, shown or not."""

    @property
    def cut(self) -> bool:
        return len(self.shown) < self.total


def everything(open_tasks: Sequence[Todo]) -> Candidates:
    """Every open task, when they all fit."""
    return Candidates(list(open_tasks), len(open_tasks), open_ids=_ids(open_tasks))


def newest_first(tasks: Sequence[Todo]) -> list[Todo]:
    """Newest first: by creation time, then by id (ids only grow)."""
    return sorted(tasks, key=lambda t: (t.created, _number(t.id)), reverse=True)


def _number(task_id: str) -> int:
    match = re.fullmatch(r"T(\d+)", task_id)
    return int(match[1]) if match else 0


def _ids(tasks: Sequence[Todo]) -> frozenset[str]:
    return frozenset(t.id for t in tasks)


def _waiting_then_newest(tasks: Sequence[Todo]) -> list[Todo]:
    newest = newest_first(tasks)
    return [t for t in newest if t.status == "needs_user"] + [
        t for t in newest if t.status != "needs_user"
    ]


def thread_of(message: Message, open_tasks: Sequence[Todo], answers: str | None) -> list[Todo]:
    """The open tasks of the message's thread, most likely first (see the module doc)."""
    answered = _number((answers or "").strip().upper()) or None
    addresses = {a for a in (message.reply_to, message.sender) if a}
    replies = [t for t in open_tasks if t.reply_to is not None and t.reply_to in addresses]
    sender = [
        t for t in open_tasks if t.source == message.channel and t.reply_to == message.reply_to
    ]
    ordered = [
        *(t for t in open_tasks if _number(t.id) == answered),
        *_waiting_then_newest(replies),
        *_waiting_then_newest(sender)[:SENDER_RECENT],
    ]
    return list({t.id: t for t in ordered}.values())  # each task once, where it came first


def choose(
    message: Message,
    open_tasks: Sequence[Todo],
    cap: int,
    *,
    answers: str | None = None,
    similarity: Mapping[str, float] | None = None,
) -> Candidates:
    """At most ``cap`` of ``open_tasks`` for ``message``: the thread, the most similar (by
    ``similarity``, task id to score, higher is closer), the newest. Pure."""
    if len(open_tasks) <= cap:
        return everything(open_tasks)
    reasons: dict[str, Reason] = {}

    def take(tasks: Sequence[Todo], why: Reason, room: int) -> None:
        for task in tasks:
            if len(reasons) >= room:
                return
            reasons.setdefault(task.id, why)

    take(thread_of(message, open_tasks, answers), "thread", max(1, cap // 2))
    if similarity:
        rest = [t for t in open_tasks if t.id not in reasons and t.id in similarity]
        rest.sort(key=lambda t: (-similarity[t.id], -_number(t.id)))
        take(rest, "similar", cap - cap // 4)  # a quarter stays for the newest
    take(newest_first(open_tasks), "newest", cap)
    shown = [t for t in open_tasks if t.id in reasons]
    return Candidates(shown, len(open_tasks), reasons, _ids(open_tasks))


def task_text(task: Todo) -> str:
    """What is embedded of a task: its title, then its description, cut."""
    text = task.description
    if not text.startswith(task.title):
        text = f"{task.title}\n{text}".strip()
    return text[:TASK_TEXT_MAX]


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def _unit_rows(vectors: npt.ArrayLike, count: int) -> npt.NDArray[np.float32]:
    rows = np.asarray(vectors, dtype=np.float32)
    if rows.ndim != 2 or rows.shape[0] != count:
        raise ValueError(f"the embedding gave shape {rows.shape} for {count} texts")
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.clip(norms, 1e-12, None)


class TaskVectors:
    """Each open task's vector, kept by (task id, text hash): a call embeds only the
    message and the tasks that are new or changed since the last call. Thread-safe."""

    def __init__(self, embed: Embed) -> None:
        self._embed = embed
        self._kept: dict[str, tuple[bytes, npt.NDArray[np.float32]]] = {}
        self._lock = threading.Lock()
        self.embedded = 0
        """Texts embedded so far (the messages included)."""

    def scores(self, text: str, tasks: Sequence[Todo]) -> dict[str, float]:
        """Cosine similarity of ``text`` to each task, by task id. Vectors of tasks not in
        ``tasks`` (no longer open) are let go. Raises what the embedding raises."""
        with self._lock:
            texts = {t.id: task_text(t) for t in tasks}
            digests = {tid: _digest(value) for tid, value in texts.items()}
            fresh = [tid for tid, d in digests.items() if self._kept.get(tid, (b"",))[0] != d]
            batch = [text[:MESSAGE_TEXT_MAX], *(texts[tid] for tid in fresh)]
            rows = _unit_rows(self._embed(batch), len(batch))
            self.embedded += len(batch)
            stale = set(fresh)
            self._kept = {tid: self._kept[tid] for tid in digests if tid not in stale}
            self._kept.update((tid, (digests[tid], rows[i + 1])) for i, tid in enumerate(fresh))
            if not digests:
                return {}
            ids = list(digests)
            matrix = np.stack([self._kept[tid][1] for tid in ids])
            return dict(zip(ids, (matrix @ rows[0]).tolist(), strict=True))


class Similarity:
    """Similarity scores for the router, or None, never an exception: without an embedding
    model, or when it fails, routing goes on without them (a warning in the log)."""

    def __init__(self, embed: Embed | None) -> None:
        self._vectors = TaskVectors(embed) if embed is not None else None
        self._warned = False

    @property
    def vectors(self) -> TaskVectors | None:
        return self._vectors

    def scores(self, message: Message, tasks: Sequence[Todo]) -> dict[str, float] | None:
        if self._vectors is None:
            self._warn_once(
                "routing shows the thread and the newest open tasks, not the most similar: "
                "no embedding model (long-term memory is off)"
            )
            return None
        try:
            scores = self._vectors.scores(message.text, tasks)
        except Exception as exc:  # the one boundary: an optional model's failure is logged
            self._warn_once(f"routing {message.id} without similarity: the embedding failed: {exc}")
            return None
        self._warned = False  # it works again: a later failure is said again
        return scores

    def _warn_once(self, text: str) -> None:
        if not self._warned:
            log.warning("%s", text)
            self._warned = True
        else:
            log.debug("%s", text)


def embedder_of(choice: EmbeddingChoice) -> Embed:
    """The long-term memory's embedding model as an :data:`Embed`."""
    function = choice.function

    def embed(texts: list[str]) -> npt.NDArray[np.float32]:
        return np.asarray(function(texts), dtype=np.float32)

    return embed
