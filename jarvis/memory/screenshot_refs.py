"""Everything in a data dir that names a stored picture, found in one scan.

A screenshot may be deleted only when nothing names it any more, so the scan covers every
place a picture's path is kept:

- step records, ``memory/steps/DATE/*.json`` (``screenshot.path``): the only references
  that may be re-pointed (rewritten atomically); a record that does not parse pins every
  ``memory/screenshots/...`` path its bytes mention;
- run journals, ``runs/DATE/TASK/events.jsonl`` (``screenshot`` of ``step_finished`` and
  ``approval_requested``, relative to the data dir): append-only, never rewritten; a torn
  line pins the paths it mentions;
- run step folders, ``runs/DATE/TASK/steps/NNNN/step.json`` (``before``, ``after``, the
  target crops, relative to the folder);
- any other JSON beside a run (``run.json``, ``replay.json``) and everything under
  ``memory/long_term/`` (memories, their mirrors and the vector store): the
  ``memory/screenshots/...`` paths they mention.

Approval pictures (``approvals/ID.jpg``) are named by their ``approval_requested`` line.
``report.html`` names nothing: its pictures are inline.

The upkeep (dedup, expiry) looks only at the pictures of a window, from
:func:`window_start` on, and so needs only the references that can name one: a picture
is named after it is made, so the run folders written since (the run index's
``touched_since``, handed in as ``recent_runs``) with the step records and long-term
memory, never the whole history.
``jarvis memory check`` scans everything.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RecentRuns = Callable[[float], list[Path]]
"""The run folders written at a time or later (the run index's ``touched_since``, handed
in by the layers above: memory does not read the runs package)."""

log = logging.getLogger(__name__)

SHOTS = "memory/screenshots/"
_SHOT_PATH = re.compile(rb"memory/screenshots/[^\"'\s\\<>()]+")
_MENTION_LIMIT = 256 * 1024 * 1024  # bytes read from one file to find mentions

STEP_RECORD, JOURNAL, RUN_STEP, MENTION = "step record", "journal", "run step", "mention"
WINDOW_SLACK_S = 2 * 86400.0
"""How far before the oldest step record (or the expiry age) the upkeep's window starts."""
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Reference:
    """``source`` names ``target`` (a path relative to the data dir)."""

    target: str
    source: Path
    kind: str
    task_id: str | None = None
    step: int | None = None
    phash: str | None = None
    """The picture's pHash as the source records it, when it does."""

    @property
    def rewritable(self) -> bool:
        """Only a readable step record may be re-pointed to another file."""
        return self.kind == STEP_RECORD

    def where(self, data_dir: Path) -> str:
        """The source relative to the data dir."""
        return _rel(self.source, data_dir)

    def describe(self, data_dir: Path) -> str:
        step = f" step {self.step}" if self.step is not None else ""
        return f"{self.kind} {self.where(data_dir)}{step} names {self.target}"


def scan(
    data_dir: Path, since: float | None = None, recent_runs: RecentRuns | None = None
) -> list[Reference]:
    """Every reference to a stored picture under ``data_dir``; with ``since`` (Unix time)
    and ``recent_runs``, every one that can name a picture made at ``since`` or later (see
    the module doc); without ``recent_runs`` every run folder is read."""
    data_dir = Path(data_dir)
    refs: list[Reference] = []
    refs += _step_records(data_dir)
    runs = data_dir / "runs"
    if runs.is_dir() and since is not None and recent_runs is not None:
        refs += _run_folders(recent_runs(since), data_dir)
    elif runs.is_dir():
        for folder in sorted(p.parent for p in runs.glob("*/*/events.jsonl")):
            refs += journal_refs(folder / "events.jsonl")
        for folder in sorted(p.parent for p in runs.glob("*/*/steps/*/step.json")):
            refs += _run_step(folder, data_dir)
        for other in sorted([*runs.glob("*/*/*.json"), *runs.glob("*/*/steps/*/*.json")]):
            if other.name != "step.json":
                refs += _mentions(other)
    long_term = data_dir / "memory" / "long_term"
    if long_term.is_dir():
        for path in sorted(p for p in long_term.rglob("*") if p.is_file()):
            refs += _mentions(path)
    return refs


def _run_folders(folders: Iterable[Path], data_dir: Path) -> list[Reference]:
    """What these run folders name: their journals, run steps and other JSON files."""
    refs: list[Reference] = []
    for folder in folders:
        refs += journal_refs(folder / "events.jsonl") if (folder / "events.jsonl").is_file() else []
        for step in sorted(p.parent for p in folder.glob("steps/*/step.json")):
            refs += _run_step(step, data_dir)
        for other in sorted([*folder.glob("*.json"), *folder.glob("steps/*/*.json")]):
            if other.name != "step.json":
                refs += _mentions(other)
    return refs


