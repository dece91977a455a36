"""Short-term memory: one JSON record per step, screenshots beside them, pHash-deduplicated.

Layout under the data dir::

    memory/steps/DATE/TIMESTAMP.json
    memory/screenshots/DATE/TIMESTAMP.(jpg|png)

A screenshot that shows the previous one's pixels is not written again; the new record
points at the existing file. An equal pHash only makes it a candidate: the pixels decide
(:mod:`jarvis.memory.pixels`), so a typed line is never lost to the screen before it.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from jarvis.fsutil import atomic_write_bytes, atomic_write_text
from jarvis.memory.pixels import same_pixels
from jarvis.memory.screenshot_refs import RecentRuns, in_window, scan, window_start
from jarvis.redaction import known_secrets, redact
from jarvis.usage import Usage

log = logging.getLogger(__name__)

_EXT = {"image/jpeg": "jpg", "image/png": "png"}


class ScreenshotRef(BaseModel):
    path: str = Field(description="relative to the data dir")
    phash: str


class ToolCallRecord(BaseModel):
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ErrorRecord(BaseModel):
    code: int
    message: str


class ResultRecord(BaseModel):
    ok: bool
    data: Any = None
    error: ErrorRecord | None = None


class StepRecord(BaseModel):
    """One step of one task, as stored on disk (the contract in DESIGN.md section 3)."""

    task_id: str
    step: int = Field(ge=0)
    timestamp: datetime
    screenshot: ScreenshotRef | None = None
    thought: str = ""
    reflection: str = ""
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    results: list[ResultRecord] = Field(default_factory=list)
    timings_ms: dict[str, float] = Field(default_factory=dict)
    tree: str = ""
    """The accessibility tree's text the model got beside the screenshot (the
    ``observation`` setting), or the note that there was none; part of the step's input."""
    usage: Usage = Field(default_factory=Usage)
    result: Literal["success", "failed"] = "success"

    def summary(self) -> str:
        """One compact line for the model's context: what was done and how it went."""
        calls = []
        for call, res in zip(self.tool_calls, self.results, strict=False):
            args = json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":"))
            if len(args) > 160:
                args = args[:157] + "..."
            outcome = "ok" if res.ok else f"error {res.error.code if res.error else '?'}"
            if not res.ok and res.error:
                outcome += f": {res.error.message[:160]}"
            calls.append(f"{call.name}({args}) -> {outcome}")
        thought = " ".join(self.thought.split())
        if len(thought) > 240:
            thought = thought[:237] + "..."
        actions = "; ".join(calls) if calls else "no action"
        return f"step {self.step}: {thought or '(no thought)'} | {actions}"


def _stamp(ts: datetime) -> str:
    return ts.strftime("%H%M%S-%f")


class ShortTermMemory:
    """Step records and screenshots on disk."""

    def __init__(self, data_dir: Path, recent_runs: RecentRuns | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.recent_runs = recent_runs
        self.steps_dir = self.data_dir / "memory" / "steps"
        self.shots_dir = self.data_dir / "memory" / "screenshots"
        self._last_shot: ScreenshotRef | None = None
        self._last_data: bytes | None = None

    # --- screenshots ----------------------------------------------------
    def save_screenshot(
        self, data: bytes, media_type: str, phash: str, when: datetime | None = None
    ) -> ScreenshotRef:
        """Store an encoded screenshot unless it shows the previous one's pixels."""
        last, last_data = self._last_shot, self._last_data
        if (
            last
            and last_data is not None
            and last.phash == phash
            and (self.data_dir / last.path).exists()
            and same_pixels(last_data, data)
        ):
            return last
        ts = when or datetime.now(UTC)
        ext = _EXT.get(media_type, "bin")
        name = f"{_stamp(ts)}-{_safe(phash)[:16]}.{ext}"
        rel = Path("memory") / "screenshots" / ts.strftime("%Y-%m-%d") / name
        atomic_write_bytes(self.data_dir / rel, data)
        self._last_shot = ScreenshotRef(path=rel.as_posix(), phash=phash)
        self._last_data = data
        return self._last_shot

    # --- steps ----------------------------------------------------------
    def add_step(self, record: StepRecord) -> Path:
        ts = record.timestamp
        name = f"{_stamp(ts)}_{_safe(record.task_id)}_{record.step:04d}.json"
        path = self.steps_dir / ts.strftime("%Y-%m-%d") / name
        # a key the model echoed (in its thought or a typed text) must not reach the disk
        atomic_write_text(path, redact(record.model_dump_json(indent=2), known_secrets()))
        return path

    def _paths(self) -> list[Path]:
        if not self.steps_dir.exists():
            return []
        return sorted(self.steps_dir.glob("*/*.json"), key=lambda p: (p.parent.name, p.name))

    def _load(self, path: Path) -> StepRecord | None:
        try:
            return StepRecord.model_validate_json(path.read_bytes())
        except (OSError, ValidationError) as exc:
            log.warning("skipping unreadable step record %s: %s", path, exc)
            return None

    def iter_steps(self, task_id: str | None = None) -> Iterator[StepRecord]:
        for path in self._paths():
            rec = self._load(path)
            if rec and (task_id is None or rec.task_id == task_id):
                yield rec

    def recent(self, n: int, task_id: str | None = None) -> list[StepRecord]:
        """The last ``n`` steps (oldest first), optionally of one task."""
        if n <= 0:
            return []
        out: list[StepRecord] = []
        for path in reversed(self._paths()):
            rec = self._load(path)
            if rec and (task_id is None or rec.task_id == task_id):
                out.append(rec)
                if len(out) >= n:
                    break
        return list(reversed(out))

    def within(self, hours: float = 12.0, now: datetime | None = None) -> list[StepRecord]:
        cutoff = (now or datetime.now(UTC)) - timedelta(hours=hours)
        return [r for r in self.iter_steps() if r.timestamp >= cutoff]

    def cleanup(self, hours: float = 12.0, now: datetime | None = None) -> dict[str, int]:
        """Delete records older than ``hours`` and expired screenshots nothing names (no
        record, journal, run or memory: :mod:`jarvis.memory.screenshot_refs`), looking at
        the pictures of the upkeep's window only (:func:`window_start`, taken before the
        records expire: the pictures they named are in it)."""
        cutoff = (now or datetime.now(UTC)) - timedelta(hours=hours)
        since = window_start(self.data_dir, hours, (now or datetime.now(UTC)).timestamp())
        removed_steps = 0
        for path in self._paths():
            rec = self._load(path)
            if rec is not None and rec.timestamp < cutoff:
                path.unlink(missing_ok=True)
                removed_steps += 1
        referenced = {ref.target for ref in scan(self.data_dir, since, self.recent_runs)}
        if self._last_shot:
            referenced.add(self._last_shot.path)
        removed_shots = 0
        days = [d for d in self.shots_dir.glob("*") if in_window(d.name, since)]
        for shot in (shot for day in days for shot in day.glob("*")):
            rel = shot.relative_to(self.data_dir).as_posix()
            old = datetime.fromtimestamp(shot.stat().st_mtime, UTC) < cutoff
            if old and rel not in referenced and not shot.name.startswith("."):
                shot.unlink(missing_ok=True)
                removed_shots += 1
        for folder in [*self.steps_dir.glob("*"), *days]:
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        return {"steps": removed_steps, "screenshots": removed_shots}


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:64] or "task"
