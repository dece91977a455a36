"""One run folder on disk, ``runs/DATE/TASK_ID/`` (format: :mod:`jarvis.runs.journal`).

- :func:`read_events`: the lines of one journal that parse, in file order (an older
  ``task_finished``'s ``finished`` read as ``completed``); a torn or broken
  line is skipped with a warning. :func:`last_seq`: its last ``seq``, read from its end.
- :func:`read_run` and :func:`load_run`: its ``run.json``, rebuilt from the journal when
  missing or broken.
- :func:`folder_name`: a task id as a folder name; :func:`day_folders`: the date folders.

These read one folder (or the newest two days) and never the whole history: finding a
folder among all of them is :mod:`jarvis.runs.index`'s.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jarvis.runs.run_info import RUN_FILE, RunInfo, Verdict, event_usage
from jarvis.task_words import INTERRUPTED, status_word

log = logging.getLogger(__name__)

EVENTS_FILE = "events.jsonl"
DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_TAILS = (4 * 1024, 64 * 1024)
"""How much of a journal's end :func:`last_seq` reads first, then next."""


def day_folders(root: Path) -> list[Path]:
    """Date folders under ``runs/``, newest first."""
    if not root.is_dir():
        return []
    return sorted((p for p in root.iterdir() if p.is_dir() and DAY.fullmatch(p.name)), reverse=True)


def is_run(folder: Path) -> bool:
    """Whether ``folder`` holds a run: its journal or its ``run.json``."""
    return (folder / EVENTS_FILE).is_file() or (folder / RUN_FILE).is_file()


def read_events(path: Path, after: int = 0) -> Iterator[dict[str, Any]]:
    """The lines of one journal with ``seq > after``; broken lines skipped with a warning."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    lines = data.split(b"\n")
    torn = lines.pop()  # after the last newline: empty, or a line cut by a crash
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        record = _parse(raw)
        if record is None:
            log.warning("%s line %d is not a journal line; skipped", path, number)
        elif record["seq"] > after:
            yield record
    if torn.strip():
        log.warning("%s ends in a torn line (%d bytes); skipped", path, len(torn))


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("seq"), int):
        return None
    if not isinstance(record.get("kind"), str):
        return None
    if record["kind"] == "task_finished" and isinstance(record.get("status"), str):
        record["status"] = status_word(record["status"])  # an older journal's finished
    return record


def last_seq(path: Path) -> int:
    """The ``seq`` of the last complete line of a journal (0 when there is none): its last
    4 KiB are read, then 64 KiB, and the whole file only for a huge last line."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        return 0
    try:
        size = os.fstat(fd).st_size
        for tail in _TAILS:
            start = max(0, size - tail)
            found = _last_in(os.pread(fd, size - start, start), whole=start == 0)
            if found is not None:
                return found
            if start == 0:
                return 0
    finally:
        os.close(fd)
    return max((r["seq"] for r in read_events(path)), default=0)


def _last_in(tail: bytes, whole: bool) -> int | None:
    """The last line's ``seq`` in a journal's tail (None: none there, read more)."""
    lines = tail.split(b"\n")
    lines.pop()  # a torn or empty piece after the last newline
    for raw in reversed(lines if whole else lines[1:]):
        record = _parse(raw)
        if record is not None:
            return int(record["seq"])
    return None


def newest_seq_on_disk(root: Path) -> int:
    """The largest ``seq`` in the two newest date folders of ``runs/`` (0 when none)."""
    best = 0
    for day in day_folders(root)[:2]:
        for folder in day.iterdir():
            best = max(best, last_seq(folder / EVENTS_FILE))
    return best


def folder_name(task_id: str) -> str:
    """A task id as a folder name: anything but letters, digits, ``-_.`` becomes ``_``, and
    no leading dot (so no id can name a path outside ``runs/DATE/``)."""
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in task_id).lstrip(".")
    return name or "_"


def read_run(folder: Path) -> RunInfo:
    """A run's ``run.json`` as written; rebuilt from its journal when missing or broken."""
    try:
        return RunInfo.load(folder)
    except (OSError, ValueError) as exc:
        if (folder / RUN_FILE).exists():
            log.warning("%s cannot be read (%s); using its journal", folder / RUN_FILE, exc)
        return _from_journal(folder)


def load_run(data_dir: Path, folder: Path) -> RunInfo:
    """:func:`read_run` with ``folder`` set, and an ``in_progress`` run whose process is
    gone shown as ``interrupted``."""
    run = read_run(folder)
    run.folder = str(folder.relative_to(data_dir))
    if run.status == "in_progress" and not alive(run.pid):
        run.status = run.current.status = INTERRUPTED
    return run


def _from_journal(folder: Path) -> RunInfo:
    run = RunInfo(task_id=folder.name)
    part = run.current
    for record in read_events(folder / EVENTS_FILE):
        kind = record["kind"]
        if kind == "task_started":
            if part.first_seq is not None and part.started is not None:  # a later run
                part = run.begin(record.get("ts") or 0.0, str(record.get("answer") or ""))
            run.task = run.task or str(record.get("task", ""))
            part.started = record.get("ts")
        elif kind == "step_finished":
            part.steps = max(part.steps, int(record.get("step") or 0))
            part.tokens = part.tokens + event_usage(record)
            part.cost_usd = float(record.get("cost_usd") or 0.0)
        elif kind == "verification_finished":
            part.verdict = Verdict(
                done=bool(record.get("done")), reason=str(record.get("reason", ""))
            )
        elif kind == "task_finished":
            part.status, part.ended = str(record.get("status")), record.get("ts")  # new words
            part.summary = str(record.get("summary") or "")
            part.stopped_by = record.get("stopped_by")
            part.tokens, part.steps = event_usage(record), int(record.get("steps") or 0)
            part.cost_usd = float(record.get("cost_usd") or 0.0)
        part.first_seq = part.first_seq or record["seq"]
        part.last_seq = record["seq"]
    run.total()
    return run


def alive(pid: int | None) -> bool:
    """Whether process ``pid`` exists (another user's counts)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return True
