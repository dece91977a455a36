"""x11vnc serving one X display on 127.0.0.1, for the live view and takeover.

Each start makes two fresh passwords: a view-only one and a full-access one (VNC passwords
are 8 characters). x11vnc reads them from a 0600 file in a private folder and deletes it
(``-passwdfile rm:``), so they exist only in this process's memory and x11vnc's. A client
that logs in with the view-only password cannot send input: x11vnc itself drops it, so a
view is view-only whatever the browser does. The caller registers both with the redaction
list (this module imports nothing above the desktop layer).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import select
import shutil
import socket
import string
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from jarvis.desktop.rfb import Upstream, logged_in

log = logging.getLogger(__name__)

PASSWORD_LEN = 8  # what VNC authentication uses; longer ones are cut
START_TIMEOUT_S = 10.0
_ALPHABET = string.ascii_letters + string.digits


class VncError(RuntimeError):
    """x11vnc is missing or did not start; the message says why."""


def _password() -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(PASSWORD_LEN))


def _drain(stream: IO[bytes]) -> None:
    """Read x11vnc's output until it exits, so a full pipe never blocks it."""
    with contextlib.suppress(OSError, ValueError):
        while os.read(stream.fileno(), 65536):
            pass


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class VncServer:
    """One x11vnc for ``display`` (``":99"``), listening on 127.0.0.1:``port``."""

    display: str
    xauthority: str | None = None
    port: int = 0
    full_password: str = field(default="", repr=False)
    view_password: str = field(default="", repr=False)
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _drain: threading.Thread | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _stopped: bool = field(default=False, repr=False)
    """Set by :meth:`stop`: a start still running in another thread (its caller was
    cancelled) ends its x11vnc instead of leaving it behind."""

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> VncServer:
        exe = shutil.which("x11vnc")
        if exe is None:
            raise VncError("x11vnc is not installed (Debian: apt install x11vnc)")
        self.full_password, self.view_password = _password(), _password()
        while self.view_password == self.full_password:
            self.view_password = _password()
        folder = Path(tempfile.mkdtemp(prefix="jarvis-vnc-"))  # 0700
        secret = folder / "passwd"
        fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"{self.full_password}\n__BEGIN_VIEWONLY__\n{self.view_password}\n")
        self.port = _free_port()
        env = dict(os.environ, DISPLAY=self.display)
        if self.xauthority:
            env["XAUTHORITY"] = self.xauthority
        # x11vnc ends with the thread that starts it, so a daemon killed with -9 leaves none
        # polling its display (util-linux's setpriv, in every Debian and Ubuntu)
        guard = shutil.which("setpriv")
        argv = [
            *([guard, "--pdeathsig", "TERM"] if guard else []),
            exe, "-display", self.display, "-localhost", "-noipv6", "-rfbport", str(self.port),
            "-passwdfile", f"rm:{secret}", "-forever", "-shared", "-noxdamage", "-nolookup",
            "-nossl", "-quiet", "-nocmds", "-noremote", "-norc",
        ]  # fmt: skip
        try:
            with self._lock:
                if self._stopped:
                    raise VncError(f"x11vnc on {self.display} was stopped while it started")
                self._proc = subprocess.Popen(
                    argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL, start_new_session=True,
                )  # fmt: skip
            self._wait_ready()
        except (OSError, VncError):
            self.stop()
            raise
        finally:
            with contextlib.suppress(OSError):
                secret.unlink()
            with contextlib.suppress(OSError):
                folder.rmdir()
        log.info("x11vnc serves %s on 127.0.0.1:%d", self.display, self.port)
        return self

    def _wait_ready(self) -> None:
        """x11vnc prints ``PORT=N`` once it listens."""
        assert self._proc is not None and self._proc.stdout is not None
        out, deadline, seen = self._proc.stdout, time.monotonic() + START_TIMEOUT_S, b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([out], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            chunk = os.read(out.fileno(), 4096)
            if not chunk:
                raise VncError(f"x11vnc on {self.display} exited at start")
            seen += chunk
            if f"PORT={self.port}".encode() in seen:
                drain = threading.Thread(target=_drain, args=(out,), daemon=True)
                drain.start()  # started before it is seen: a stop in another thread joins it
                with self._lock:
                    self._drain = drain
                return
        raise VncError(f"x11vnc on {self.display} did not start within {START_TIMEOUT_S:.0f} s")

    async def session(self, full: bool) -> Upstream:
        """A session logged in with the full-access password, or else the view-only one;
        raises RfbError or OSError when it cannot be opened."""
        return await logged_in(self.port, self.full_password if full else self.view_password)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=3)
        with self._lock:
            drain, self._drain = self._drain, None
        if drain is not None:  # x11vnc has exited: the reader sees the end of its output
            drain.join(timeout=3)
        if proc.stdout is not None:
            proc.stdout.close()

    def __enter__(self) -> VncServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
