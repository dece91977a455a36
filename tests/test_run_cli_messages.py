"""`jarvis report --open` and `jarvis replay` as a person runs them (subprocess): with no web
browser the report says so instead of pretending to open it; a run with no actions replays
as "nothing to repeat", not as "0/0 actions repeated; done"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jarvis.events import EventBus, TaskFinished, TaskStarted
from jarvis.runs.journal import JournalWriter
from tests.xserver import Xvfb


def record_a_run_without_actions(data_dir: Path) -> None:
    """The real journal writer, for a task that ended before it did anything."""
    bus = EventBus()
    writer = JournalWriter(data_dir, bus, channel="cli")
    bus.emit(TaskStarted(task_id="T001", task="say hello"))
    bus.emit(TaskFinished(task_id="T001", status="finished", summary="hello"))
    writer.close()


def jarvis(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jarvis", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def base_env(data_dir: Path) -> dict[str, str]:
    keep = ("PYTHONPATH", "HOME", "LANG", "ANONYMIZED_TELEMETRY", "HF_HUB_OFFLINE")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path.cwd()), env.get("PYTHONPATH")]))
    return {**env, "JARVIS_DATA_DIR": str(data_dir)}


def test_report_open_without_a_browser_says_so(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    record_a_run_without_actions(data_dir)
    empty = tmp_path / "bin"  # no xdg-open, no browser on PATH, no display, no $BROWSER
    empty.mkdir()
    env = {**base_env(data_dir), "PATH": str(empty)}
    done = jarvis(["report", "T001", "--open"], env)
    assert done.returncode == 0, done.stderr
    report = Path(done.stdout.strip())
    assert report.name == "report.html" and report.is_file()
    assert done.stderr.strip() == (
        f"jarvis: no web browser found to open it; open {report} yourself"
    )


def test_report_open_with_a_browser_opens_it(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    record_a_run_without_actions(data_dir)
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "bin" / "fake-browser"
    browser.parent.mkdir()
    browser.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    browser.chmod(0o755)
    env = {**base_env(data_dir), "PATH": f"{browser.parent}:/usr/bin:/bin", "BROWSER": str(browser)}
    done = jarvis(["report", "T001", "--open"], env)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    report = Path(done.stdout.strip())
    assert opened.read_text().strip() == report.resolve().as_uri()


@pytest.mark.usefixtures("xserver")
def test_replay_of_a_run_with_no_actions_says_nothing_to_repeat(
    tmp_path: Path, xserver: Xvfb
) -> None:
    data_dir = tmp_path / "data"
    record_a_run_without_actions(data_dir)
    env = {**base_env(data_dir), **xserver.env(), "PATH": os.environ["PATH"]}
    done = jarvis(["replay", "T001"], env)
    assert done.returncode == 0, done.stderr
    said = done.stdout.strip()
    assert said.endswith("of T001: the run has no actions, nothing to repeat"), said
    assert "0/0" not in said
