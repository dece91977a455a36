"""A private virtual display (Xvfb) per eval task, with its own cookie.

Started with ``-displayfd`` (the server picks a free number and reports it once it
accepts connections), ``-noreset``, ``-nolisten tcp`` and an MIT-MAGIC-COOKIE in a
temporary ``XAUTHORITY`` file. Bare Xvfb has no window manager: windows appear at 0,0.
"""

from __future__ import annotations

import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType


class DisplayError(RuntimeError):
    """Xvfb is missing or did not start."""


def _xauth_entry(family: int, address: bytes, number: str, cookie: bytes) -> bytes:
    def field(data: bytes) -> bytes:
        return len(data).to_bytes(2, "big") + data

    return (
        family.to_bytes(2, "big")
        + field(address)
        + field(number.encode())
        + field(b"MIT-MAGIC-COOKIE-1")
        + field(cookie)
    )


def _xauth(number: str, cookie: bytes) -> bytes:
    local = _xauth_entry(256, socket.gethostname().encode(), number, cookie)
    return local + _xauth_entry(0xFFFF, b"", number, cookie)


class VirtualDisplay:
    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.display = ""
        self._dir = tempfile.TemporaryDirectory(prefix="jarvis-eval-x-")
        self.xauthority = str(Path(self._dir.name) / "Xauthority")
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 10.0) -> VirtualDisplay:
        if shutil.which("Xvfb") is None:
            raise DisplayError("Xvfb is not installed (Debian/Ubuntu: apt-get install xvfb)")
        cookie = secrets.token_bytes(16)
        Path(self.xauthority).write_bytes(_xauth("0", cookie))
        read_fd, write_fd = os.pipe()
        self._proc = subprocess.Popen(
            [
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
                f"{self.width}x{self.height}x24",
            ],
            pass_fds=(write_fd,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(write_fd)
        try:
            deadline = time.monotonic() + timeout
            data = b""
            while not data.endswith(b"\n"):
                left = deadline - time.monotonic()
                ready, _, _ = select.select([read_fd], [], [], max(0.0, left))
                chunk = os.read(read_fd, 64) if ready else b""
                if not chunk:
                    self.stop()
                    raise DisplayError("Xvfb did not report a display number")
                data += chunk
        finally:
            os.close(read_fd)
        number = data.decode().strip()
        self.display = f":{number}"
        Path(self.xauthority).write_bytes(_xauth(number, cookie))
        return self

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
        self._dir.cleanup()

    def __enter__(self) -> VirtualDisplay:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
