"""A real ``redis-server`` for the fleet's tests: loopback, a free port, a password, no
snapshot, its own directory; stopped (and its files removed) at the end.

``redis_server`` (a pytest fixture) yields a :class:`RedisServer`; ``.url`` carries the
password (``redis://:PASSWORD@127.0.0.1:PORT/0``), for clients in the test's process;
a process the test starts gets ``.bare_url`` and the password in its environment
(``.env``, ``JARVIS_REDIS_PASSWORD``), never on its command line. The server reads its
password from a config file of its own, not from its argv either. Each test gets an
empty server.
"""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

START_TIMEOUT_S = 10.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One redis-server process on 127.0.0.1 (start()/stop(), or a context manager)."""

    def __init__(self, appendonly: bool = False) -> None:
        self.password = secrets.token_hex(12)
        self.port = 0
        self.dir = Path(tempfile.mkdtemp(prefix="jarvis-redis-"))
        self.appendonly = appendonly
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"

    @property
    def bare_url(self) -> str:
        """The URL without its password (that goes in :attr:`env`)."""
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def env(self) -> dict[str, str]:
        return {"JARVIS_REDIS_PASSWORD": self.password}

    def start(self) -> RedisServer:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail("redis-server is not installed (make system installs it)")
        self.port = self.port or free_port()
        conf = self.dir / "redis.conf"  # the password stays off the command line
        conf.touch(mode=0o600)
        conf.write_text(f"requirepass {self.password}\n", encoding="utf-8")
        args = [binary, str(conf), "--port", str(self.port), "--bind", "127.0.0.1"]
        args += ["--save", "", "--appendonly", "yes" if self.appendonly else "no"]
        args += ["--dir", str(self.dir), "--loglevel", "warning"]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                err = self.process.stderr.read().decode() if self.process.stderr else ""
                pytest.fail(f"redis-server exited: {err.strip()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                    sock.sendall(f"AUTH {self.password}\r\nPING\r\n".encode())
                    answer = b""
                    while b"PONG" not in answer and b"ERR" not in answer:
                        answer += sock.recv(64) or b"ERR closed"
                    if b"PONG" in answer:
                        return self
            except OSError:
                time.sleep(0.05)  # not listening yet: poll until it is
        pytest.fail("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def kill(self) -> None:
        """kill -9: what the AOF holds is all that survives."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
        self.process = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server
