"""Memory upkeep in one call: the forgetting curve and merging for long-term memory,
pHash dedup of stored screenshots, and removal of expired step records.

Used by ``jarvis memory compress`` and, when idle, by ``jarvis serve``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from jarvis.config import Settings
from jarvis.memory.compressor import CompressionReport, compress
from jarvis.memory.long_term import LongTermMemory
from jarvis.memory.screenshot_dedup import DedupReport, dedup_screenshots
from jarvis.memory.screenshot_refs import RecentRuns
from jarvis.memory.short_term import ShortTermMemory

log = logging.getLogger(__name__)

SETTINGS_FOR_COMPRESS = {
    "threshold": "memory_forget_threshold",
    "merge_cosine": "memory_merge_cosine",
    "base_days": "memory_strength_days",
}


@dataclass
class UpkeepReport:
    memories: CompressionReport
    screenshots: DedupReport | None
    expired: dict[str, int] | None


def compress_options(settings: Settings, **given: Any) -> dict[str, Any]:
    """Compressor options: explicit values first, then settings, else the defaults."""
    options = {k: v for k, v in given.items() if v is not None}
    for name, setting in SETTINGS_FOR_COMPRESS.items():
        value = getattr(settings, setting, None)
        if name not in options and value is not None:
            options[name] = value
    return options


def upkeep(
    settings: Settings,
    memory: LongTermMemory,
    dry_run: bool = False,
    recent_runs: RecentRuns | None = None,
    **options: Any,
) -> UpkeepReport:
    """Compress long-term memory; unless ``dry_run``, also dedup screenshots and expire steps."""
    report = compress(memory, dry_run=dry_run, **compress_options(settings, **options))
    if dry_run:
        return UpkeepReport(report, None, None)
    shots = dedup_screenshots(settings.data_dir, settings.screenshot_dedup_distance, recent_runs)
    expired = ShortTermMemory(settings.data_dir, recent_runs).cleanup(settings.short_term_hours)
    log.info(
        "memory upkeep: %d screenshots stored, %d duplicates removed, %d step records "
        "re-pointed, %d pHash look-alikes kept apart; %d step records expired",
        shots.files_before,
        shots.files_removed,
        shots.records_repointed,
        shots.candidates_rejected,
        expired["steps"],
    )
    return UpkeepReport(report, shots, expired)
