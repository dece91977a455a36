"""Deduplication of stored screenshots across the whole short-term store.

Two screenshots are duplicates only when their pixels are (:mod:`jarvis.memory.pixels`):
a pHash within ``max_distance`` bits (Hamming) makes a pair a candidate, a pixel
comparison confirms it. A file is removed only when every reference to it
(:mod:`jarvis.memory.screenshot_refs`) can be moved to a file with the same pixels, which
means only step records name it: journals are append-only and are never rewritten, so a
file a journal, a run, a memory or an unreadable record names stays. Records are
re-pointed first (atomically), then the data dir is scanned again and only files nothing
names any more are deleted, so a crash at any point leaves every reference resolving.
Run it between tasks (the daemon does so when idle), not during one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from jarvis.fsutil import atomic_write_text
from jarvis.memory.pixels import PixelCache
from jarvis.memory.screenshot_refs import (
    SHOTS,
    STEP_RECORD,
    RecentRuns,
    Reference,
    by_target,
    in_window,
    scan,
    window_start,
)
from jarvis.memory.short_term import StepRecord

log = logging.getLogger(__name__)

COMPARISONS = 4
"""Pixel comparisons per file at most (nearest pHashes first)."""


@dataclass
class DedupReport:
    files_before: int = 0
    files_removed: int = 0
    bytes_freed: int = 0
    records_repointed: int = 0
    groups: list[list[str]] = field(default_factory=list)
    """Each kept file followed by the files merged into it."""
    candidates_rejected: int = 0
    """pHash candidates whose pixels differ (kept apart)."""


def hamming(a: str, b: str) -> int:
    """Bits that differ between two hex hashes (of any equal length)."""
    return (int(a, 16) ^ int(b, 16)).bit_count()


def stored_files(data_dir: Path, since: float | None = None) -> list[Path]:
    """The stored screenshots, oldest first; with ``since``, those of the date folders that
    can hold a picture made then or later (:func:`in_window`)."""
    shots_dir = data_dir / SHOTS
    if not shots_dir.is_dir():
        return []
    days = [d for d in shots_dir.iterdir() if since is None or in_window(d.name, since)]
    return sorted(
        (p for d in days for p in d.glob("*") if p.is_file() and not p.name.startswith(".")),
        key=lambda p: (p.parent.name, p.name),
    )


def _hashes(refs: dict[str, list[Reference]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for target, named in refs.items():
        for ref in named:
            if ref.phash and ref.kind == STEP_RECORD:
                try:
                    out[target] = int(ref.phash, 16)
                except ValueError:
                    continue
                break
    return out


def plan(
    data_dir: Path,
    max_distance: int,
    report: DedupReport,
    since: float,
    recent_runs: RecentRuns | None = None,
) -> dict[str, str]:
    """Which file merges into which: each removable file of the window (from ``since``) to
    an older one of the window with its pixels."""
    files = stored_files(data_dir, since)
    report.files_before = len(files)
    refs = by_target(scan(data_dir, since, recent_runs))
    hashes = _hashes(refs)
    pixels = PixelCache()
    keepers: list[tuple[str, int]] = []
    mapping: dict[str, str] = {}
    for path in files:
        rel = path.relative_to(data_dir).as_posix()
        value = hashes.get(rel)
        if value is None:
            continue  # no record says what it shows: neither merged nor a target
        named = refs.get(rel, [])
        if named and all(r.rewritable for r in named):
            near = sorted(
                (d, keeper)
                for keeper, kv in keepers
                if (d := (value ^ kv).bit_count()) <= max_distance
            )
            for _, keeper in near[:COMPARISONS]:
                if pixels.same(data_dir / keeper, path):
                    mapping[rel] = keeper
                    break
                report.candidates_rejected += 1
        if rel not in mapping:
            keepers.append((rel, value))
    return mapping


def dedup_screenshots(
    data_dir: Path, max_distance: int = 4, recent_runs: RecentRuns | None = None
) -> DedupReport:
    """Merge screenshots with the same pixels into one file each and re-point the records:
    those of the upkeep's window (:func:`window_start`: the step records' days), whose
    every possible reference is read without a scan of the whole history."""
    data_dir = Path(data_dir)
    report = DedupReport()
    since = window_start(data_dir)
    mapping = plan(data_dir, max_distance, report, since, recent_runs)
    if not mapping:
        return report
    for ref in scan(data_dir, since, recent_runs):
        if ref.rewritable and ref.target in mapping:
            report.records_repointed += repoint_record(ref.source, ref.target, mapping[ref.target])

    still_named = {ref.target for ref in scan(data_dir, since, recent_runs)}
    groups: dict[str, list[str]] = {}
    for member, keeper in sorted(mapping.items()):
        groups.setdefault(keeper, [keeper]).append(member)
        if member in still_named:
            continue
        target = data_dir / member
        try:
            size = target.stat().st_size
            target.unlink()
        except FileNotFoundError:
            continue
        report.files_removed += 1
        report.bytes_freed += size
    report.groups = list(groups.values())
    return report


def repoint_record(path: Path, old: str, new: str) -> int:
    """Point the step record at ``path`` from ``old`` to ``new``; 1 if it was rewritten."""
    try:
        record = StepRecord.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as exc:
        log.warning("screenshot dedup: leaving record %s alone: %s", path, exc)
        return 0
    if record.screenshot is None or record.screenshot.path != old:
        return 0
    record.screenshot.path = new
    atomic_write_text(path, record.model_dump_json(indent=2))
    return 1
