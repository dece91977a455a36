"""Screenshot dedup across the short-term store: merges only same pixels, re-points only step
records, never deletes a file anything else names; the upkeep reads its window (the step
records' days and the runs written since), not the whole history."""

from __future__ import annotations

import io
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from jarvis.desktop.screen import phash_hex
from jarvis.events import EventBus, StepFinished, TaskFinished, TaskStarted
from jarvis.memory import screenshot_refs
from jarvis.memory.pixels import same_images, same_pixels
from jarvis.memory.screenshot_dedup import dedup_screenshots, hamming
from jarvis.memory.screenshot_refs import scan
from jarvis.memory.short_term import ScreenshotRef, ShortTermMemory, StepRecord
from jarvis.runs.index import recent_runs
from jarvis.runs.journal import JournalWriter
from jarvis.runs.reader import find_run
from tests.run_folders import write_runs


def picture(variant: int, dot: int = 0, typed: str = "") -> Image.Image:
    img = Image.new("RGB", (320, 180), "white")
    draw = ImageDraw.Draw(img)
    if variant == 0:
        draw.rectangle((20, 20, 150, 90), fill="navy")
        draw.ellipse((200, 60, 300, 160), fill="darkred")
    else:
        draw.rectangle((0, 100, 320, 180), fill="black")
        draw.line((0, 0, 320, 100), fill="green", width=12)
    if dot:
        draw.point((dot, dot), fill="gray")  # one pixel: a pHash twin, but other pixels
    if typed:
        draw.text((24, 100), typed, fill="black")  # a typed line in the empty area
    return img


def png(img: Image.Image) -> bytes:
    out = io.BytesIO()
    img.save(out, "PNG")
    return out.getvalue()


def jpeg(img: Image.Image, quality: int = 85) -> bytes:
    out = io.BytesIO()
    img.save(out, "JPEG", quality=quality)
    return out.getvalue()


def store_all(
    tmp_path: Path, images: list[Image.Image], task: str = "t", encode=png
) -> list[ScreenshotRef]:
    """Each image stored as its own file with a step record naming it, a second apart."""
    store = ShortTermMemory(tmp_path)
    start = datetime.now(UTC) - timedelta(minutes=30)
    refs = []
    for i, img in enumerate(images):
        store._last_shot = None  # every one its own file (capture dedup is tested elsewhere)
        when = start + timedelta(seconds=i)
        media = "image/png" if encode is png else "image/jpeg"
        refs.append(store.save_screenshot(encode(img), media, phash_hex(img), when=when))
        store.add_step(StepRecord(task_id=task, step=i + 1, timestamp=when, screenshot=refs[-1]))
    return refs


def shown(tmp_path: Path, path: str) -> Image.Image:
    with Image.open(tmp_path / path) as opened:
        return opened.convert("RGB")


@pytest.mark.parametrize(
    ("a", "b", "bits"), [("ff", "ff", 0), ("ff", "fe", 1), ("0f0f", "f0f0", 16), ("00", "ff", 8)]
)
def test_hamming(a: str, b: str, bits: int) -> None:
    assert hamming(a, b) == bits


def test_same_pixels_is_tight() -> None:
    empty, typed = picture(0), picture(0, typed="hello world")
    assert hamming(phash_hex(empty), phash_hex(typed)) <= 4  # pHash calls them the same
    assert not same_pixels(png(empty), png(typed))
    assert not same_pixels(png(empty), png(picture(0, dot=5)))
    assert same_pixels(png(empty), png(empty.copy()))
    assert same_pixels(jpeg(empty), jpeg(empty))
    assert same_pixels(png(empty), png(empty.convert("RGBA")))  # same pixels, other bytes
    assert not same_pixels(png(empty), b"not an image")


