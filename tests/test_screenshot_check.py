"""`jarvis memory check`: references to pictures that are gone, found and repaired from the
copies a data dir keeps (the run's step pictures, the store's screenshots)."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw

from jarvis.cli import main
from jarvis.desktop.screen import phash_hex
from jarvis.memory.short_term import ScreenshotRef, ShortTermMemory, StepRecord

RUN = Path("runs") / "2026-01-01" / "T001"


def screen(typed: str = "") -> tuple[bytes, str]:
    img = Image.new("RGB", (640, 400), "white")
    draw = ImageDraw.Draw(img)
    draw.rectangle((0, 0, 640, 30), fill="navy")
    draw.rectangle((0, 30, 120, 400), fill=(220, 220, 220))
    draw.rectangle((400, 200, 620, 380), fill="darkred")
    draw.text((140, 50), typed, fill="black")
    out = io.BytesIO()
    img.save(out, "JPEG", quality=85)
    return out.getvalue(), phash_hex(img)


def run_step(data: Path, run: Path, task: str, step: int, before: bytes, after: bool) -> None:
    folder = data / run / "steps" / f"{step:04d}"
    folder.mkdir(parents=True)
    (folder / "before.jpg").write_bytes(before)
    step_file = {"task_id": task, "step": step, "started": 1.0, "before": "before.jpg",
                 "after": "after.jpg" if after else None, "scale": [1.0, 1.0],
                 "monitor": {"screen": [640, 400], "model": [640, 400]}}  # fmt: skip
    (folder / "step.json").write_text(json.dumps(step_file))


def event(seq: int, kind: str, **fields: Any) -> str:
    return json.dumps({"seq": seq, "ts": 1.0, "kind": kind, "task_id": "T001", **fields}) + "\n"


@pytest.fixture
def damaged(tmp_path: Path) -> dict[str, Any]:
    """What the old pHash-only dedup left behind, and more.

    T001: step 1 saw the empty editor (A), step 2 the typed line (B). The old dedup merged
    B into A: step 2's record points at A, B is deleted, the journal still names B. Step 1's
    after.jpg is gone too, and so is the picture of an approval. T002 (no journal): its
    record names C, a deleted file with A's pixels, and the run kept a copy.
    """
    store = ShortTermMemory(tmp_path)
    (empty, empty_hash), (typed, typed_hash) = screen(), screen("hello world")
    assert empty_hash == typed_hash  # what made the old dedup merge them
    when = datetime.now(UTC) - timedelta(minutes=5)
    a = store.save_screenshot(empty, "image/jpeg", empty_hash, when=when)
    b = store.save_screenshot(typed, "image/jpeg", typed_hash, when=when + timedelta(seconds=1))
    c = ScreenshotRef(path=a.path.replace(".jpg", "-c.jpg"), phash=empty_hash)
    for step, ref in ((1, a), (2, a)):  # step 2 re-pointed to A by the old dedup
        store.add_step(StepRecord(task_id="T001", step=step, timestamp=when, screenshot=ref))
    store.add_step(StepRecord(task_id="T002", step=1, timestamp=when, screenshot=c))
    (tmp_path / b.path).unlink()
    run_step(tmp_path, RUN, "T001", 1, empty, after=True)
    run_step(tmp_path, RUN, "T001", 2, typed, after=False)
    run_step(tmp_path, Path("runs/2026-01-01/T002"), "T002", 1, empty, after=False)
    (tmp_path / RUN / "events.jsonl").write_text(
        event(1, "step_finished", step=1, screenshot=a.path)
        + event(2, "approval_requested", approval_id="ap-1", screenshot="approvals/ap-1.jpg")
        + event(3, "step_finished", step=2, screenshot=b.path)
    )
    return {"a": a.path, "b": b.path, "c": c.path, "empty": empty, "typed": typed}


def check(data: Path, capsys: Any, *flags: str) -> tuple[int, str]:
    code = main(["memory", "check", "--data-dir", str(data), *flags])
    return code, capsys.readouterr().out


def contents(data: Path) -> dict[str, bytes]:
    """Every file but the log, with its bytes."""
    files = (p for p in data.rglob("*") if p.is_file() and p.parts[len(data.parts)] != "logs")
    return {p.relative_to(data).as_posix(): p.read_bytes() for p in files}


def record_of(data: Path, task: str, step: int) -> StepRecord:
    [found] = [r for r in ShortTermMemory(data).iter_steps(task) if r.step == step]
    return found


def test_check_reports_without_changing_anything(tmp_path: Path, damaged: dict, capsys) -> None:
    before = contents(tmp_path)
    code, out = check(tmp_path, capsys)
    assert code == 1
    lines = out.splitlines()
    assert lines[-1] == (
        "screenshots: 10 references; 4 dangling, 0 pointing at another picture; repaired 0, left 4"
    )
    assert f"dangling: journal {RUN.as_posix()}/events.jsonl step 2 names {damaged['b']}" in out
    assert "names approvals/ap-1.jpg" in out and f"{RUN.as_posix()}/steps/0001/after.jpg" in out
    assert contents(tmp_path) == before

    code, out = check(tmp_path, capsys, "--json")
    report = json.loads(out)
    assert (code, report["dangling"], report["left"]) == (1, 4, 4)
    [from_journal] = [p for p in report["problems"] if p["target"] == damaged["b"]]
    assert (from_journal["kind"], from_journal["step"]) == ("journal", 2)
    assert from_journal["source"] == f"{RUN.as_posix()}/events.jsonl"
    assert {p["target"] for p in report["problems"]} == {
        damaged["b"],
        damaged["c"],
        "approvals/ap-1.jpg",
        f"{RUN.as_posix()}/steps/0001/after.jpg",
    }


def test_repair_restores_repoints_and_reports_what_it_cannot(
    tmp_path: Path, damaged: dict, capsys
) -> None:
    code, out = check(tmp_path, capsys, "--repair")
    assert code == 1, out  # the approval's picture has no copy
    assert out.splitlines()[-1] == (
        "screenshots: 10 references; 4 dangling, 1 pointing at another picture; repaired 4, left 1"
    )
    assert "names approvals/ap-1.jpg (no other copy of it is kept)" in out
    # the journal's file is back, from the run's copy of step 2's screen
    assert (tmp_path / damaged["b"]).read_bytes() == damaged["typed"]
    # step 2's record shows its own screen again: the typed line
    assert record_of(tmp_path, "T001", 2).screenshot.path == damaged["b"]
    assert record_of(tmp_path, "T001", 1).screenshot.path == damaged["a"]
    # T002's record names only a missing file with A's pixels: re-pointed to A, nothing written
    assert record_of(tmp_path, "T002", 1).screenshot.path == damaged["a"]
    assert not (tmp_path / damaged["c"]).exists()
    # step 1's after picture is step 2's before picture
    assert (tmp_path / RUN / "steps/0001/after.jpg").read_bytes() == damaged["typed"]

    code, out = check(tmp_path, capsys, "--json")
    report = json.loads(out)
    assert (code, report["dangling"], report["mismatched"], report["left"]) == (1, 1, 0, 1)
    [left] = report["problems"]
    assert (left["target"], left["reason"]) == ("approvals/ap-1.jpg", "missing")

    (tmp_path / "approvals").mkdir()
    (tmp_path / "approvals" / "ap-1.jpg").write_bytes(damaged["empty"])
    code, out = check(tmp_path, capsys)
    assert code == 0 and out.strip().endswith("repaired 0, left 0")


def test_a_data_dir_without_pictures_is_fine(tmp_path: Path, capsys) -> None:
    code, out = check(tmp_path, capsys, "--repair")
    assert code == 0
    assert out.strip() == (
        "screenshots: 0 references; 0 dangling, 0 pointing at another picture; repaired 0, left 0"
    )