def window_start(data_dir: Path, hours: float = 0.0, now: float | None = None) -> float:
    """Where the upkeep's window starts: :data:`WINDOW_SLACK_S` before the oldest step
    record's day or ``hours`` before ``now``, whichever is earlier. Step records expire
    after ``short_term_hours``, so it is a few days back however long the history."""
    start = (time_now() if now is None else now) - hours * 3600
    steps = data_dir / "memory" / "steps"
    days = (
        sorted(p.name for p in steps.iterdir() if _DAY.fullmatch(p.name)) if steps.is_dir() else []
    )
    if days:
        oldest = datetime.strptime(days[0], "%Y-%m-%d").replace(tzinfo=UTC).timestamp()
        start = min(start, oldest)
    return start - WINDOW_SLACK_S


def in_window(day: str, since: float) -> bool:
    """Whether the picture folder ``memory/screenshots/DAY`` can hold a picture made at
    ``since`` or later (folders are named by the UTC date a picture was saved)."""
    first = datetime.fromtimestamp(since, UTC).strftime("%Y-%m-%d")
    return bool(_DAY.fullmatch(day)) and day >= first


def time_now() -> float:
    return datetime.now(UTC).timestamp()


def by_target(refs: list[Reference]) -> dict[str, list[Reference]]:
    out: dict[str, list[Reference]] = {}
    for ref in refs:
        out.setdefault(ref.target, []).append(ref)
    return out


def _step_records(data_dir: Path) -> Iterator[Reference]:
    steps = data_dir / "memory" / "steps"
    for path in sorted(steps.glob("*/*.json")) if steps.is_dir() else []:
        try:
            raw = path.read_bytes()
        except OSError as exc:
            log.warning("cannot read step record %s: %s", path, exc)
            continue
        try:
            data = json.loads(raw)
            shot = data.get("screenshot")
            task_id, step = str(data["task_id"]), int(data["step"])
            if shot is not None:
                target, phash = str(shot["path"]), str(shot["phash"])
        except (ValueError, TypeError, KeyError, AttributeError):
            yield from _mentions(path, raw)  # unreadable: every path it mentions stays
            continue
        if shot is not None:
            yield Reference(target, path, STEP_RECORD, task_id, step, phash)


def journal_refs(path: Path) -> list[Reference]:
    """The pictures a run's journal names (torn lines pin what they mention)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        log.warning("cannot read journal %s: %s", path, exc)
        return []
    out: list[Reference] = []
    for line in raw.splitlines():
        if b"screenshot" not in line:
            continue
        try:
            event: Any = json.loads(line)
            shot = event.get("screenshot")
        except (ValueError, AttributeError):
            out += _mentions(path, line)
            continue
        if isinstance(shot, str) and shot:
            step = event.get("step")
            task_id = event.get("task_id")
            out.append(
                Reference(
                    shot,
                    path,
                    JOURNAL,
                    str(task_id) if task_id is not None else None,
                    step if isinstance(step, int) else None,
                )
            )
    return out


def _run_step(folder: Path, data_dir: Path) -> list[Reference]:
    try:
        data = json.loads((folder / "step.json").read_bytes())
        names = [("before", data.get("before"), data.get("phash", {}).get("before"))]
        names.append(("after", data.get("after"), data.get("phash", {}).get("after")))
        for call in data.get("calls") or []:
            target = call.get("target") or {}
            names.append(("target", target.get("file"), target.get("phash")))
        task_id, step = data.get("task_id"), data.get("step")
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        log.warning("cannot read run step %s: %s", folder, exc)
        return []
    out = []
    for _, name, phash in names:
        if isinstance(name, str) and name and "/" not in name and name not in (".", ".."):
            out.append(
                Reference(
                    _rel(folder / name, data_dir),
                    folder / "step.json",
                    RUN_STEP,
                    str(task_id) if task_id is not None else None,
                    step if isinstance(step, int) else None,
                    phash if isinstance(phash, str) and phash else None,
                )
            )
    return out


def _mentions(path: Path, raw: bytes | None = None) -> list[Reference]:
    if raw is None:
        try:
            with path.open("rb") as f:  # a buffer of the file's size, not of the limit:
                size = os.fstat(f.fileno()).st_size  # malloc fills it (jarvis/freed_memory.py)
                raw = f.read(min(size, _MENTION_LIMIT))
        except OSError as exc:
            log.warning("cannot read %s: %s", path, exc)
            return []
    found = {m.decode("utf-8", "replace").rstrip(".,;:") for m in _SHOT_PATH.findall(raw)}
    return [Reference(target, path, MENTION) for target in sorted(found)]


def _rel(path: Path, data_dir: Path) -> str:
    try:
        return path.relative_to(data_dir).as_posix()
    except ValueError:
        return path.as_posix()
