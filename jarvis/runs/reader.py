"""Reading the run journal (format: :mod:`jarvis.runs.journal`).

- :func:`read_events` (one journal file) and :func:`run_events` (a task's latest run):
  the lines that parse, in file order; a torn or broken line is skipped with a warning.
- :func:`events_after` (``seq``): every line of the data dir with a larger ``seq``, in
  ``seq`` order, merged across runs.
- :func:`list_runs`: a page of the runs, newest first, as
  :class:`~jarvis.runs.run_info.RunSummary`, with the cursor of the next page.
- :func:`find_run`: the folder of a task's latest run; :func:`last_seq`: the last
  ``seq`` of one journal (read from its end).

Finding folders goes through the run index (:mod:`jarvis.runs.index`), so these cost the
same at the ten-thousandth run as at the tenth; one folder's files are read by
:mod:`jarvis.runs.folder`.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jarvis.runs.folder import (
    EVENTS_FILE,
    folder_name,
    last_seq,
    load_run,
    newest_seq_on_disk,
    read_events,
)
from jarvis.runs.index import RunIndex
from jarvis.runs.listing import BadCursor, RunPage, page
from jarvis.runs.run_info import RunInfo, RunSummary

PAGE = 20
"""Runs on a page of the listing unless a limit is given."""


def events_after(data_dir: Path, after: int = 0) -> Iterator[dict[str, Any]]:
    """Every journal line of the data dir with ``seq > after``, in ``seq`` order: only the
    journals the index says can hold one (open, or ending later) are read."""
    with RunIndex(data_dir) as index:
        journals = index.journals_after(after)
    streams = [read_events(j, after) for j in journals]
    yield from heapq.merge(*streams, key=lambda r: int(r["seq"]))


def find_run(data_dir: Path, task_id: str) -> Path | None:
    """The folder of the latest run of ``task_id`` (None when it never ran)."""
    with RunIndex(data_dir) as index:
        return index.find(task_id)


def run_events(data_dir: Path, task_id: str, after: int = 0) -> list[dict[str, Any]]:
    """The journal lines of the latest run of ``task_id`` (empty when it never ran)."""
    folder = find_run(data_dir, task_id)
    return [] if folder is None else list(read_events(folder / EVENTS_FILE, after))


def replied_since_start(data_dir: Path, task_id: str) -> bool:
    """Whether the journal of ``task_id``'s latest run has a ``reply_ready`` after its last
    ``task_started`` (a run whose ending was written to the books but whose reply was not,
    when the process died between the two, has none)."""
    replied = False
    for line in run_events(data_dir, task_id):
        if line.get("kind") == "task_started":
            replied = False
        elif line.get("kind") == "reply_ready":
            replied = True
    return replied


def list_runs(data_dir: Path, limit: int = PAGE, cursor: str | None = None) -> RunPage:
    """At most ``limit`` runs, newest first (by day, then start time), after ``cursor``
    (the ``next`` of the page before; :class:`BadCursor` for any other)."""
    with RunIndex(data_dir) as index:
        return page(index, max(1, limit), cursor)


__all__ = [
    "EVENTS_FILE",
    "PAGE",
    "BadCursor",
    "RunInfo",
    "RunPage",
    "RunSummary",
    "events_after",
    "find_run",
    "folder_name",
    "last_seq",
    "list_runs",
    "load_run",
    "newest_seq_on_disk",
    "read_events",
    "replied_since_start",
    "run_events",
]
