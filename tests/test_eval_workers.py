"""`jarvis eval SUITE --workers N`: runs at once, each on its own private display (its
setup and its check on that display), the summary a serial run writes, every display
stopped at the end and on Ctrl+C, and a bad N refused in one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.test_eval_starter import run_eval, wrong_suite

VOLATILE = ("run_id", "wall_s", "report")


def same_fields(summary: dict[str, Any]) -> dict[str, Any]:
    """A summary without what differs between two runs of the same suite (times, ids)."""
    runs = [{k: v for k, v in r.items() if k not in VOLATILE} for r in summary["runs"]]
    tasks = [
        {
            **{k: v for k, v in t.items() if k not in ("wall_s", "failures")},
            "failures": [f["reason"] for f in t["failures"]],
        }
        for t in summary["tasks"]
    ]
    total = {k: v for k, v in summary["total"].items() if k != "wall_s"}
    return {**summary, "runs": runs, "tasks": tasks, "total": total, "html": None}


@pytest.mark.parametrize("bad", ["0", "-2", "two", "1.5", ""])
def test_a_bad_number_of_workers_is_refused_in_one_line(tmp_path: Path, bad: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "jarvis",
            "eval",
            "starter",
            "--workers",
            bad,
            "--provider",
            "oracle",
            "--data-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jarvis: --workers must be"), done.stderr
    assert not (tmp_path / "eval").exists()  # nothing ran


def barrier_suite(folder: Path, oracle: list[Any], seconds: float = 60) -> Path:
    """Two tasks whose setups each wait for the other's: they pass only when both run at
    once. Each records the display its setup and its check saw; the check asks that
    display for its size (each task has its own)."""
    folder.mkdir()
    (folder / "seen").mkdir()
    for me, other, screen in (("a", "b", "640x480"), ("b", "a", "800x600")):
        record = f'echo "$DISPLAY $XAUTHORITY" > "$SUITE/seen/{me}.setup"'
        wait = f'until [ -e "$SUITE/seen/{other}.setup" ]; do sleep 0.05; done'
        task = {
            "id": me,
            "task": "nothing to do",
            "screen": screen,
            "setup": [{"run": f"{record}; {wait}", "timeout_s": 60}],
            "budget": {"steps": 5, "seconds": seconds},
            "check": {
                "command": f'echo "$DISPLAY" > "$SUITE/seen/{me}.check"; '
                f'test "$(xdotool getdisplaygeometry)" = "{screen.replace("x", " ")}"'
            },
            "oracle": oracle,
        }
        (folder / f"{me}.yaml").write_text(yaml.safe_dump(task))
    return folder


def seen(folder: Path, name: str) -> list[str]:
    return (folder / "seen" / name).read_text().split()


def assert_gone(display: str, xauthority: str) -> None:
    """The display's server is gone and so is its cookie's folder. The server is the
    process started with that cookie file (``-auth``): its display number is free once
    it ended, and another test on this machine may have a new server there already."""
    servers = subprocess.run(["pgrep", "-af", "Xvfb"], capture_output=True, text=True).stdout
    assert not [line for line in servers.splitlines() if xauthority in line], display
    assert not Path(xauthority).parent.exists(), xauthority


@pytest.mark.slow
def test_two_workers_run_two_tasks_at_once_each_on_its_own_display(tmp_path: Path) -> None:
    suite = barrier_suite(tmp_path / "suite", [[{"finished": {"summary": "done"}}]])
    code, summary = run_eval(suite, tmp_path / "data", "--provider", "oracle", "--workers", "2")
    assert code == 0, summary["runs"]
    assert [r["task"] for r in summary["runs"]] == ["a", "b"]
    a_display, a_cookie = seen(suite, "a.setup")
    b_display, b_cookie = seen(suite, "b.setup")
    assert a_display != b_display and a_cookie != b_cookie
    assert seen(suite, "a.check") == [a_display] and seen(suite, "b.check") == [b_display]
    assert os.environ.get("DISPLAY") not in (a_display, b_display)
    for display, cookie in ((a_display, a_cookie), (b_display, b_cookie)):
        assert_gone(display, cookie)
    for run in summary["runs"]:
        assert Path(run["report"]).is_file() and run["status"] == "finished"


@pytest.mark.slow
def test_with_two_workers_the_summary_is_the_serial_one(tmp_path: Path) -> None:
    suite = wrong_suite(tmp_path / "wrong")
    serial_code, serial = run_eval(suite, tmp_path / "serial", "--provider", "oracle")
    code, parallel = run_eval(suite, tmp_path / "par", "--provider", "oracle", "--workers", "2")
    assert serial_code == code == 1
    assert same_fields(parallel) == same_fields(serial)
    assert parallel["total"]["successes"] == 1  # the two wrong oracles fail in both
    assert all(Path(r["report"]).is_file() for r in parallel["runs"])


@pytest.mark.slow
def test_ctrl_c_stops_the_runs_and_every_display(tmp_path: Path) -> None:
    waits = [[{"wait": {"ms": 10000}}]] * 4
    suite = barrier_suite(tmp_path / "suite", waits, seconds=120)
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "XAUTHORITY")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jarvis",
            "eval",
            str(suite),
            "--provider",
            "oracle",
            "--workers",
            "2",
            "--data-dir",
            str(tmp_path / "data"),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        journals = tmp_path / "data" / "runs"
        while len(list(journals.glob("*/*/events.jsonl"))) < 2:  # both agents at work
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert out == ""
    assert err.strip().splitlines()[-1] == "jarvis: eval interrupted; its displays are stopped"
    assert "Traceback" not in err
    for name in ("a.setup", "b.setup"):
        assert_gone(*seen(suite, name))
