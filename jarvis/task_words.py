"""One set of task status words for every face, and the one way each is shown to a person.

The words are the control API's (the todo list's): ``pending``, ``in_progress``,
``completed``, ``failed``, ``needs_user``, ``cancelled``. The API, MCP, A2A's task metadata,
the journal's ``task_finished`` lines and ``run.json`` use them; a run whose process ended
while it said ``in_progress`` is listed as ``interrupted``. Records written before the words
were one (``running`` and ``finished`` in journals and ``run.json``) are read through
:func:`status_word`, so a user's history shows in the same words.

:data:`SHOWN` is what a person reads (the TUI, ``jarvis runs``, the web panel, which gets it
from ``GET /api/task-words``): ``in_progress`` is "in progress", ``needs_user`` "waiting for
you".
"""

from __future__ import annotations

from typing import Literal, get_args

TaskStatus = Literal["pending", "in_progress", "completed", "failed", "needs_user", "cancelled"]
STATUSES: tuple[str, ...] = get_args(TaskStatus)
INTERRUPTED = "interrupted"
"""A run that says ``in_progress`` whose process is gone (a listing's word, never written)."""

SHOWN: dict[str, str] = {
    "pending": "pending",
    "in_progress": "in progress",
    "completed": "completed",
    "failed": "failed",
    "needs_user": "waiting for you",
    "cancelled": "cancelled",
    INTERRUPTED: "interrupted",
}
"""Each status as a person reads it, on every face."""

OLD_WORDS: dict[str, str] = {"running": "in_progress", "finished": "completed"}
"""The words of runs recorded before the vocabulary was one, and the agent's own ending
word (its ``finished`` tool), as the API's."""


def status_word(word: str) -> str:
    """``word`` in the API's words: an older record's ``running`` or ``finished`` turned into
    ``in_progress`` or ``completed``; any other word as it is."""
    return OLD_WORDS.get(word, word)


def shown(word: str) -> str:
    """How a person reads the status ``word`` (older words too): "in progress", "waiting for
    you"; a word not in the vocabulary as it is, with ``_`` as a space."""
    word = status_word(word)
    return SHOWN.get(word, word.replace("_", " "))
