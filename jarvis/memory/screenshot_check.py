"""``jarvis memory check``: find references to pictures that are gone, and repair them.

Two kinds of problem:

- *dangling*: a journal, a step record, a run step, an approval or a memory names a file
  that does not exist (:mod:`jarvis.memory.screenshot_refs` finds every reference);
- *mismatched*: a step record points at a picture other than the one its step saw (the
  run's journal names another file for that step and the pixels differ), the mark an old
  pHash-only dedup left when it merged "the editor with a typed line" into "the empty
  editor".

Repair works only from a copy with the right pixels. A run keeps one of each step's
screen (``steps/NNNN/before.jpg``) and the store keeps one too, so each can bring the
other back: a step record is re-pointed to a stored file with the same pixels when there
is one; a file that journals (append-only, never rewritten) or other sources still name
is written back at its path from the copy. A mismatched record is pointed back at the
file its journal names. What has no copy (an approval's picture, a target crop, a PNG
whose only copy is a JPEG) is reported and left alone.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jarvis.fsutil import atomic_write_bytes
from jarvis.memory.pixels import PixelCache, decode
from jarvis.memory.screenshot_dedup import hamming, repoint_record
from jarvis.memory.screenshot_refs import (
    JOURNAL,
    RUN_STEP,
    SHOTS,
    STEP_RECORD,
    Reference,
    by_target,
    scan,
)

log = logging.getLogger(__name__)

DANGLING, MISMATCHED = "dangling", "mismatched"


@dataclass
class Problem:
    kind: str
    ref: Reference
    repaired: str = ""
    """How it was repaired ("" when it was not)."""
    reason: str = ""
    """Why it could not be repaired."""

    def line(self, data_dir: Path) -> str:
        outcome = f"repaired: {self.repaired}" if self.repaired else self.reason or "not repaired"
        return f"{self.kind}: {self.ref.describe(data_dir)} ({outcome})"

    def to_json(self, data_dir: Path) -> dict[str, Any]:
        return {
            "problem": self.kind,
            "kind": self.ref.kind,
            "source": self.ref.where(data_dir),
            "target": self.ref.target,
            "task_id": self.ref.task_id,
            "step": self.ref.step,
            "repaired": self.repaired or None,
            "reason": self.reason or None,
        }


@dataclass
class CheckReport:
    references: int = 0
    problems: list[Problem] = field(default_factory=list)

    def count(self, kind: str) -> int:
        return sum(p.kind == kind for p in self.problems)

    @property
    def left(self) -> list[Problem]:
        return [p for p in self.problems if not p.repaired]

    def summary(self) -> str:
        repaired = len(self.problems) - len(self.left)
        return (
            f"screenshots: {self.references} references; {self.count(DANGLING)} dangling, "
            f"{self.count(MISMATCHED)} pointing at another picture; repaired {repaired}, "
            f"left {len(self.left)}"
        )

    def to_json(self, data_dir: Path) -> dict[str, Any]:
        return {
            "references": self.references,
            "dangling": self.count(DANGLING),
            "mismatched": self.count(MISMATCHED),
            "repaired": len(self.problems) - len(self.left),
            "left": len(self.left),
            "problems": [p.to_json(data_dir) for p in self.problems],
        }


def check(data_dir: Path, repair: bool = False, max_distance: int = 4) -> CheckReport:
    """Every dangling or mismatched reference under ``data_dir``; with ``repair``, fixed
    where a copy with the right pixels exists."""
    data_dir = Path(data_dir)
    refs = scan(data_dir)
    report = CheckReport(references=len(refs))
    fixer = _Fixer(data_dir, refs, max_distance)
    for target, named in sorted(by_target(refs).items()):
        if _inside(data_dir, target) and (data_dir / target).is_file():
            continue
        problems = [Problem(DANGLING, ref) for ref in named]
        report.problems += problems
        if repair:
            fixer.restore(target, problems)
        else:
            for problem in problems:
                problem.reason = "missing"
    for problem in fixer.mismatches():
        report.problems.append(problem)
        if repair:
            fixer.point_back(problem)
    return report


def _inside(data_dir: Path, target: str) -> bool:
    parts = target.split("/")
    return not target.startswith("/") and all(p not in ("", ".", "..") for p in parts)


class _Fixer:
    """The copies a repair can work from, indexed by task and step."""

    def __init__(self, data_dir: Path, refs: list[Reference], max_distance: int) -> None:
        self.data_dir = data_dir
        self.refs = refs
        self.max_distance = max_distance
        self.pixels = PixelCache()
        self.run_steps: dict[tuple[str, int], list[Path]] = {}
        self.journal: dict[tuple[str, int], set[str]] = {}
        self.hashes: dict[str, str] = {}
        for ref in refs:
            key = (ref.task_id, ref.step)
            if key[0] is None or key[1] is None:
                continue
            task_step = (key[0], key[1])
            if ref.kind == RUN_STEP and ref.target.endswith("/before.jpg"):
                self.run_steps.setdefault(task_step, []).append(ref.source.parent)
            if ref.kind == JOURNAL and ref.target.startswith(SHOTS):
                self.journal.setdefault(task_step, set()).add(ref.target)
            if ref.phash and ref.target.startswith(SHOTS):
                self.hashes.setdefault(ref.target, ref.phash)

    # -- dangling --
    def restore(self, target: str, problems: list[Problem]) -> None:
        if not _inside(self.data_dir, target):
            return _fail(problems, "the path leads outside the data dir")
        if target.startswith(SHOTS):
            return self._restore_shot(target, problems)
        if target.startswith("runs/") and target.endswith(".jpg"):
            return self._restore_run_picture(target, problems)
        _fail(problems, "no other copy of it is kept")

    def _restore_shot(self, target: str, problems: list[Problem]) -> None:
        copy = self._run_copy(problems)
        if copy is None:
            return _fail(problems, "no run kept a copy of its step's screen")
        same = self._stored_same_as(copy, target)
        movable = [p for p in problems if p.ref.kind == STEP_RECORD]
        if same is not None:
            for problem in movable:
                if repoint_record(problem.ref.source, target, same):
                    problem.repaired = f"re-pointed to {same}"
        if all(p.repaired for p in problems):
            return None
        suffix = Path(target).suffix.lower()
        if same is not None and Path(same).suffix.lower() == suffix:
            source = self.data_dir / same
        elif suffix in (".jpg", ".jpeg"):
            source = copy
        else:
            return _fail([p for p in problems if not p.repaired], "its only copy is a JPEG")
        atomic_write_bytes(self.data_dir / target, source.read_bytes())
        for problem in problems:
            if not problem.repaired:
                problem.repaired = f"restored from {_rel(source, self.data_dir)}"
        return None

    def _run_copy(self, problems: list[Problem]) -> Path | None:
        """The run's picture of the step these references name."""
        for problem in problems:
            ref = problem.ref
            if ref.task_id is None or ref.step is None:
                continue
            if ref.kind == JOURNAL:  # its own run first
                own = ref.source.parent / "steps" / f"{ref.step:04d}" / "before.jpg"
                if own.is_file():
                    return own
            for folder in self.run_steps.get((ref.task_id, ref.step), []):
                if (folder / "before.jpg").is_file():
                    return folder / "before.jpg"
        return None

    def _stored_same_as(self, copy: Path, target: str) -> str | None:
        """A stored screenshot with the pixels of ``copy`` (pHash candidates only)."""
        phash = self.hashes.get(target)
        if phash is None:
            return None
        near = sorted(
            (hamming(phash, other), path)
            for path, other in self.hashes.items()
            if path != target and len(other) == len(phash) and (self.data_dir / path).is_file()
        )
        for distance, path in near[:4]:
            if distance <= self.max_distance and self.pixels.same(copy, self.data_dir / path):
                return path
        return None

    def _restore_run_picture(self, target: str, problems: list[Problem]) -> None:
        path = self.data_dir / target
        folder, name = path.parent, path.name
        step_file = [p.ref for p in problems if p.ref.kind == RUN_STEP]
        ref = step_file[0] if step_file else None
        source: Path | None = None
        if ref is not None and ref.task_id is not None and ref.step is not None:
            if name == "before.jpg":
                for shot in sorted(self.journal.get((ref.task_id, ref.step), set())):
                    if (self.data_dir / shot).is_file():
                        source = self.data_dir / shot
                        break
            elif name == "after.jpg":
                following = folder.parent / f"{ref.step + 1:04d}" / "before.jpg"
                source = following if following.is_file() else None
        if source is None:
            return _fail(problems, "no other copy of it is kept")
        data = source.read_bytes()
        if source.suffix.lower() not in (".jpg", ".jpeg"):
            image = decode(source)
            if image is None:
                return _fail(problems, f"{_rel(source, self.data_dir)} is not readable")
            out = io.BytesIO()
            image.save(out, "JPEG", quality=85)
            data = out.getvalue()
        atomic_write_bytes(path, data)
        for problem in problems:
            problem.repaired = f"restored from {_rel(source, self.data_dir)}"
        return None

    # -- mismatched --
    def mismatches(self) -> list[Problem]:
        """Step records that point at other pixels than the file their journal names."""
        out = []
        for ref in self.refs:
            if ref.kind != STEP_RECORD or ref.task_id is None or ref.step is None:
                continue
            named = self.journal.get((ref.task_id, ref.step), set())
            if len(named) != 1 or ref.target in named:
                continue
            [own] = named
            mine = self.data_dir / ref.target
            theirs = self.data_dir / own
            if not mine.is_file() or not theirs.is_file():
                continue  # reported as dangling
            if not self.pixels.same(mine, theirs):
                out.append(Problem(MISMATCHED, ref, reason=f"its journal names {own}"))
        return out

    def point_back(self, problem: Problem) -> None:
        ref = problem.ref
        assert ref.task_id is not None and ref.step is not None
        [own] = self.journal[(ref.task_id, ref.step)]
        if repoint_record(ref.source, ref.target, own):
            problem.repaired = f"re-pointed to {own}, the file its journal names"


def _fail(problems: list[Problem], reason: str) -> None:
    for problem in problems:
        if not problem.repaired:
            problem.reason = reason


def _rel(path: Path, data_dir: Path) -> str:
    try:
        return path.relative_to(data_dir).as_posix()
    except ValueError:
        return path.as_posix()
