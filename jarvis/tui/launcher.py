"""Find the ``jarvis serve`` that holds the data dir, or start the gateway for this TUI.

A running daemon names itself and the address its API listens on in ``DATA/serve.lock``;
the TUI finds it there like every client (:mod:`jarvis.discovery`), with the token from
``DATA/config/api_token``. ``--url`` overrides the address.

When no daemon holds the data dir, :func:`start_gateway` runs ``python -m jarvis serve
--data-dir DATA --http 127.0.0.1:PORT`` (a free port) as a child in its own session, its
output in ``DATA/logs/tui-gateway.log``, waits until ``/api/health`` answers, and
:meth:`Gateway.stop` ends it with SIGTERM (the running task goes back to pending), then
SIGKILL if it does not stop in time.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from jarvis.config import Settings
from jarvis.discovery import TOKEN_FILE, DaemonNotFound, find_daemon, read_token

FIND_WAIT_S = 5.0
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0
MAX_LOG_READ = 256 * 1024


class LaunchError(Exception):
    """The gateway could not be found or started; the message says why."""


@dataclass
class Target:
    url: str
    token: str
    label: str
    process: subprocess.Popen[bytes] | None = None
    socket: Path | None = None
    """The API's Unix socket, when the daemon has no TCP address (``url`` is then a name)."""

    @property
    def owned(self) -> bool:
        return self.process is not None


def find_serve(settings: Settings, url: str | None = None) -> Target | None:
    """The serve that holds the data dir (at ``url`` when given), or None when none runs."""
    try:
        daemon = find_daemon(settings.data_dir, wait_s=FIND_WAIT_S)
    except DaemonNotFound as exc:
        raise LaunchError(str(exc)) from None
    if daemon is None:
        return None
    if url:
        return Target(url.rstrip("/"), daemon.token, f"serve pid {daemon.pid} at {url}")
    if daemon.url is None and daemon.socket is None:
        raise LaunchError(
            f"serve pid {daemon.pid} holds {settings.data_dir} but has no API open "
            f"after {FIND_WAIT_S:.0f} s (--once, or --http off?); give --url"
        )
    return Target(daemon.base_url, daemon.token, daemon.label, socket=daemon.socket)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_gateway(settings: Settings, extra_args: list[str] | None = None) -> Target:
    """Start ``jarvis serve`` for this data dir on a free loopback port; wait until ready."""
    port = free_port()
    data_dir = settings.data_dir
    log_dir = data_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "jarvis", "serve", "--data-dir", str(data_dir)]
    command += ["--http", f"127.0.0.1:{port}", "--with-parent", str(os.getpid())]
    command += extra_args or []
    with (log_dir / "tui-gateway.log").open("ab") as log:
        start = log.tell()
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, data_dir, process, start)
    except LaunchError:
        stop_gateway(process)
        raise
    try:
        token = read_token(data_dir)
    except DaemonNotFound as exc:
        stop_gateway(process)
        raise LaunchError(str(exc)) from None
    return Target(url, token, f"own gateway pid {process.pid}", process)


def wait_ready(url: str, data_dir: Path, process: subprocess.Popen[bytes], start: int = 0) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        code = process.poll()
        if code is not None:
            log = data_dir / "logs" / "tui-gateway.log"
            raise LaunchError(f"the gateway could not start: {why_it_ended(log, start, code)}")
        token_path = data_dir / TOKEN_FILE
        if token_path.exists():
            try:
                token = token_path.read_text(encoding="utf-8").strip()
                response = httpx.get(
                    f"{url}/api/health", headers={"authorization": f"Bearer {token}"}, timeout=2
                )
                if response.status_code == 200:
                    return
            except (httpx.HTTPError, OSError):
                pass
        time.sleep(0.1)
    raise LaunchError(f"the gateway did not answer at {url} within {START_TIMEOUT_S:.0f} s")


def why_it_ended(log: Path, start: int, code: int) -> str:
    """The reason a gateway that exited gave: the last ``jarvis: ...`` line (the commands'
    one-line errors) it wrote to ``log`` after ``start``, else its last line, else the code."""
    try:
        with log.open("rb") as file:
            file.seek(start)
            lines = file.read(MAX_LOG_READ).decode(errors="replace").splitlines()
    except OSError:
        lines = []
    said = [line.strip() for line in lines if line.strip()]
    plain = [line for line in said if not line.startswith(("Traceback", " ", "\t"))]
    reasons = [line for line in plain if line.startswith("jarvis:")] or plain
    reason = reasons[-1].removeprefix("jarvis:").strip() if reasons else ""
    return f"{reason} (exit {code}; see {log})" if reason else f"exit {code}; see {log}"


def stop_gateway(process: subprocess.Popen[bytes]) -> int | None:
    """SIGTERM (a running task goes back to pending), then SIGKILL after a grace."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
    return process.returncode
