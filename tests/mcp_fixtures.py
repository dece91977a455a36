"""Helpers for the MCP tests: the demo server (tests/mcp_servers/demo_server.py) over
stdio (started by the client) or over streamable HTTP (uvicorn in a child process on a
free loopback port, restartable on the same port)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from jarvis.config import Settings, load_settings

ROOT = Path(__file__).resolve().parent.parent
SERVER_MODULE = "tests.mcp_servers.demo_server"


def stdio_entry(starts_file: Path, timeout: float = 3.0) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": ["-m", SERVER_MODULE, "stdio"],
        "cwd": str(ROOT),
        "env": {"DEMO_STARTS_FILE": str(starts_file)},
        "timeout": timeout,
    }


class HttpServer:
    """The demo server over streamable HTTP in a child process."""

    def __init__(self, starts_file: Path, kind: str = "http") -> None:
        self.starts_file = starts_file
        self.kind = kind
        self.port = 0
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> HttpServer:
        self.process = subprocess.Popen(
            [sys.executable, "-m", SERVER_MODULE, self.kind, str(self.port)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={"PATH": "/usr/bin:/bin", "DEMO_STARTS_FILE": str(self.starts_file)},
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError(f"the HTTP demo server did not start: {line!r}")
        self.port = int(line.split()[1])
        return self

    @property
    def url(self) -> str:
        path = "sse" if self.kind == "sse" else "mcp"
        return f"http://127.0.0.1:{self.port}/{path}"

    def wait_exit(self, timeout: float = 10.0) -> int | None:
        assert self.process is not None
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def write_mcp_json(data_dir: Path, servers: dict[str, Any]) -> Path:
    path = data_dir / "config" / "mcp.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def mcp_settings(data_dir: Path, **mcp_overrides: Any) -> Settings:
    """Settings with quick restarts and health checks (``mcp_overrides`` change them)."""
    mcp = {"restart_backoff_s": 0.1, "restart_backoff_max_s": 0.5, "health_interval_s": 0.5}
    mcp.update(mcp_overrides)
    return load_settings(data_dir, toolbox={"mcp": mcp, "skills": {"enabled": False}})


def wait_until(condition: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met before the deadline")
        time.sleep(0.02)


def starts(path: Path) -> int:
    return len(path.read_text().split()) if path.exists() else 0
