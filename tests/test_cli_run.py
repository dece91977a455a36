"""`jarvis run` as a user runs it: a subprocess on Xvfb with the scripted model behind the
real SDKs. Each ending has its exit code, and the terminal shows the run as it goes."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.agent_harness import TEST_KEY, steps_under
from tests.fake_model import FakeModel, Reply, call
from tests.test_serve import serve_env

pytestmark = pytest.mark.usefixtures("xserver")


def run_env(xserver: Any, fake_model: FakeModel) -> dict[str, str]:
    return serve_env(xserver, fake_model) | {
        "OPENAI_API_KEY": TEST_KEY,
        "OPENAI_BASE_URL": fake_model.openai_base_url,
        "JARVIS_SETTLE_CEILING_MS": "300",
        "COLUMNS": "200",
    }


def jarvis_run(
    xserver: Any, fake_model: FakeModel, data: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "jarvis", "run", *args, "--data-dir", str(data)],
        env=run_env(xserver, fake_model),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert TEST_KEY not in proc.stdout + proc.stderr
    return proc


def test_needs_user_exits_3_and_the_terminal_shows_the_run(
    xserver: Any, fake_model: FakeModel, tmp_path: Path
) -> None:
    fake_model.script(
        Reply(
            text="Reflection: a login screen.\nThought: I need the password.",
            tool_calls=[call("mouse_move", x=40, y=40), call("call_user", message="password?")],
            input_tokens=321,
            output_tokens=45,
        )
    )
    proc = jarvis_run(xserver, fake_model, tmp_path / "data", "log in to the mail")
    out = proc.stdout
    assert proc.returncode == 3, out + proc.stderr
    assert "task log in to the mail" in out
    assert "thought:" in out and "I need the password." in out  # streamed thought
    assert "→ mouse_move" in out and "✓ mouse_move" in out and '{"x": 40, "y": 40}' in out
    assert "→ call_user" in out
    assert "ms: capture" in out and "settle" in out  # step timings
    assert "tokens in 321 out 45" in out and "$" in out  # tokens and running cost
    assert "waiting for you after 1 step(s)" in out and "password?" in out


def test_max_steps_flag_ends_in_failure_exit_1(
    xserver: Any, fake_model: FakeModel, tmp_path: Path
) -> None:
    fake_model.script(
        Reply(text="Thought: move", tool_calls=[call("mouse_move", x=60, y=60)]),
        Reply(text="I only moved the mouse."),
    )
    data = tmp_path / "data"
    proc = jarvis_run(xserver, fake_model, data, "an endless task", "--max-steps", "1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "failed after 1 step(s)" in proc.stdout and "limit of 1 steps" in proc.stdout
    assert fake_model.requests[-1].tool_names == []  # the wrap-up call
    assert len(steps_under(data)) == 1


def test_provider_and_model_flags_pick_the_endpoint(
    xserver: Any, fake_model: FakeModel, tmp_path: Path
) -> None:
    fake_model.script(Reply(text="Thought: ask", tool_calls=[call("call_user", message="which?")]))
    proc = jarvis_run(
        xserver, fake_model, tmp_path / "data", "pick one",
        "--provider", "openai", "--model", "local-vision-7b",
    )  # fmt: skip
    assert proc.returncode == 3, proc.stdout + proc.stderr
    [request] = fake_model.requests
    assert request.api == "openai" and request.body["model"] == "local-vision-7b"
    assert "openai/local-vision-7b" in proc.stdout


def test_ctrl_c_cancels_exit_130_and_keeps_the_record(
    xserver: Any, fake_model: FakeModel, tmp_path: Path
) -> None:
    fake_model.script(Reply(text="thinking " * 400, text_chunk=4, delay_s=0.05))
    data = tmp_path / "data"
    with (tmp_path / "run.out").open("w+") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jarvis", "run", "think slowly", "--data-dir", str(data)],
            env=run_env(xserver, fake_model), stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while "thinking" not in (tmp_path / "run.out").read_text():  # the stream is on
                assert proc.poll() is None, (tmp_path / "run.out").read_text()
                assert time.monotonic() < deadline, "the stream never started"
                time.sleep(0.02)
            sent = time.monotonic()
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=10)
            stopped_in = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    text = (tmp_path / "run.out").read_text()
    assert code == 130, text
    assert stopped_in < 5, f"took {stopped_in:.1f}s to stop"
    assert "cancelled after 1 step(s)" in text
    assert text.count("thinking") < 400  # the stream was cut, not played out
    [path] = steps_under(data)
    assert "(cancelled here)" in path.read_text()