def test_only_files_with_the_same_pixels_merge(tmp_path: Path) -> None:
    empty = picture(0)
    images = [empty, picture(0, typed="hello world"), empty.copy(), picture(1),
              picture(0, dot=9), picture(1).copy()]  # fmt: skip
    refs = store_all(tmp_path, images)
    size_of = {r.path: (tmp_path / r.path).stat().st_size for r in refs}

    report = dedup_screenshots(tmp_path, max_distance=4)

    records = sorted(ShortTermMemory(tmp_path).iter_steps(), key=lambda r: r.step)
    assert [r.screenshot.path for r in records if r.screenshot] == [
        refs[0].path, refs[1].path, refs[0].path, refs[3].path, refs[4].path, refs[3].path,
    ]  # fmt: skip
    for rec, img in zip(records, images, strict=True):  # every step shows its own screen
        assert rec.screenshot is not None
        assert same_images(shown(tmp_path, rec.screenshot.path), img)
    assert [r.screenshot.phash for r in records if r.screenshot] == [r.phash for r in refs]
    assert report.groups == [[refs[0].path, refs[2].path], [refs[3].path, refs[5].path]]
    assert (report.records_repointed, report.files_removed) == (2, 2)
    assert report.candidates_rejected >= 2  # the typed line and the dot were candidates
    assert report.bytes_freed == size_of[refs[2].path] + size_of[refs[5].path]
    again = dedup_screenshots(tmp_path, max_distance=4)
    assert (again.records_repointed, again.files_removed) == (0, 0)


def journal_line(task: str, step: int, shot: str, seq: int = 1) -> str:
    line = {"seq": seq, "ts": 1.0, "kind": "step_finished", "task_id": task, "step": step,
            "screenshot": shot}  # fmt: skip
    return json.dumps(line) + "\n"


def test_a_file_a_journal_or_a_memory_names_is_never_deleted(tmp_path: Path) -> None:
    empty = picture(0)
    refs = store_all(tmp_path, [empty, empty.copy(), empty.copy(), empty.copy()])
    run = tmp_path / "runs" / "2026-01-01" / "t"
    run.mkdir(parents=True)
    (run / "events.jsonl").write_text(
        journal_line("t", 2, refs[1].path) + '{"seq": 9, "kind": "step_fini', encoding="utf-8"
    )  # a torn last line that names nothing is harmless
    (run / "run.json").write_text(json.dumps({"summary": f"see {refs[3].path}"}))
    long_term = tmp_path / "memory" / "long_term"
    long_term.mkdir(parents=True)
    (long_term / "preferences.json").write_text(json.dumps([{"content": refs[2].path}]))

    report = dedup_screenshots(tmp_path)

    assert report.files_removed == 0 and report.records_repointed == 0
    assert all((tmp_path / r.path).is_file() for r in refs)


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


def test_a_file_a_broken_record_names_is_kept(tmp_path: Path) -> None:
    refs = store_all(tmp_path, [picture(0), picture(0).copy(), picture(0).copy()])
    day = refs[1].path.split("/")[2]
    broken = tmp_path / "memory" / "steps" / day / "zz-broken.json"
    half = '{"task_id": "t", "step": 3, "screenshot": {"path": "' + refs[1].path + '", "ph'
    broken.write_text(half)  # cut off mid-write, but it names the second file

    report = dedup_screenshots(tmp_path)
    assert report.groups == [[refs[0].path, refs[2].path]]  # the second one cannot move
    assert report.records_repointed == 1 and report.files_removed == 1
    assert (tmp_path / refs[1].path).exists() and broken.read_text() == half
    assert not (tmp_path / refs[2].path).exists()


