"""The loop's short-term writes happen on the memory's writer thread, in order, and are
all on disk once flushed; a failed write is said in the log, not raised into the loop."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

import pytest
from PIL import Image

from jarvis.agent.hippocampus import Hippocampus
from jarvis.desktop.screen import Observation, encode_image, phash_hex
from jarvis.geometry import Size
from jarvis.memory.short_term import StepRecord


def observation(colour: str) -> Observation:
    image = Image.new("RGB", (64, 36), colour)
    size = Size(64, 36)
    return Observation(
        image=image,
        data=encode_image(image, "jpeg"),
        media_type="image/jpeg",
        phash=phash_hex(image),
        model_size=size,
        screen_size=size,
        origin=(0, 0),
    )


def test_screenshot_then_record_in_order_and_on_disk_after_flush(tmp_path: Path) -> None:
    memory = Hippocampus(tmp_path)
    stored = memory.store_screenshot(observation("red"))
    ref = stored.result(timeout=30)  # the future gives the reference once written
    assert (tmp_path / ref.path).read_bytes() == observation("red").data
    when = datetime.now(UTC)
    for step in (1, 2, 3):
        memory.add_step(StepRecord(task_id="t1", step=step, timestamp=when, screenshot=ref))
    memory.flush()
    files = sorted((tmp_path / "memory" / "steps").glob("*/*.json"))
    assert [StepRecord.model_validate_json(f.read_bytes()).step for f in files] == [1, 2, 3]
    assert [r.step for r in memory.recent(5, "t1")] == [1, 2, 3]


def test_a_failed_record_write_is_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    memory = Hippocampus(tmp_path)
    steps = tmp_path / "memory" / "steps"
    steps.parent.mkdir(parents=True, exist_ok=True)
    steps.write_text("a file where the steps' folder should be")
    memory.add_step(StepRecord(task_id="t1", step=1, timestamp=datetime.now(UTC)))
    with caplog.at_level(logging.WARNING, logger="jarvis.agent.hippocampus"):
        memory.flush()
    assert "short-term memory write failed" in caplog.text
