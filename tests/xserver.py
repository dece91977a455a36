"""Start a virtual X display (Xvfb) for tests and benchmarks.

``start_xvfb(width, height)`` is a context manager yielding a running :class:`Xvfb`
(``.display`` ":N", ``.width``, ``.height``, ``.xauthority``, ``.env()``). With
``set_env=True`` it also points this process's ``DISPLAY`` and ``XAUTHORITY`` at it
for the duration and restores them after.

The server is started with ``-displayfd`` (it picks a free display number and
reports it once it accepts connections), ``-noreset``, ``-nolisten tcp`` and its
own MIT-MAGIC-COOKIE in a temporary ``XAUTHORITY`` file, so access control is real.

pyautogui binds to the display that is current when it is first imported and
never lets go, so a process can drive only one display with it. To act on a
second display size, run the work in a child process with ``env=server.env()``
(see ``tests/test_input_fidelity.py`` for a worker that does exactly this).
"""

from __future__ import annotations

import logging
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from jarvis.desktop.x11 import X11Error

log = logging.getLogger(__name__)

DEFAULT_SIZE = (1920, 1080)
_FAMILY_WILD = 0xFFFF
_FAMILY_LOCAL = 256


def _xauth_entries(number: str, cookie: bytes) -> bytes:
    """Xauthority records for display ``number``: FamilyLocal with this host's name
    (what python-xlib looks up) and FamilyWild (any host, what libXau also accepts)."""

    def field(data: bytes) -> bytes:
        return len(data).to_bytes(2, "big") + data

    def entry(family: int, address: bytes) -> bytes:
        return (
            family.to_bytes(2, "big")
            + field(address)
            + field(number.encode())
            + field(b"MIT-MAGIC-COOKIE-1")
            + field(cookie)
        )

    return entry(_FAMILY_LOCAL, socket.gethostname().encode()) + entry(_FAMILY_WILD, b"")


class Xvfb:
    """A private virtual X display. Use as a context manager or call start()/stop().

    ``display`` (":N") and ``xauthority`` (path) are set once started; ``env()`` returns
    the environment variables a client needs. The server reads its cookie from the
    auth file at start (under a placeholder number, which the server ignores); once
    the number is known the file is rewritten for clients.
    """

    def __init__(self, width: int = 1920, height: int = 1080, depth: int = 24) -> None:
        self.width, self.height, self.depth = width, height, depth
        self.display = ""
        self._dir = tempfile.TemporaryDirectory(prefix="jarvis-xvfb-")
        self.xauthority = str(Path(self._dir.name) / "Xauthority")
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 10.0) -> Xvfb:
        if shutil.which("Xvfb") is None:
            raise X11Error("Xvfb is not installed (Debian/Ubuntu: apt-get install xvfb)")
        cookie = secrets.token_bytes(16)
        Path(self.xauthority).write_bytes(_xauth_entries("0", cookie))
        read_fd, write_fd = os.pipe()
        cmd = [
            "Xvfb",
            "-displayfd",
            str(write_fd),
            "-noreset",
            "-nolisten",
            "tcp",
            "-auth",
            self.xauthority,
            "-screen",
            "0",
            f"{self.width}x{self.height}x{self.depth}",
        ]
        self._proc = subprocess.Popen(
            cmd,
            pass_fds=(write_fd,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        os.close(write_fd)
        try:
            number = self._read_display_number(read_fd, timeout)
        finally:
            os.close(read_fd)
        self.display = f":{number}"
        Path(self.xauthority).write_bytes(_xauth_entries(number, cookie))
        log.info("Xvfb %s started (%dx%d)", self.display, self.width, self.height)
        return self

    def _read_display_number(self, fd: int, timeout: float) -> str:
        assert self._proc is not None
        deadline = time.monotonic() + timeout
        data = b""
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(0.0, left))
            chunk = os.read(fd, 64) if ready else b""
            if not chunk:
                err = self._stop_and_read_stderr()
                reason = "timed out" if left <= 0 or not ready else "exited"
                raise X11Error(f"Xvfb {reason} before reporting a display: {err}")
            data += chunk
        return data.decode().strip()

    def _stop_and_read_stderr(self) -> str:
        assert self._proc is not None
        if self._proc.poll() is None:
            self._proc.kill()
        _, err = self._proc.communicate(timeout=5)
        return err.decode(errors="replace").strip()[-500:]

    def env(self) -> dict[str, str]:
        return {"DISPLAY": self.display, "XAUTHORITY": self.xauthority}

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        if proc is not None and proc.stderr is not None:
            proc.stderr.close()
        self._dir.cleanup()

    def __enter__(self) -> Xvfb:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


@contextmanager
def start_xvfb(
    width: int = DEFAULT_SIZE[0], height: int = DEFAULT_SIZE[1], set_env: bool = False
) -> Iterator[Xvfb]:
    """A fresh Xvfb ``width`` x ``height`` x 24, stopped on exit."""
    with Xvfb(width, height) as server:
        if not set_env:
            yield server
            return
        saved = {k: os.environ.get(k) for k in ("DISPLAY", "XAUTHORITY")}
        os.environ.update(server.env())
        try:
            yield server
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
