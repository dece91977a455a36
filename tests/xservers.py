"""X servers other than Xvfb, for tests: Xorg with the dummy driver and TigerVNC's Xvnc.

Both start the way ``tests/xserver.py``'s Xvfb does: ``-displayfd`` (the server picks a
free display number and reports it once it accepts connections), ``-noreset``,
``-nolisten tcp``, and their output in a file of their own folder.

- :class:`DummyXorg`: Xorg with ``xserver-xorg-video-dummy`` (run as root, with its own
  ``-config``, ``-logfile`` and cookie). The driver makes real RandR outputs (DUMMY0,
  DUMMY1, ...), of which only the first is connected until a mode is set on it; after the
  start, ``xrandr`` gives each of ``monitors`` a mode and a position, so the display has
  real CRTCs that every mss backend, window manager and RandR client sees.
- :class:`Xvnc`: TigerVNC's X server with no VNC port (``-rfbport -1``) and no cookie, as
  people start it (``Xvnc :1``): clients connect without one.
"""

from __future__ import annotations

import os
import secrets
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from jarvis.desktop.x11 import XDisplay
from jarvis.safety.sandbox import xauth_entries

START_TIMEOUT_S = 20.0
DUMMY_DRIVER = Path("/usr/lib/xorg/modules/drivers/dummy_drv.so")


@dataclass(frozen=True)
class Head:
    """One monitor of the dummy Xorg: a mode (``WIDTHxHEIGHT``, one of the standard VESA
    modes the driver lists) at a position in the root window."""

    width: int
    height: int
    left: int
    top: int


XORG_CONF = """\
Section "ServerFlags"
  Option "AutoAddDevices" "false"
  Option "AutoAddGPU" "false"
  Option "DontVTSwitch" "true"
EndSection
Section "Device"
  Identifier "dummy"
  Driver "dummy"
  VideoRam 256000
EndSection
Section "Monitor"
  Identifier "monitor"
  HorizSync 5.0-1000.0
  VertRefresh 5.0-200.0
EndSection
Section "Screen"
  Identifier "screen"
  Device "dummy"
  Monitor "monitor"
  DefaultDepth 24
  SubSection "Display"
    Depth 24
    Virtual {width} {height}
  EndSubSection
EndSection
"""


class _Server:
    """A server started with ``-displayfd``; a context manager."""

    prefix = "jarvis-xserver-"

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix=self.prefix)
        self.folder = Path(self._dir.name)
        self.log = self.folder / "server.log"
        self.display = ""
        self.xauthority: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    def command(self, fd: int) -> list[str]:
        raise NotImplementedError

    @property
    def where(self) -> XDisplay:
        return XDisplay(self.display, self.xauthority)

    def env(self) -> dict[str, str]:
        return {k: v for k, v in self.where.env().items() if k in ("DISPLAY", "XAUTHORITY")}

    def start(self) -> _Server:
        read_fd, write_fd = os.pipe()
        with self.log.open("ab") as out:
            self._proc = subprocess.Popen(
                self.command(write_fd),
                pass_fds=(write_fd,),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                start_new_session=True,
            )
        os.close(write_fd)
        try:
            self.display = ":" + self._read_number(read_fd)
        except BaseException:
            self.stop()
            raise
        finally:
            os.close(read_fd)
        return self

    def _read_number(self, fd: int) -> str:
        assert self._proc is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        data = b""
        while not data.endswith(b"\n"):
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(fd, 64) if ready else b""
            if not chunk:
                tail = self.log.read_text(errors="replace")[-600:]
                raise RuntimeError(f"{self.command(0)[0]} reported no display: {tail}")
            data += chunk
        return data.decode().strip()

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            os.killpg(self._proc.pid, 15)
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self._proc.pid, 9)
                self._proc.wait(timeout=10)
        self._proc = None
        self._dir.cleanup()

    def __enter__(self) -> _Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def dummy_xorg_missing() -> str | None:
    """Why a dummy Xorg cannot be started here, or None."""
    if shutil.which("Xorg") is None or not DUMMY_DRIVER.exists():
        return "needs Xorg and its dummy driver (apt: xserver-xorg-core xserver-xorg-video-dummy)"
    if shutil.which("xrandr") is None:
        return "needs xrandr (apt: x11-xserver-utils)"
    if os.geteuid() != 0:
        return "Xorg with a -config of its own runs as root only (CI runs as root)"
    return None


class DummyXorg(_Server):
    """Xorg with the dummy driver and ``heads`` as its monitors (the first is primary)."""

    prefix = "jarvis-xorg-"

    def __init__(self, heads: list[Head]) -> None:
        super().__init__()
        self.heads = heads
        self.width = max(h.left + h.width for h in heads)
        self.height = max(h.top + h.height for h in heads)
        self.config = self.folder / "xorg.conf"
        self.config.write_text(XORG_CONF.format(width=self.width, height=self.height))
        self.xauthority = str(self.folder / "Xauthority")
        self._cookie = secrets.token_bytes(16)
        Path(self.xauthority).write_bytes(xauth_entries("0", self._cookie))

    def command(self, fd: int) -> list[str]:
        return [
            *("Xorg", "-config", str(self.config), "-logfile", str(self.folder / "Xorg.log")),
            *("-displayfd", str(fd), "-noreset", "-nolisten", "tcp", "-auth", self.xauthority),
            *("-novtswitch", "-sharevts"),
        ]

    def start(self) -> DummyXorg:
        super().start()
        Path(self.xauthority).write_bytes(xauth_entries(self.display[1:], self._cookie))
        try:
            self._layout()
        except BaseException:
            self.stop()
            raise
        return self

    def _layout(self) -> None:
        """Give each head its mode and position (xrandr), then check that RandR says so."""
        env = {**os.environ, **self.env()}
        cmd = ["xrandr", "--fb", f"{self.width}x{self.height}"]
        for i, head in enumerate(self.heads):
            mode = f"{head.width}x{head.height}"
            if i > 0:  # only DUMMY0 starts connected, with the configured modes
                subprocess.run(["xrandr", "--addmode", f"DUMMY{i}", mode], env=env, check=True)
            cmd += ["--output", f"DUMMY{i}", "--mode", mode, "--pos", f"{head.left}x{head.top}"]
        cmd += ["--output", "DUMMY0", "--primary"]
        subprocess.run(cmd, env=env, check=True)
        listed = subprocess.run(
            ["xrandr", "--listmonitors"], env=env, check=True, capture_output=True, text=True
        ).stdout
        for head in self.heads:
            geometry = f"{head.width}/"
            place = f"+{head.left}+{head.top}"
            assert any(geometry in line and place in line for line in listed.splitlines()), listed


def xvnc_missing() -> str | None:
    if shutil.which("Xvnc") is None:
        return "needs TigerVNC's Xvnc (apt: tigervnc-standalone-server)"
    return None


class Xvnc(_Server):
    """TigerVNC's Xvnc at ``width`` x ``height``, no VNC port, no cookie."""

    prefix = "jarvis-xvnc-"

    def __init__(self, width: int = 1280, height: int = 800) -> None:
        super().__init__()
        self.width, self.height = width, height
        self.xauthority = str(self.folder / "no-such-Xauthority")  # people's: none at all

    def command(self, fd: int) -> list[str]:
        return [
            *("Xvnc", "-displayfd", str(fd), "-noreset", "-nolisten", "tcp"),
            *("-geometry", f"{self.width}x{self.height}", "-depth", "24"),
            *("-SecurityTypes", "None", "-rfbport", "-1"),
        ]
