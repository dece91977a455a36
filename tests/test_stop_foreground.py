"""`jarvis stop` with no daemon: it reaches the foreground `jarvis run` or `jarvis replay`
of the data dir (``DATA/run.lock``), which ends cancelled by ``cli`` with exit 130, and
nothing more reaches the app."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jarvis.desktop.screen import Size, fit_size, screen_to_model
from jarvis.discovery import find_foreground
from jarvis.runs.report import locate
from tests.fake_model import FakeModel, Reply, call
from tests.test_cli_run import run_env
from tests.test_replay import FAR, Recording, clicks, moved, recording  # noqa: F401
from tests.tkdriver import TkApp

pytestmark = pytest.mark.usefixtures("xserver")


def stop(data: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jarvis", "stop", "--data-dir", str(data)],
        env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def stopped_while(
    args: list[str], env: dict[str, str], data: Path, out: Path, started: Callable[[], bool]
) -> tuple[int, subprocess.CompletedProcess[str], str]:
    """Start ``jarvis ARGS``, run `jarvis stop` once ``started()``; (exit code, the stop's
    result, the output)."""
    with out.open("w+") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jarvis", *args, "--data-dir", str(data)],
            env=env, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while not (started() and find_foreground(data) is not None):
                assert proc.poll() is None, out.read_text()
                assert time.monotonic() < deadline, "never got going: " + out.read_text()
                time.sleep(0.02)
            holder = find_foreground(data)
            assert holder is not None and holder["pid"] == proc.pid
            said = stop(data, env)
            code = proc.wait(timeout=15)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert find_foreground(data) is None  # the lock names nobody once it is over
    return code, said, out.read_text()


def test_jarvis_stop_cancels_a_foreground_run(
    xserver: Any, fake_model: FakeModel, tmp_path: Path
) -> None:
    fake_model.script(Reply(text="thinking " * 400, text_chunk=4, delay_s=0.05))
    data, out = tmp_path / "data", tmp_path / "run.out"
    env = run_env(xserver, fake_model)
    code, said, text = stopped_while(
        ["run", "think slowly"], env, data, out, lambda: "thinking" in out.read_text()
    )
    assert said.returncode == 0 and "is being cancelled" in said.stdout, said.stdout
    assert "run: think slowly" in said.stdout
    assert code == 130, text
    assert "cancelled after 1 step(s)" in text and "Traceback" not in text
    assert text.count("thinking") < 400  # the stream was cut
    [info] = [json.loads(p.read_text()) for p in (data / "runs").rglob("run.json")]
    assert info["status"] == "cancelled" and info["stopped_by"] == "cli", info


def test_jarvis_stop_cancels_a_foreground_replay(
    tkapp: TkApp,
    recording: Recording,  # noqa: F811
    fake_model: FakeModel,
    xserver: Any,
    tmp_path: Path,
) -> None:
    """The replay waits for the model to place a target out of reach; `jarvis stop` then
    ends it: nothing is clicked or typed."""
    screen = Size(*tkapp.screen)
    model = fit_size(screen, recording.settings.max_side)
    data = recording.settings.data_dir
    env = run_env(xserver, fake_model)
    with moved(FAR):
        box = screen_to_model(*tkapp.widget_center("box"), model, screen)
        box = (box[0] + round(FAR / 1.5), box[1])
        fake_model.script(
            Reply(
                text="looking " * 400,
                text_chunk=4,
                delay_s=0.05,
                tool_calls=[call("point", x=box[0], y=box[1])],
            )
        )
        mark = tkapp.mark()
        code, said, text = stopped_while(
            ["replay", recording.task_id, "--model"],
            env,
            data,
            tmp_path / "replay.out",
            lambda: len(fake_model.requests) == 1,
        )
        tkapp.sync()
        assert clicks(tkapp, mark) == []
        assert [e for e in tkapp.events(since=mark) if e["kind"] in ("key", "text")] == []
    assert said.returncode == 0 and f"replay {recording.task_id}" in said.stdout, said.stdout
    assert code == 130, text
    assert "0/3 actions repeated; stopped: cancelled by cli" in text
    [replay_id] = [w for w in text.split() if w.startswith("r-")][:1]
    info = json.loads((locate(data, replay_id) / "run.json").read_text())
    assert info["status"] == "cancelled" and info["stopped_by"] == "cli", info
