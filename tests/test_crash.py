"""bench/crash.py with a small count: kill -9 `jarvis serve` at random moments while messages
arrive; afterwards nothing is lost, nothing is done twice and every file parses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = int(os.environ.get("JARVIS_CRASH_ROUNDS", "20"))


@pytest.mark.slow
@pytest.mark.serial  # bench/crash.py: 20 starts of `jarvis serve` inside a 300 s limit
def test_kill_9_loses_nothing_and_completes_nothing_twice() -> None:
    proc = subprocess.run(
        [sys.executable, "bench/crash.py", "--rounds", str(ROUNDS), "--seed", "7"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["rounds"] == ROUNDS
    assert result["kills"] + result["early_exits"] == ROUNDS
    assert result["early_exits"] == 0, proc.stderr[-3000:]
    assert result["final_exit"] == 0, proc.stderr[-3000:]
    assert result["messages"] > 0
    assert (result["lost"], result["duplicates"], result["parse_errors"]) == (0, 0, 0), result
    assert result["waiting_after"] == 0 and result["completed"] == result["messages"], result
