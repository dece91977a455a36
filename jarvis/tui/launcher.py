"""Find the ``jarvis serve`` that holds the data dir, or start the gateway for this TUI.

A running daemon names itself in ``DATA/serve.lock`` (pid, host, command). When that
process is alive, the TUI connects to its API at ``--url``, else the address of the
``api.http`` setting (the one ``serve`` listens on), else ``tui.host``/``tui.port``,
with the token from ``DATA/config/api_token``.

When no daemon holds the data dir, :func:`start_gateway` runs ``python -m jarvis serve
--data-dir DATA --http 127.0.0.1:PORT`` (a free port) as a child in its own session, its
output in ``DATA/logs/tui-gateway.log``, waits until ``/api/health`` answers, and
:meth:`Gateway.stop` ends it with SIGTERM (the running task goes back to pending), then
SIGKILL if it does not stop in time.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from jarvis.config import Settings

TOKEN_FILE = Path("config") / "api_token"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0


class LaunchError(Exception):
    """The gateway could not be found or started; the message says why."""


@dataclass
class Target:
    url: str
    token: str
    label: str
    process: subprocess.Popen[bytes] | None = None

    @property
    def owned(self) -> bool:
        return self.process is not None


def serve_holder(data_dir: Path) -> dict[str, Any] | None:
    """Who holds ``DATA/serve.lock``, when that process is alive on this host."""
    try:
        holder = json.loads((data_dir / "serve.lock").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(holder, dict) or holder.get("host") not in (None, socket.gethostname()):
        return None
    try:
        os.kill(int(holder["pid"]), 0)
    except (KeyError, TypeError, ValueError, ProcessLookupError):
        return None
    except PermissionError:  # alive, another user's
        pass
    return holder


def read_token(data_dir: Path) -> str:
    path = data_dir / TOKEN_FILE
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise LaunchError(f"cannot read the API token {path}: {exc.strerror}") from None


def api_url(settings: Settings) -> str:
    """Where ``serve`` listens by the settings (``api.http``), else ``tui.host:tui.port``."""
    spec = getattr(getattr(settings, "api", None), "http", None)
    if isinstance(spec, str) and spec.strip().lower() != "off":
        host, _, port = spec.strip().rpartition(":")
        if port.isdigit():
            return f"http://{host or '127.0.0.1'}:{port}"
    return f"http://{settings.tui.host}:{settings.tui.port}"


def find_serve(settings: Settings, url: str | None = None) -> Target | None:
    holder = serve_holder(settings.data_dir)
    if holder is None:
        return None
    where = url or api_url(settings)
    label = f"serve pid {holder.get('pid')} at {where.removeprefix('http://')}"
    return Target(where, read_token(settings.data_dir), label)


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
    command += ["--http", f"127.0.0.1:{port}", *(extra_args or [])]
    with (log_dir / "tui-gateway.log").open("ab") as log:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, data_dir, process)
    except LaunchError:
        stop_gateway(process)
        raise
    return Target(url, read_token(data_dir), f"own gateway pid {process.pid}", process)


def wait_ready(url: str, data_dir: Path, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        code = process.poll()
        if code is not None:
            raise LaunchError(
                f"the gateway exited with {code}; see {data_dir / 'logs' / 'tui-gateway.log'}"
            )
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
