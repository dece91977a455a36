"""Screenshot dedup across the short-term store: re-points records, frees disk, breaks nothing."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from jarvis.desktop.screen import phash_hex
from jarvis.memory.screenshot_dedup import dedup_screenshots, group_by_hash, hamming
from jarvis.memory.short_term import ShortTermMemory, StepRecord


def picture(variant: int, dot: int = 0) -> Image.Image:
    img = Image.new("RGB", (320, 180), "white")
    draw = ImageDraw.Draw(img)
    if variant == 0:
        draw.rectangle((20, 20, 150, 90), fill="navy")
        draw.ellipse((200, 60, 300, 160), fill="darkred")
    else:
        draw.rectangle((0, 100, 320, 180), fill="black")
        draw.line((0, 0, 320, 100), fill="green", width=12)
    if dot:
        draw.point((dot, dot), fill="gray")  # a tiny change: same picture to the eye
    return img


def png(img: Image.Image) -> bytes:
    out = io.BytesIO()
    img.save(out, "PNG")
    return out.getvalue()


@pytest.mark.parametrize(
    ("a", "b", "bits"), [("ff", "ff", 0), ("ff", "fe", 1), ("0f0f", "f0f0", 16), ("00", "ff", 8)]
)
def test_hamming(a: str, b: str, bits: int) -> None:
    assert hamming(a, b) == bits


def test_grouping_keeps_the_oldest_as_leader() -> None:
    hashes = {"a": "ff00", "b": "ff01", "c": "00ff", "d": "ff03", "e": "00fe"}
    mapping = group_by_hash(hashes, max_distance=2)
    assert mapping == {"a": "a", "b": "a", "c": "c", "d": "a", "e": "c"}
    assert group_by_hash(hashes, max_distance=0) == {k: k for k in hashes}


def test_dedup_repoints_records_and_frees_disk(tmp_path: Path) -> None:
    store = ShortTermMemory(tmp_path)
    start = datetime.now(UTC) - timedelta(minutes=30)
    images = [picture(0), picture(0, dot=5), picture(1), picture(0, dot=9), picture(1, dot=7)]
    refs = []
    for i, img in enumerate(images):
        store._last_shot = (
            None  # store every one: dedup of consecutive equal hashes is tested elsewhere
        )
        refs.append(
            store.save_screenshot(
                png(img), "image/png", phash_hex(img), when=start + timedelta(seconds=i)
            )
        )
    assert hamming(refs[0].phash, refs[1].phash) <= 4
    assert hamming(refs[0].phash, refs[2].phash) > 4
    for i, ref in enumerate(refs):
        store.add_step(
            StepRecord(
                task_id="t", step=i + 1, timestamp=start + timedelta(seconds=i), screenshot=ref
            )
        )
    size_of = {r.path: (tmp_path / r.path).stat().st_size for r in refs}

    report = dedup_screenshots(tmp_path, max_distance=4)

    records = list(store.iter_steps())
    paths = [r.screenshot.path for r in records if r.screenshot]
    assert all((tmp_path / p).is_file() for p in paths)  # no record is broken
    assert set(paths) == {refs[0].path, refs[2].path}
    assert [r.screenshot.phash for r in records] == [r.phash for r in refs]  # own hashes kept
    assert report.records_repointed == 3
    assert report.files_removed == 3
    assert report.bytes_freed == sum(size_of[r.path] for r in (refs[1], refs[3], refs[4]))
    assert len([p for p in (tmp_path / "memory" / "screenshots").rglob("*") if p.is_file()]) == 2
    # running it again changes nothing
    again = dedup_screenshots(tmp_path, max_distance=4)
    assert (again.records_repointed, again.files_removed) == (0, 0)


def test_dedup_leaves_unreadable_records_and_their_files(tmp_path: Path) -> None:
    store = ShortTermMemory(tmp_path)
    img = picture(0)
    ref = store.save_screenshot(png(img), "image/png", phash_hex(img))
    day = ref.path.split("/")[2]
    broken = tmp_path / "memory" / "steps" / day / "broken.json"
    broken.parent.mkdir(parents=True)
    broken.write_text("{half a record")
    report = dedup_screenshots(tmp_path)
    assert report.files_removed == 0
    assert broken.read_text() == "{half a record"
    assert (tmp_path / ref.path).exists()


def test_a_file_a_broken_record_names_is_kept_when_its_group_collapses(tmp_path: Path) -> None:
    store = ShortTermMemory(tmp_path)
    now = datetime.now(UTC)
    refs = []
    for i, img in enumerate([picture(0), picture(0, dot=5)]):  # near-identical pair
        store._last_shot = None
        when = now - timedelta(minutes=5 - i)
        refs.append(store.save_screenshot(png(img), "image/png", phash_hex(img), when=when))
        store.add_step(StepRecord(task_id="t", step=i + 1, timestamp=when, screenshot=refs[-1]))
    day = refs[1].path.split("/")[2]
    broken = tmp_path / "memory" / "steps" / day / "zz-broken.json"
    half = '{"task_id": "t", "step": 3, "screenshot": {"path": "' + refs[1].path + '", "ph'
    broken.write_text(half)  # cut off mid-write, but it names the second file

    report = dedup_screenshots(tmp_path)
    assert report.groups == [[refs[0].path, refs[1].path]]
    assert report.records_repointed == 1  # the readable record of the pair moved over
    assert report.files_removed == 0  # the broken record's file stays
    assert (tmp_path / refs[1].path).exists() and broken.read_text() == half


def test_memory_compress_command_dedups_and_expires(tmp_path: Path, capsys) -> None:
    from jarvis.cli import main

    store = ShortTermMemory(tmp_path)
    now = datetime.now(UTC)
    refs = []
    for i, img in enumerate([picture(0), picture(0, dot=5), picture(1)]):
        store._last_shot = None
        when = now - timedelta(minutes=10 - i)
        refs.append(store.save_screenshot(png(img), "image/png", phash_hex(img), when=when))
        store.add_step(StepRecord(task_id="t", step=i + 1, timestamp=when, screenshot=refs[-1]))
    old = now - timedelta(hours=30)
    store.add_step(StepRecord(task_id="old", step=1, timestamp=old, screenshot=refs[2]))

    assert main(["memory", "compress", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "screenshots: 3 stored; removed 1 near-duplicates" in out
    assert "expired: 1 step records" in out
    records = list(store.iter_steps())
    assert [r.task_id for r in records] == ["t", "t", "t"]
    assert all((tmp_path / r.screenshot.path).is_file() for r in records if r.screenshot)
    assert not (tmp_path / refs[1].path).exists()