def test_memory_compress_command_dedups_and_expires(tmp_path: Path, capsys) -> None:
    from jarvis.cli import main

    store = ShortTermMemory(tmp_path)
    now = datetime.now(UTC)
    refs = []
    for i, img in enumerate([picture(0), picture(0).copy(), picture(1)]):
        store._last_shot = None
        when = now - timedelta(minutes=10 - i)
        refs.append(store.save_screenshot(png(img), "image/png", phash_hex(img), when=when))
        store.add_step(StepRecord(task_id="t", step=i + 1, timestamp=when, screenshot=refs[-1]))
    old = now - timedelta(hours=30)
    store.add_step(StepRecord(task_id="old", step=1, timestamp=old, screenshot=refs[2]))

    assert main(["memory", "compress", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "screenshots: 3 stored; removed 1 duplicates" in out
    assert "expired: 1 step records" in out
    records = list(store.iter_steps())
    assert [r.task_id for r in records] == ["t", "t", "t"]
    assert all((tmp_path / r.screenshot.path).is_file() for r in records if r.screenshot)
    assert not (tmp_path / refs[1].path).exists()


def old_history(data: Path, runs: int) -> list[Path]:
    """``runs`` finished runs of 2024 (files dated then), each naming its own picture in a
    2024 picture folder through its journal; returns those pictures."""
    made = write_runs(data, runs, per_day=10)
    shots = []
    for run in made:
        day = datetime.fromtimestamp(run.started, UTC).strftime("%Y-%m-%d")
        shot = data / "memory" / "screenshots" / day / f"{run.task_id}.png"
        shot.parent.mkdir(parents=True, exist_ok=True)
        shot.write_bytes(b"old picture")
        rel = shot.relative_to(data).as_posix()
        with (run.folder / "events.jsonl").open("a") as journal:
            journal.write(journal_line(run.task_id, 1, rel, seq=run.last_seq))
        for path in (shot, run.folder / "events.jsonl", run.folder / "run.json"):
            os.utime(path, (run.started + 30, run.started + 30))
        shots.append(shot)
    return shots


def test_upkeep_reads_only_its_window_not_the_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shots = old_history(tmp_path, 300)  # 30 days of 2024
    orphan = shots[7].with_name("orphan.png")  # old, expired, named by nothing
    orphan.write_bytes(b"lost")
    os.utime(orphan, (0, 0))
    refs = store_all(tmp_path, [picture(0), picture(0).copy(), picture(1)])  # now
    read: list[Path] = []
    journal_refs = screenshot_refs.journal_refs
    monkeypatch.setattr(
        screenshot_refs, "journal_refs", lambda path: read.append(path) or journal_refs(path)
    )
    report = dedup_screenshots(tmp_path, recent_runs=recent_runs(tmp_path))
    assert (report.files_before, report.files_removed) == (3, 1)  # the window's pictures
    assert not (tmp_path / refs[1].path).exists()
    expired = ShortTermMemory(tmp_path, recent_runs(tmp_path)).cleanup(hours=12)
    assert expired == {"steps": 0, "screenshots": 0}
    assert read == []  # no journal of the history was read
    assert all(shot.is_file() for shot in shots) and orphan.is_file()  # outside the window
    assert {ref.target for ref in scan(tmp_path)} >= {
        shot.relative_to(tmp_path).as_posix() for shot in shots
    }  # `jarvis memory check` still sees every reference


def test_a_new_run_of_an_old_task_pins_its_picture(tmp_path: Path) -> None:
    old_history(tmp_path, 20)
    assert find_run(tmp_path, "T00003") is not None  # the run index, built before
    refs = store_all(tmp_path, [picture(0), picture(0).copy()])
    bus = EventBus()
    writer = JournalWriter(tmp_path, bus)  # T00003 runs again, in its 2024 folder
    bus.emit(TaskStarted(task_id="T00003", task="task T00003\n\nUpdate: once more"))
    bus.emit(StepFinished(task_id="T00003", step=1, screenshot=refs[1].path))
    bus.emit(TaskFinished(task_id="T00003", status="finished", steps=1))
    writer.close()
    assert find_run(tmp_path, "T00003") == tmp_path / "runs" / "2024-01-01" / "T00003"
    report = dedup_screenshots(tmp_path, recent_runs=recent_runs(tmp_path))
    assert report.files_removed == 0 and (tmp_path / refs[1].path).is_file()
