"""wayvnc serving one wlroots compositor, for the live view and takeover on Wayland.

wayvnc 0.5 (Debian 12) authenticates only over TLS, which the relay does not speak; a
password-less TCP port, even on 127.0.0.1, would let every local user drive the desk. So
it listens on Unix sockets instead, in a 0700 folder of the compositor's user: only that
user and root (this daemon, when it runs sway as ``jarvis-wl``) can connect. Two servers,
as x11vnc's two passwords: one started with ``--disable-input`` for people who watch, one
with input for the person who took over; the relay logs in to either (RFB with no
authentication) and no session of the browser reaches them but through it.

wayvnc runs as the user that owns the compositor's runtime dir (through ``setpriv`` when
this process is root), with that dir and socket, and ends with the thread that started it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from jarvis.desktop.rfb import Upstream, login_on
from jarvis.desktop.vnc import START_TIMEOUT_S, VncError
from jarvis.desktop.wlroots.session import WaylandDisplay

log = logging.getLogger(__name__)

POLL_S = 0.02


def _answers(path: Path) -> bool:
    """Whether a VNC server listens on the Unix socket ``path`` (it greets with RFB)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        try:
            sock.connect(str(path))
            return sock.recv(12).startswith(b"RFB ")
        except OSError:
            return False


@dataclass
class WayVncServer:
    """The two wayvnc of the compositor ``where`` (see the module doc)."""

    where: WaylandDisplay
    full_password: str = field(default="", repr=False)
    view_password: str = field(default="", repr=False)
    """Empty: wayvnc has no password here (the sockets' folder keeps others out); kept
    so that every VNC source has the same face."""
    _folder: Path | None = field(default=None, repr=False)
    _procs: list[subprocess.Popen[bytes]] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _stopped: bool = field(default=False, repr=False)

    @property
    def display(self) -> str:
        return self.where.name

    @property
    def running(self) -> bool:
        return len(self._procs) == 2 and all(p.poll() is None for p in self._procs)

    def socket_path(self, full: bool) -> Path:
        if self._folder is None:
            raise VncError(f"wayvnc on {self.display} is not started")
        return self._folder / ("full.sock" if full else "view.sock")

    def start(self) -> WayVncServer:
        exe = shutil.which("wayvnc")
        if exe is None:
            raise VncError("wayvnc is not installed (Debian: apt install wayvnc)")
        runtime = Path(self.where.socket).parent
        owner = runtime.stat()
        self._folder = Path(tempfile.mkdtemp(prefix="jarvis-wayvnc-"))  # 0700
        (self._folder / "config").write_text("")  # not the user's own config
        for path in (self._folder, self._folder / "config"):
            os.chown(path, owner.st_uid, owner.st_gid)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "XDG_RUNTIME_DIR": str(runtime),
            "WAYLAND_DISPLAY": self.where.socket,
            "HOME": str(self._folder),
        }
        prefix = [shutil.which("setpriv") or "setpriv", "--pdeathsig", "TERM"]
        if os.geteuid() == 0 and owner.st_uid != 0:
            prefix += [f"--reuid={owner.st_uid}", f"--regid={owner.st_gid}", "--clear-groups"]
        try:
            for full in (False, True):
                argv = [*prefix, exe, "-u", "-C", str(self._folder / "config")]
                argv += [] if full else ["--disable-input"]
                self._spawn([*argv, str(self.socket_path(full))], env)
            self._wait_ready()
        except (OSError, VncError):
            self.stop()
            raise
        log.info("wayvnc serves %s on sockets in %s", self.display, self._folder)
        return self

    def _spawn(self, argv: list[str], env: dict[str, str]) -> None:
        assert self._folder is not None
        with self._lock:
            if self._stopped:
                raise VncError(f"wayvnc on {self.display} was stopped while it started")
            with (self._folder.parent / f"{self._folder.name}.log").open("ab") as out:
                self._procs.append(
                    subprocess.Popen(
                        argv, env=env, cwd=str(self._folder), stdin=subprocess.DEVNULL,
                        stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                    )
                )  # fmt: skip

    def _wait_ready(self) -> None:
        """Until both answer with RFB's greeting on their sockets."""
        deadline = time.monotonic() + START_TIMEOUT_S
        waiting = [self.socket_path(False), self.socket_path(True)]
        while waiting and time.monotonic() < deadline:
            if any(p.poll() is not None for p in self._procs):
                raise VncError(f"wayvnc on {self.display} exited at start: {self._log_tail()}")
            waiting = [path for path in waiting if not _answers(path)]
            if waiting:
                time.sleep(POLL_S)
        if waiting:
            raise VncError(f"wayvnc on {self.display} did not start within {START_TIMEOUT_S:.0f} s")

    def _log_tail(self) -> str:
        assert self._folder is not None
        path = self._folder.parent / f"{self._folder.name}.log"
        return path.read_text(errors="replace")[-300:].strip() if path.exists() else ""

    async def session(self, full: bool) -> Upstream:
        """A logged-in session of the viewers' server, or with ``full`` of the one that
        takes input; raises RfbError or OSError when it cannot be opened."""
        reader, writer = await asyncio.open_unix_connection(str(self.socket_path(full)))
        return await login_on(reader, writer, None, "wayvnc")

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            procs, self._procs = self._procs, []
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=3)
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            with contextlib.suppress(OSError):
                (self._folder.parent / f"{self._folder.name}.log").unlink()
            self._folder = None

    def __enter__(self) -> WayVncServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
