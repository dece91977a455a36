"""The README's first command, `make run TASK="..."`, with no DISPLAY: it starts its own
virtual display with a terminal open, and the agent (scripted model behind the real SDK)
uses that terminal to do the task."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.fake_model import FakeModel, Reply, call

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(not shutil.which("xvfb-run"), reason="make run needs xvfb-run (make setup)")
def test_make_run_without_display_uses_a_virtual_display_with_a_terminal(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    out = tmp_path / "out.txt"
    # 1920x1080 is 1280x720 to the model; the terminal's top-left corner is at (80, 60)
    fake_model.script(
        Reply(
            text="Thought: click into the terminal and run the command.",
            tool_calls=[
                call("click", x=200, y=150),
                call("type", text=f"echo made-by-jarvis > {out}"),
                call("press_key", key="enter"),
            ],
        ),
        Reply(text="Thought: done.", tool_calls=[call("finished", summary="wrote the file")]),
        Reply(text='{"done": true, "reason": "the command ran"}'),
        Reply(text="1. Click the terminal.\n2. Type the command.\n3. Press Enter."),
    )
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "XAUTHORITY", "MAKEFLAGS")}
    env |= {
        "ANTHROPIC_API_KEY": "sk-test-make-run",
        "ANTHROPIC_BASE_URL": fake_model.anthropic_base_url,
        "JARVIS_DATA_DIR": str(tmp_path / "data"),
        "JARVIS_MAX_RETRIES": "0",
    }
    proc = subprocess.run(
        ["make", "--no-print-directory", "run", f"TASK=write made-by-jarvis into {out}"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "virtual display" in proc.stdout and "completed after 2 step(s)" in proc.stdout
    assert out.read_text() == "made-by-jarvis\n"  # typed into the terminal, which ran it
    assert "sk-test-make-run" not in proc.stdout + proc.stderr
