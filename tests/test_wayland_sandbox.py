"""The private headless sway the tests (and later ``--sandbox wayland``) use: run as an
unprivileged user with its own 0700 runtime dir, its outputs as asked and read back,
reachable from this (root) process, and gone without a trace once stopped."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

from jarvis.desktop.wlroots.session import read_outputs
from jarvis.safety.wayland_sandbox import USER, OutputSpec, PrivateSway
from tests.wayland import needs_sway, wait_window

pytestmark = needs_sway


def _uid(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])


def test_sway_runs_unprivileged_in_its_own_runtime_dir_and_leaves_nothing() -> None:
    sway = PrivateSway([OutputSpec(1024, 768, 1.5)])
    with sway:
        assert sway.where is not None and sway._proc is not None
        runtime = sway.runtime_dir
        expected = pwd.getpwnam(USER).pw_uid if os.geteuid() == 0 else os.geteuid()
        assert _uid(sway._proc.pid) == expected
        mode = runtime.stat()
        assert (mode.st_mode & 0o777, mode.st_uid) == (0o700, expected)
        assert Path(sway.where.socket).parent == runtime
        outputs = read_outputs(sway.where)  # this process reaches it through the socket path
        assert [(o.box, o.scale) for o in outputs] == [((0, 0, 682, 512), 1.5)]  # 1024 / 1.5, down
        app = sway.run_app(["foot", "-a", "jarvis-owner", "sleep", "60"])
        assert wait_window(sway, lambda n: n.get("app_id") == "jarvis-owner")["pid"] == app.pid
        assert _uid(app.pid) == expected
        pids = [sway._proc.pid, app.pid]
    assert not runtime.exists() and sway.where is None
    assert not [p for p in pids if Path(f"/proc/{p}").exists()]
