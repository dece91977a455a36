"""`jarvis eval SUITE --sandbox wayland`: each task on its own private headless sway (run
as the unprivileged user), its setup's app a real Wayland terminal (foot) waited for by
its app id through sway's tree, the oracle's clicks and text delivered by the wlroots
desktop, and the checks reading the file and the window titles there. A wrong oracle
fails with the check's reason. No X display is involved."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.wayland import needs_sway

pytestmark = [needs_sway, pytest.mark.slow]

EVAL = (sys.executable, "-m", "jarvis", "eval")
WAYLAND = ("--sandbox", "wayland", "--data-dir")
TEXT = "yz@#/-{} ä€ß Привет 中文 🎉"
NOTE = {
    "task": "Write the note in the terminal.",
    "screen": "1024x640",
    "setup": [
        {
            "run": 'foot -a jarvis-eval-note sh -c "stty -echo; cat > $WORK/note.txt"',
            "background": True,
            "wait_window": "jarvis-eval-note",
        }
    ],
    "budget": {"steps": 4, "seconds": 90},
    "check": {
        "python": "jarvis.eval.checks:file_equals",
        "args": {"path": "note.txt", "text": TEXT + "\n", "strip": False},
        "wait_s": 5,
    },
    "oracle": [
        [{"click": {"x": 500, "y": 300}}, {"type": {"text": TEXT + "\n"}}],
        [{"finished": {"summary": "typed"}}],
    ],
}
TITLE = {
    "task": "Look at the window.",
    "screen": "800x600",
    "setup": [
        {
            "run": 'foot -a jarvis-eval-title -T "Jarvis title check" sleep 60',
            "background": True,
            "wait_window": "Jarvis title",
        }
    ],
    "budget": {"steps": 2, "seconds": 60},
    "check": {"python": "jarvis.eval.checks:window_title", "args": {"contains": "title check"}},
    "oracle": [[{"finished": {"summary": "seen"}}]],
}


def test_eval_runs_each_task_on_a_private_sway(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    wrong = {**NOTE, "oracle": [[{"type": {"text": "wrong\n"}}], [{"finished": {"summary": "x"}}]]}
    for name, task in (("note", NOTE), ("title", TITLE), ("wrong", wrong)):
        (suite / f"{name}.yaml").write_text(yaml.safe_dump(task, allow_unicode=True))
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "XAUTHORITY")}
    env.pop("WAYLAND_DISPLAY", None)
    done = subprocess.run(
        [*EVAL, str(suite), "--provider", "oracle", *WAYLAND, str(tmp_path / "data")],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, (done.stdout, done.stderr[-3000:])
    summary = json.loads(lines[0])
    runs = {r["task"]: r for r in summary["runs"]}
    assert runs["note"]["success"], runs["note"]["reason"]
    assert runs["title"]["success"], runs["title"]["reason"]
    assert not runs["wrong"]["success"]
    assert "note.txt holds 'wrong\\n'" in runs["wrong"]["reason"]
    assert done.returncode == 1


def test_the_fleet_is_refused_with_a_wayland_sandbox(tmp_path: Path) -> None:
    done = subprocess.run(
        [*EVAL, "starter", "--fleet", "redis://127.0.0.1:1/0", *WAYLAND, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "jarvis: --sandbox wayland runs here; the fleet's workers have their own displays"
    ]
