"""Reading the run journal (format: :mod:`jarvis.runs.journal`).

- :func:`read_events` (one journal file) and :func:`run_events` (a task's latest run):
  the lines that parse, in file order; a torn or broken line is skipped with a warning.
- :func:`events_after` (``seq``): every line of the data dir with a larger ``seq``, in
  ``seq`` order, merged across runs.
- :func:`list_runs`: the runs, newest first, as :class:`~jarvis.runs.run_info.RunInfo`
  (from ``run.json``, or from the journal when ``run.json`` is missing or broken).
- :func:`find_run`: the folder of a task's latest run; :func:`last_seq`: the last
  ``seq`` of one journal (read from its end).
"""

from __future__ import annotations

import heapq
import json
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jarvis.runs.run_info import RUN_FILE, RunInfo, Verdict, event_usage

log = logging.getLogger(__name__)

EVENTS_FILE = "events.jsonl"
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_TAIL = 64 * 1024


def _days(root: Path) -> list[Path]:
    """Date folders under ``runs/``, newest first."""
    if not root.is_dir():
        return []
    return sorted(
        (p for p in root.iterdir() if p.is_dir() and _DAY.fullmatch(p.name)), reverse=True
    )


def _journals(day: Path) -> list[Path]:
    return [p / EVENTS_FILE for p in sorted(day.iterdir()) if (p / EVENTS_FILE).is_file()]


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
    return record


def last_seq(path: Path) -> int:
    """The ``seq`` of the last complete line of a journal (0 when there is none)."""
    try:
        with path.open("rb") as f:
            size = f.seek(0, os.SEEK_END)
            start = max(0, size - _TAIL)
            f.seek(start)
            tail = f.read()
    except FileNotFoundError:
        return 0
    lines = tail.split(b"\n")
    lines.pop()  # a torn or empty piece after the last newline
    for raw in reversed(lines if start == 0 else lines[1:]):
        record = _parse(raw)
        if record is not None:
            return int(record["seq"])
    if start > 0:  # one huge line: read it all
        return max((r["seq"] for r in read_events(path)), default=0)
    return 0


def newest_seq_on_disk(root: Path) -> int:
    """The largest ``seq`` in the two newest date folders of ``runs/`` (0 when none)."""
    best = 0
    for day in _days(root)[:2]:
        for journal in _journals(day):
            best = max(best, last_seq(journal))
    return best


def events_after(data_dir: Path, after: int = 0) -> Iterator[dict[str, Any]]:
    """Every journal line of the data dir with ``seq > after``, in ``seq`` order.

    Date folders are read newest first until one (after the newest two, for runs that
    went past midnight) has nothing after ``after``: numbers grow with time, so older
    folders cannot have any."""
    journals: list[Path] = []
    for index, day in enumerate(_days(data_dir / "runs")):
        found = [j for j in _journals(day) if last_seq(j) > after]
        if not found and index >= 1:
            break
        journals += found
    streams = [read_events(j, after) for j in journals]
    yield from heapq.merge(*streams, key=lambda r: int(r["seq"]))


def folder_name(task_id: str) -> str:
    """A task id as a folder name: anything but letters, digits, ``-_.`` becomes ``_``, and
    no leading dot (so no id can name a path outside ``runs/DATE/``)."""
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in task_id).lstrip(".")
    return name or "_"


def find_run(data_dir: Path, task_id: str) -> Path | None:
    """The folder of the latest run of ``task_id`` (None when it never ran)."""
    for day in _days(data_dir / "runs"):
        folder = day / folder_name(task_id)
        if (folder / EVENTS_FILE).is_file() or (folder / RUN_FILE).is_file():
            return folder
    return None


def run_events(data_dir: Path, task_id: str, after: int = 0) -> list[dict[str, Any]]:
    """The journal lines of the latest run of ``task_id`` (empty when it never ran)."""
    folder = find_run(data_dir, task_id)
    return [] if folder is None else list(read_events(folder / EVENTS_FILE, after))


def load_run(data_dir: Path, folder: Path) -> RunInfo:
    """A run's ``run.json``; rebuilt from its journal when missing or broken."""
    try:
        run = RunInfo.load(folder)
    except (OSError, ValueError) as exc:
        if (folder / RUN_FILE).exists():
            log.warning("%s cannot be read (%s); using its journal", folder / RUN_FILE, exc)
        run = _from_journal(folder)
    run.folder = str(folder.relative_to(data_dir))
    if run.status == "running" and not _alive(run.pid):
        run.status = run.current.status = "interrupted"
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
            part.status, part.ended = str(record.get("status")), record.get("ts")
            part.summary = str(record.get("summary") or "")
            part.stopped_by = record.get("stopped_by")
            part.tokens, part.steps = event_usage(record), int(record.get("steps") or 0)
            part.cost_usd = float(record.get("cost_usd") or 0.0)
        part.first_seq = part.first_seq or record["seq"]
        part.last_seq = record["seq"]
    run.total()
    return run


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return True


def list_runs(data_dir: Path, limit: int | None = None) -> list[RunInfo]:
    """Runs, newest first (by start time within a day), at most ``limit``."""
    out: list[RunInfo] = []
    for day in _days(data_dir / "runs"):
        folders = [p for p in day.iterdir() if p.is_dir()]
        runs = [load_run(data_dir, f) for f in folders]
        runs.sort(key=lambda r: (r.started or 0.0, r.last_seq or 0), reverse=True)
        out += runs
        if limit is not None and len(out) >= limit:
            return out[:limit]
    return out
