"""pHash deduplication of stored screenshots across the whole short-term store.

Screenshots whose perceptual hashes are within ``max_distance`` bits (Hamming)
collapse into one file: every record that pointed at a member of the group is
re-pointed at the group's oldest file, then the files no record references any
more are deleted. Records are rewritten first (atomically), files removed last,
so a crash at any point leaves every record pointing at a file that exists.
Run it between tasks (the daemon does so when idle), not during one.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from jarvis.fsutil import atomic_write_text
from jarvis.memory.short_term import StepRecord

log = logging.getLogger(__name__)


@dataclass
class DedupReport:
    files_before: int = 0
    files_removed: int = 0
    bytes_freed: int = 0
    records_repointed: int = 0
    groups: list[list[str]] = field(default_factory=list)


def hamming(a: str, b: str) -> int:
    """Bits that differ between two hex hashes (of any equal length)."""
    return (int(a, 16) ^ int(b, 16)).bit_count()


def group_by_hash(hashes: dict[str, str], max_distance: int) -> dict[str, str]:
    """Map each path to the path that represents its group; paths in oldest-first order.

    A path joins the first representative within ``max_distance`` of it, so a
    representative never moves and groups do not chain away from their root.
    """
    leaders: list[tuple[str, int]] = []
    mapping: dict[str, str] = {}
    for path, phash in hashes.items():
        value = int(phash, 16)
        for leader, leader_value in leaders:
            if (value ^ leader_value).bit_count() <= max_distance:
                mapping[path] = leader
                break
        else:
            leaders.append((path, value))
            mapping[path] = path
    return mapping


_SHOT_PATH = re.compile(rb"memory/screenshots/[^\"\s\\]+")


def _load_records(
    steps_dir: Path, unreadable_refs: set[str] | None = None
) -> list[tuple[Path, StepRecord]]:
    """The step records that parse. The screenshot paths that unreadable records
    mention go into ``unreadable_refs``: such files are kept whatever happens."""
    records = []
    for path in sorted(steps_dir.glob("*/*.json")):
        try:
            raw = path.read_bytes()
        except OSError as exc:
            log.warning("screenshot dedup: cannot read record %s: %s", path, exc)
            continue
        try:
            records.append((path, StepRecord.model_validate_json(raw)))
        except ValidationError as exc:
            log.warning("screenshot dedup: leaving unreadable record %s alone: %s", path, exc)
            if unreadable_refs is not None:
                unreadable_refs.update(
                    m.decode("utf-8", "replace") for m in _SHOT_PATH.findall(raw)
                )
    return records


def dedup_screenshots(data_dir: Path, max_distance: int = 4) -> DedupReport:
    """Collapse near-identical screenshots into one file each and re-point the records."""
    data_dir = Path(data_dir)
    shots_dir = data_dir / "memory" / "screenshots"
    records = _load_records(data_dir / "memory" / "steps")
    report = DedupReport()
    if not shots_dir.exists():
        return report
    files = sorted(
        (p for p in shots_dir.glob("*/*") if p.is_file() and not p.name.startswith(".")),
        key=lambda p: (p.parent.name, p.name),
    )
    report.files_before = len(files)
    on_disk = {p.relative_to(data_dir).as_posix() for p in files}

    # the hash of each stored file is the one its records carry
    hashes: dict[str, str] = {}
    for _, record in records:
        shot = record.screenshot
        if shot and shot.path in on_disk and shot.path not in hashes:
            hashes[shot.path] = shot.phash
    ordered = dict(sorted(hashes.items()))
    mapping = group_by_hash(ordered, max_distance)

    for path, record in records:
        shot = record.screenshot
        if shot is None or shot.path not in mapping or mapping[shot.path] == shot.path:
            continue
        shot.path = mapping[shot.path]
        atomic_write_text(path, record.model_dump_json(indent=2))
        report.records_repointed += 1

    still_referenced: set[str] = set()  # by records that parse, and any path a broken one names
    reread = _load_records(data_dir / "memory" / "steps", still_referenced)
    still_referenced |= {r.screenshot.path for _, r in reread if r.screenshot}
    groups: dict[str, list[str]] = {}
    for member, leader in mapping.items():
        groups.setdefault(leader, []).append(member)
    for leader, members in groups.items():
        if len(members) > 1:
            report.groups.append(members)
        for member in members:
            if member == leader or member in still_referenced:
                continue
            target = data_dir / member
            try:
                size = target.stat().st_size
                target.unlink()
            except FileNotFoundError:
                continue
            report.files_removed += 1
            report.bytes_freed += size
    return report
