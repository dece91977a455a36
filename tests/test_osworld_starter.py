"""`jarvis eval` on OSWorld tasks with real LibreOffice, GIMP, Thunderbird and xterm under
Xvfb: the starter set's right scripted solutions score 1 and its wrong ones 0 through
OSWorld's own metric functions, `--workers 2` gives what a serial run gives, a missing
download is not run (never 0), and a real OSWorld task file of every supported domain
runs its setup from a cache the test fills."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import docx
import openpyxl
import pptx
import pytest
from PIL import Image

from jarvis.eval.osworld.cache import cache_key
from jarvis.eval.osworld.tasks import load_tasks
from tests.osworld_tasks import REAL, needs_real_tasks

pytestmark = pytest.mark.slow

STARTER_DOMAINS = {
    "libreoffice_calc": 2,
    "libreoffice_writer": 1,
    "libreoffice_impress": 1,
    "gimp": 1,
    "os": 1,
    "thunderbird": 1,
}


def run_eval(target: str | Path, data_dir: Path, *extra: str) -> tuple[int, dict]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "XAUTHORITY")}
    command = [sys.executable, "-m", "jarvis", "eval", str(target), "--data-dir", str(data_dir)]
    done = subprocess.run(
        [*command, "--provider", "oracle", "--out", str(data_dir / "out"), *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, (done.stdout, done.stderr)  # one JSON summary, nothing else
    return done.returncode, json.loads(lines[0])


def scores(summary: dict) -> dict[str, tuple[str, float | None]]:
    return {t["example_id"]: (t["status"], t["score"]) for t in summary["tasks"]}


def test_right_solutions_score_1_on_every_domain_with_two_workers(tmp_path: Path) -> None:
    code, summary = run_eval("osworld_starter", tmp_path / "data", "--workers", "2")
    assert set(scores(summary).values()) == {("scored", 1.0)}, summary["tasks"]
    assert code == 0
    assert {d: v["runs"] for d, v in summary["domains"].items()} == STARTER_DOMAINS
    assert all(v["success_rate_all"] == 1.0 for v in summary["domains"].values())
    total = summary["total"]
    assert (total["runs"], total["scored"], total["success_rate_scored"]) == (7, 7, 1.0)
    rows = json.loads(Path(summary["results"]).read_text())
    assert {(r["domain"], r["example_id"], r["score"]) for r in rows} >= {
        ("gimp", "starter-gimp-export", 1.0),
        ("thunderbird", "starter-thunderbird-save", 1.0),
    }
    assert all(r["steps"] >= 1 and r["wall_s"] > 0 and Path(r["report"]).is_file() for r in rows)


def test_wrong_solutions_score_0(tmp_path: Path) -> None:
    code, summary = run_eval(
        "osworld_starter", tmp_path / "data", "--workers", "2", "--solution", "wrong"
    )
    assert set(scores(summary).values()) == {("scored", 0.0)}, summary["tasks"]
    assert code == 1
    assert summary["total"]["success_rate_all"] == 0.0


def test_two_workers_give_what_a_serial_run_gives(tmp_path: Path) -> None:
    only = ["--only", "starter-os-archive", "--only", "starter-calc-infeasible"]
    _, serial = run_eval("osworld_starter", tmp_path / "a", *only, "--solution", "wrong")
    _, threads = run_eval(
        "osworld_starter", tmp_path / "b", *only, "--solution", "wrong", "--workers", "2"
    )
    assert scores(serial) == scores(threads)
    assert serial["domains"].keys() == threads["domains"].keys() == {"libreoffice_calc", "os"}


def _made(name: str) -> bytes:
    """A file of the kind ``name`` says, for the cache (the real one is on a drive)."""
    out = io.BytesIO()
    suffix = Path(name).suffix
    if suffix == ".xlsx":
        book = openpyxl.Workbook()
        book.active["A1"] = "level"
        book.save(out)
    elif suffix == ".docx":
        document = docx.Document()
        document.add_paragraph("One.")
        document.add_paragraph("Two.")
        document.save(out)
    elif suffix == ".pptx":
        deck = pptx.Presentation()
        deck.slides.add_slide(deck.slide_layouts[5]).shapes.title.text = "Slide"
        deck.save(out)
    elif suffix == ".jpg":
        Image.new("RGB", (64, 48), (90, 140, 200)).save(out, "JPEG")
    elif name.endswith(".tar.gz"):
        with tarfile.open(fileobj=out, mode="w:gz") as tar:
            info = tarfile.TarInfo(".thunderbird/profiles.ini")
            body = b"[General]\nStartWithLastProfile=1\n"
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    else:
        raise AssertionError(f"no maker for {name}")
    return out.getvalue()


def _fill(cache: Path) -> None:
    cache.mkdir()
    for task in load_tasks(REAL):
        steps = [*task.config, *task.evaluator.get("postconfig", [])]
        for step in steps:
            for entry in step.get("parameters", {}).get("files", []):
                (cache / cache_key(entry["url"])).write_bytes(_made(entry["path"]))
        expected = task.evaluator.get("expected")
        if isinstance(expected, dict) and expected.get("type") == "cloud_file":
            (cache / cache_key(expected["path"])).write_bytes(_made(expected["dest"]))


@needs_real_tasks
def test_real_osworld_tasks_run_their_setup_from_a_filled_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _fill(cache)
    _, summary = run_eval(
        REAL, tmp_path / "data", "--cache", str(cache), "--workers", "2", "--max-steps", "1"
    )
    got = {t["domain"]: (t["status"], t["not_run"]) for t in summary["tasks"]}
    assert got == {
        "gimp": ("scored", ""),
        "libreoffice_calc": ("scored", ""),
        "libreoffice_impress": ("scored", ""),
        "libreoffice_writer": ("scored", ""),
        "os": ("scored", ""),
        "thunderbird": ("scored", ""),  # its close_window runs here
    }
    assert summary["max_steps"] == 1
    rows = json.loads(Path(summary["results"]).read_text())
    assert all(r["steps"] <= 1 for r in rows)  # --max-steps reaches every run's agent


MISSING = {
    "id": "missing-download",
    "snapshot": "libreoffice_calc",
    "instruction": "Fill the blank cells of the sheet.",
    "source": "written for this test",
    "config": [
        {
            "type": "download",
            "parameters": {
                "files": [{"url": "https://example.org/missing.xlsx", "path": "/home/user/a.xlsx"}]
            },
        },
        {"type": "open", "parameters": {"path": "/home/user/a.xlsx"}},
    ],
    "related_apps": ["libreoffice_calc"],
    "evaluator": {
        "func": "compare_table",
        "result": {"type": "vm_file", "path": "/home/user/a.xlsx", "dest": "a.xlsx"},
        "expected": {"type": "cloud_file", "path": "https://example.org/e.xlsx", "dest": "e.xlsx"},
    },
}


def test_a_missing_download_is_not_run_never_0(tmp_path: Path) -> None:
    task = tmp_path / "tasks" / "libreoffice_calc" / "missing-download.json"
    task.parent.mkdir(parents=True)
    task.write_text(json.dumps(MISSING))
    [url] = load_tasks(task)[0].urls()[:1]
    (tmp_path / "empty").mkdir()
    code, summary = run_eval(task, tmp_path / "data", "--cache", str(tmp_path / "empty"))
    [row] = summary["tasks"]
    assert (row["status"], row["score"], row["not_run"]) == ("not run", None, f"missing file {url}")
    calc = summary["domains"]["libreoffice_calc"]
    assert (calc["scored"], calc["not_run"], calc["success_rate_scored"]) == (0, 1, 0.0)
    assert code == 1
