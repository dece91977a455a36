"""`jarvis worker --eval` processes for the fleet eval tests: each on the display its
environment names (taken out of the environment and passed as ``--display``), stopped
(terminated, killed after 30 s) when the block ends."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.redis_server import RedisServer


@contextmanager
def eval_workers(
    redis_server: RedisServer, data: Path, envs: dict[str, dict[str, str]]
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """One worker per name of ``envs``, with that environment and ``data / name``."""
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for name, given in envs.items():
            env = dict(given)
            display = env.pop("DISPLAY")
            args = ["worker", "--eval", "--redis", redis_server.bare_url, "--display", display]
            args += ["--name", name, "--data-dir", str(data / name)]
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "jarvis", *args],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        yield procs
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
