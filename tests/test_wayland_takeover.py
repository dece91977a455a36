"""The live view's VNC source on Wayland: wayvnc on a private headless sway (run as the
unprivileged user), listening on Unix sockets in a 0700 folder of the compositor's user
(no TCP port at all), one server for viewers and one for the person who took over; a
session logs in with RFB's no-authentication and gets the output's size; stop leaves no
process and no folder. A takeover ends a running wtype at once. The whole takeover
through a served task is in ``tests/test_wayland_serve.py``."""

from __future__ import annotations

import asyncio
import os
import stat
import struct
import tempfile
import threading
import time
from pathlib import Path

import pytest

from jarvis.desktop.backend import vnc_server
from jarvis.desktop.errors import InputInterrupted
from jarvis.desktop.portal.display import PortalDisplay
from jarvis.desktop.text_entry import TypedText
from jarvis.desktop.vnc import VncServer
from jarvis.desktop.wayvnc import WayVncServer
from jarvis.desktop.wlroots.input import WlInput
from jarvis.desktop.wlroots.session import WaylandDisplay
from jarvis.desktop.x11 import XDisplay
from jarvis.safety.takeover import interrupt_typing
from jarvis.safety.wayland_sandbox import OutputSpec
from tests.test_takeover_api import listening
from tests.wayland import needs_sway, start_sway, wait_window


def test_the_vnc_server_follows_the_display() -> None:
    assert isinstance(vnc_server(WaylandDisplay("/run/u/wayland-1")), WayVncServer)
    x11 = vnc_server(XDisplay(":5", "/tmp/cookie"))
    assert isinstance(x11, VncServer) and (x11.display, x11.xauthority) == (":5", "/tmp/cookie")
    assert vnc_server(XDisplay("")) is None
    assert vnc_server(PortalDisplay("/run/u/wayland-0", "", "unix:path=/b", "GNOME")) is None


async def _server_init(server: WayVncServer, full: bool) -> tuple[int, int]:
    upstream = await server.session(full)
    try:
        await upstream.write(b"\x01")  # ClientInit: shared
        data = b""
        while len(data) < 4:
            data += await upstream.read()
        width, height = struct.unpack(">HH", data[:4])
        return width, height
    finally:
        await upstream.close()


@needs_sway
@pytest.mark.skipif(
    not any(Path(p, "wayvnc").exists() for p in os.environ["PATH"].split(":")),
    reason="wayvnc is needed (make system)",
)
def test_wayvnc_listens_on_private_sockets_only_and_stops_clean() -> None:
    with start_sway([OutputSpec(800, 600)]) as sway:
        assert sway.where is not None
        server = WayVncServer(sway.where).start()
        try:
            assert server.running
            folder = server.socket_path(False).parent
            mode = folder.stat()
            assert stat.S_IMODE(mode.st_mode) == 0o700
            assert mode.st_uid == sway.runtime_dir.stat().st_uid  # the compositor's user
            assert sorted(p.name for p in folder.iterdir() if p.is_socket()) == [
                "full.sock",
                "view.sock",
            ]
            for proc in server._procs:
                assert listening(proc.pid) == []  # no TCP port, not even on loopback
                assert Path(f"/proc/{proc.pid}").stat().st_uid == mode.st_uid
            assert asyncio.run(_server_init(server, False)) == (800, 600)
            assert asyncio.run(_server_init(server, True)) == (800, 600)
            pids = [proc.pid for proc in server._procs]
        finally:
            server.stop()
        assert not server.running and not folder.exists()
        assert not [pid for pid in pids if Path(f"/proc/{pid}").exists()]


@needs_sway
def test_a_takeover_cuts_a_running_wtype(tmp_path: Path) -> None:
    """wtype types a whole text in one process (about 7 ms a key here): a takeover ends it
    at once (as it ends xdotool on X11) and the type call says a person took over."""
    shared = Path(tempfile.mkdtemp(prefix="jarvis-wl-note-"))  # the app's user writes here
    shared.chmod(0o777)
    note = shared / "note.txt"
    text = "abcdefghij" * 200
    try:
        with start_sway([OutputSpec(800, 600)]) as sway:
            assert sway.where is not None
            sway.run_app(["foot", "-a", "cut", "sh", "-c", f"stty -echo -icanon; cat > {note}"])
            wait_window(sway, lambda n: n.get("app_id") == "cut" and n.get("focused"))
            hold = threading.Event()
            typer = WlInput(sway.where, threading.Event(), hold)
            result: list[BaseException | TypedText] = []

            def type_it() -> None:
                try:
                    result.append(typer.type_text(text))
                except BaseException as exc:
                    result.append(exc)

            thread = threading.Thread(target=type_it)
            try:
                thread.start()
                deadline = time.monotonic() + 30
                while not (note.exists() and note.stat().st_size >= 100):
                    assert time.monotonic() < deadline and thread.is_alive(), result
                    time.sleep(0.01)
                hold.set()  # what the takeover does, then it ends the typing
                interrupt_typing(sway.where)
                thread.join(timeout=10)
                assert not thread.is_alive()
            finally:
                typer.close()
            [outcome] = result
            assert isinstance(outcome, InputInterrupted) and "took over" in str(outcome)
            typed = note.read_text()
            assert 100 <= len(typed) < len(text) and text.startswith(typed)
    finally:
        note.unlink(missing_ok=True)
        shared.rmdir()
