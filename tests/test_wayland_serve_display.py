"""Which display `jarvis serve` and `jarvis worker` work on without `--sandbox`: the one
they were started in, as `desktop.backend` chooses it (backend.py's chooser, as `jarvis
run` does): the person's X display, or the compositor of a sway session; a display that
cannot be driven is one line and exit 1, before anything starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jarvis.config import Settings
from jarvis.desktop.wlroots.session import WaylandDisplay
from jarvis.desktop.x11 import XDisplay
from jarvis.gateway.serve_command import own_display
from tests.agent_harness import TEST_KEY

ROOT = Path(__file__).resolve().parent.parent
SWAY_ENV = {"WAYLAND_DISPLAY": "wayland-1", "XDG_RUNTIME_DIR": "/run/u", "SWAYSOCK": "/s"}


def test_the_daemons_display_follows_the_backend(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    person = XDisplay(":7")
    for name in ("WAYLAND_DISPLAY", "SWAYSOCK", "XDG_CURRENT_DESKTOP", "XDG_SESSION_TYPE"):
        monkeypatch.delenv(name, raising=False)
    assert own_display(Settings(), person) is person
    for name, value in SWAY_ENV.items():
        monkeypatch.setenv(name, value)
    assert own_display(Settings(), person) == WaylandDisplay("/run/u/wayland-1", "/s")
    x11 = Settings.model_validate({"desktop": {"backend": "x11"}})
    assert own_display(x11, person) is person
    monkeypatch.delenv("WAYLAND_DISPLAY")
    wlroots = Settings.model_validate({"desktop": {"backend": "wlroots"}})
    assert own_display(wlroots, person) is None
    said = capsys.readouterr().err
    assert said.startswith("jarvis: WAYLAND_DISPLAY is not set") and said.count("\n") == 1


@pytest.mark.parametrize(
    "command",
    [("serve", "--once"), ("worker", "--redis", "redis://127.0.0.1:9/0")],
)
def test_serve_and_worker_refuse_a_display_they_cannot_drive_in_one_line(
    command: tuple[str, ...], tmp_path: Path
) -> None:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "PYTHONPATH": str(ROOT),
        "ANTHROPIC_API_KEY": TEST_KEY,
        "JARVIS_DESKTOP__BACKEND": "wlroots",  # and no WAYLAND_DISPLAY
        "JARVIS_LONG_TERM_MEMORY": "false",
    }
    done = subprocess.run(
        [sys.executable, "-m", "jarvis", *command, "--data-dir", str(tmp_path / "data")],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr == (
        "jarvis: WAYLAND_DISPLAY is not set: no Wayland compositor to drive\n"
    ), done.stderr
