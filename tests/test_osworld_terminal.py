"""OSWorld's ``close_window`` step and ``vm_terminal_output`` getter on a real xterm
(the starter set's terminal) under Xvfb with the OSWorld desktop's window manager: the
step closes the window it names (by title, whole title, class) and no other; the getter
reads the focused xterm's text as the OSWorld profile set it up, and OSWorld's own metric
judges it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jarvis.eval.osworld.getters import Where, get
from jarvis.eval.osworld.judge import score
from jarvis.safety.sandbox import Sandbox
from jarvis.safety.settings import SandboxSettings

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A 1920x1080 display with the window manager, and a home the OSWorld profile laid
    out (its X resources merged): the environment of a task's steps."""
    home = tmp_path_factory.mktemp("home")
    with Sandbox(SandboxSettings(size="1920x1080")) as display:
        env = {**os.environ, **display.env(), "HOME": str(home)}
        profile = [sys.executable, "-m", "jarvis.eval.osworld.profile"]
        assert subprocess.run(profile, env=env, timeout=60).returncode == 0
        yield env


def _xterm(env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["xterm", "-fa", "Monospace", "-fs", "12", *args], env=env)


def _shown(env: dict[str, str], flag: str, name: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = subprocess.run(
            ["xdotool", "search", "--onlyvisible", flag, name], env=env, capture_output=True
        )
        if found.stdout.strip():
            return
        time.sleep(0.1)
    raise AssertionError(f"no window {name} showed")


def _step(env: dict[str, str], **params: object) -> subprocess.CompletedProcess[str]:
    step = json.dumps({"type": "close_window", "parameters": params})
    return subprocess.run(
        [sys.executable, "-m", "jarvis.eval.osworld.steps", step],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _ended(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> bool:
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


def test_close_window_closes_the_window_it_names_and_no_other(desk: dict[str, str]) -> None:
    notes = _xterm(desk, "-T", "Notes - Editor")
    other = _xterm(desk, "-T", "Other", "-class", "Scratchpad")
    try:
        _shown(desk, "--name", "Notes - Editor")
        _shown(desk, "--name", "Other")
        strict = _step(desk, window_name="notes - editor", strict=True)  # case counts
        assert (strict.returncode, strict.stdout) == (
            0,
            "close_window: no window 'notes - editor' to close\n",
        )
        assert notes.poll() is None
        done = _step(desk, window_name="notes - ed")  # part of the title, any case
        assert (done.returncode, done.stdout) == (0, "")
        assert _ended(notes) and other.poll() is None
        done = _step(desk, window_name="Scratchpad", strict=True, by_class=True)
        assert (done.returncode, done.stdout) == (0, "")
        assert _ended(other)
    finally:
        for proc in (notes, other):
            proc.kill()
            proc.wait()


def test_the_terminal_getter_reads_the_focused_xterm(desk: dict[str, str], tmp_path: Path) -> None:
    where = Where(env=desk, cache=tmp_path, scratch=tmp_path)
    assert get(where, {"type": "vm_terminal_output"}) is None  # no terminal has the focus
    term = _xterm(desk, "-T", "term")
    try:
        _shown(desk, "--name", "term")
        typed = "echo osworld-$((6*7)); echo done\n"
        subprocess.run(["xdotool", "type", "--delay", "20", typed], env=desk, check=True)
        deadline = time.monotonic() + 15
        text = None
        while time.monotonic() < deadline:
            text = get(where, {"type": "vm_terminal_output"})
            if text is not None and text.count("done") >= 2:
                break
        assert text is not None and text == text.rstrip()
        assert "\nosworld-42\ndone\n" in text  # the command and what it printed
        evaluator = {
            "func": "check_include_exclude",
            "result": {"type": "vm_terminal_output"},
            "expected": {"type": "rule", "rules": {"include": ["osworld-42"], "exclude": []}},
        }
        assert score(where, evaluator) == 1.0
        evaluator["expected"]["rules"]["include"] = ["osworld-43"]  # type: ignore[index]
        assert score(where, evaluator) == 0.0
    finally:
        term.kill()
        term.wait()
