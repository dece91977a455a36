"""An x11vnc is never left behind: a stop that comes while another thread is still starting
it (a daemon cancelled during its start-up) ends it, and the live view's start, cancelled,
leaves no x11vnc on the display."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from jarvis.api.live_view import live_view
from jarvis.config import load_settings
from jarvis.desktop.vnc import VncError, VncServer
from jarvis.desktop.x11 import XDisplay

pytestmark = pytest.mark.usefixtures("xserver")


BEFORE: set[str] = set()
"""x11vnc processes that were there before these tests (another test's), left out."""


def x11vncs(display: str) -> list[str]:
    found = subprocess.run(["pgrep", "-af", "x11vnc"], capture_output=True, text=True).stdout
    mine = [line for line in found.splitlines() if f"-display {display} " in line]
    return [line for line in mine if line.split()[0] not in BEFORE]


@pytest.fixture(autouse=True)
def _others(xserver: Any) -> None:
    BEFORE.clear()
    BEFORE.update(line.split()[0] for line in x11vncs(xserver.display))


def test_a_server_stopped_before_its_start_never_runs(xserver: Any) -> None:
    server = VncServer(xserver.display, xserver.xauthority)
    server.stop()  # e.g. the daemon shut down while another thread was about to start it
    with pytest.raises(VncError, match="stopped while it started"):
        server.start()
    assert not server.running and x11vncs(xserver.display) == []


async def test_a_live_view_cancelled_while_it_starts_leaves_no_x11vnc(
    xserver: Any, tmp_path: Any
) -> None:
    settings = load_settings(tmp_path)
    where = XDisplay(xserver.display, xserver.xauthority)
    started = asyncio.Event()

    async def serve() -> None:
        async with live_view(settings, where):
            started.set()
            await asyncio.Event().wait()

    for delay in (0.0, 0.05, 0.2):
        task = asyncio.create_task(serve())
        await asyncio.sleep(delay)  # cancel at different points of the start
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert x11vncs(xserver.display) == [], f"left behind after a cancel at {delay} s"
    task = asyncio.create_task(serve())
    await asyncio.wait_for(started.wait(), 30)  # a start left alone does run
    assert len(x11vncs(xserver.display)) == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert x11vncs(xserver.display) == []


def test_x11vnc_ends_with_a_daemon_killed_with_sigkill(xserver: Any, tmp_path: Any) -> None:
    """A process that started x11vnc and dies at once (``kill -9``) takes it along."""
    child = subprocess.Popen(
        [
            sys.executable, "-c",
            "import sys, time\n"
            "from jarvis.desktop.vnc import VncServer\n"
            "VncServer(sys.argv[1], sys.argv[2] or None).start()\n"
            "print('up', flush=True)\n"
            "time.sleep(600)\n",
            xserver.display, xserver.xauthority or "",
        ],
        stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parent.parent,
    )  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "up"
        assert len(x11vncs(xserver.display)) == 1
    finally:
        child.kill()
        child.wait()
    deadline = time.monotonic() + 10
    while x11vncs(xserver.display) and time.monotonic() < deadline:
        time.sleep(0.05)  # polling for the exit, not waiting out a race
    assert x11vncs(xserver.display) == []
