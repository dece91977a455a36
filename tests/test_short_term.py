"""Step records and screenshots on disk."""

from __future__ import annotations

import io
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from jarvis.desktop.screen import phash_hex
from jarvis.memory.short_term import (
    ResultRecord,
    ShortTermMemory,
    StepRecord,
    ToolCallRecord,
)


def record(task: str, step: int, when: datetime, shot=None) -> StepRecord:
    return StepRecord(
        task_id=task,
        step=step,
        timestamp=when,
        screenshot=shot,
        thought=f"thought {step}",
        tool_calls=[ToolCallRecord(id="c", name="click", arguments={"x": 1, "y": 2})],
        results=[ResultRecord(ok=True, data={"x": 1})],
        timings_ms={"capture": 1.0, "model": 2.0, "act": 3.0, "settle": 4.0},
    )


def screen(typed: str = "") -> tuple[bytes, str]:
    """An editor-like screen as JPEG bytes and its pHash, with ``typed`` on its first line."""
    img = Image.new("RGB", (640, 400), "white")
    draw = ImageDraw.Draw(img)
    draw.rectangle((0, 0, 640, 30), fill="navy")  # a title bar
    draw.rectangle((0, 30, 120, 400), fill=(220, 220, 220))  # a side panel
    draw.rectangle((400, 200, 620, 380), fill="darkred")
    draw.text((140, 50), typed, fill="black")
    out = io.BytesIO()
    img.save(out, "JPEG", quality=85)
    return out.getvalue(), phash_hex(img)


def test_a_screenshot_with_the_last_ones_pixels_is_stored_once(tmp_path: Path) -> None:
    mem = ShortTermMemory(tmp_path)
    empty, empty_hash = screen()
    typed, typed_hash = screen("hello world")
    assert typed_hash == empty_hash  # the pHash cannot tell them apart...
    a = mem.save_screenshot(empty, "image/jpeg", empty_hash)
    b = mem.save_screenshot(screen()[0], "image/jpeg", empty_hash)
    c = mem.save_screenshot(typed, "image/jpeg", typed_hash)  # ...the pixels can
    d = mem.save_screenshot(b"\xff\xd8 not a picture", "image/jpeg", typed_hash)
    assert a.path == b.path
    assert len({a.path, c.path, d.path}) == 3
    files = list((tmp_path / "memory" / "screenshots").rglob("*.jpg"))
    assert len(files) == 3
    assert (tmp_path / a.path).read_bytes() == empty
    assert (tmp_path / c.path).read_bytes() == typed


def test_records_round_trip_and_layout(tmp_path: Path) -> None:
    mem = ShortTermMemory(tmp_path)
    now = datetime.now(UTC)
    path = mem.add_step(record("t1", 1, now))
    assert path.parent.name == now.strftime("%Y-%m-%d")
    assert path.parent.parent == tmp_path / "memory" / "steps"
    loaded = StepRecord.model_validate_json(path.read_text())
    assert loaded == record("t1", 1, now)


def test_recent_and_within(tmp_path: Path) -> None:
    mem = ShortTermMemory(tmp_path)
    now = datetime.now(UTC)
    for i in range(5):
        mem.add_step(record("a" if i % 2 else "b", i, now - timedelta(hours=4 - i)))
    mem.add_step(record("old", 0, now - timedelta(hours=20)))
    assert [r.step for r in mem.recent(2)] == [3, 4]
    assert [r.step for r in mem.recent(10, task_id="a")] == [1, 3]
    assert {r.task_id for r in mem.within(12, now=now)} == {"a", "b"}
    assert len(mem.within(2.5, now=now)) == 3


def test_cleanup_keeps_referenced_screenshots(tmp_path: Path) -> None:
    mem = ShortTermMemory(tmp_path)
    now = datetime.now(UTC)
    old_time = now - timedelta(hours=30)
    shared = mem.save_screenshot(b"shared", "image/png", "aa", when=old_time)
    lonely = mem.save_screenshot(b"lonely", "image/png", "bb", when=old_time)
    fresh = mem.save_screenshot(b"fresh", "image/png", "cc", when=now)
    for ref in (shared, lonely):
        os.utime(tmp_path / ref.path, (old_time.timestamp(), old_time.timestamp()))
    mem.add_step(record("t", 1, old_time, shot=lonely))
    mem.add_step(record("t", 2, old_time, shot=shared))
    mem.add_step(record("t", 3, now, shot=shared))
    mem.add_step(record("t", 4, now, shot=fresh))
    removed = mem.cleanup(hours=12, now=now)
    assert removed == {"steps": 2, "screenshots": 1}
    assert (tmp_path / shared.path).exists()
    assert (tmp_path / fresh.path).exists()
    assert not (tmp_path / lonely.path).exists()
    assert [r.step for r in mem.iter_steps()] == [3, 4]


def test_unreadable_record_is_skipped(tmp_path: Path) -> None:
    mem = ShortTermMemory(tmp_path)
    now = datetime.now(UTC)
    mem.add_step(record("t", 1, now))
    bad = tmp_path / "memory" / "steps" / now.strftime("%Y-%m-%d") / "zzz.json"
    bad.write_text("{not json")
    assert [r.step for r in mem.recent(5)] == [1]
    assert bad.exists()


def test_atomic_writes_keep_or_give_a_normal_mode(tmp_path: Path) -> None:
    import stat

    from jarvis.fsutil import atomic_write_text

    fresh = tmp_path / "fresh.md"
    atomic_write_text(fresh, "x")
    assert stat.S_IMODE(fresh.stat().st_mode) & 0o044  # readable by others, as open() would do
    shared = tmp_path / "shared.md"
    shared.write_text("old")
    shared.chmod(0o664)
    atomic_write_text(shared, "new")
    assert stat.S_IMODE(shared.stat().st_mode) == 0o664
    assert shared.read_text() == "new"


def test_a_key_the_model_echoes_never_reaches_a_step_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-ant-sentinel-0123456789"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    mem = ShortTermMemory(tmp_path)
    step = record("t1", 1, datetime.now(UTC))
    step.thought = f"my key is {key}"
    step.tool_calls = [ToolCallRecord(id="c", name="type", arguments={"text": key})]
    path = mem.add_step(step)
    text = path.read_text()
    assert key not in text
    assert text.count("[REDACTED]") == 2
    assert [s.thought for s in mem.iter_steps("t1")] == ["my key is [REDACTED]"]
