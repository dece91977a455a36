"""Finding the running ``jarvis serve`` of a data dir: the one way every client does it.

A daemon holds ``DATA/serve.lock`` and writes into it who it is (pid, host, command) and,
once its control API listens, where: ``api`` (``http://HOST:PORT``, the port it actually
bound) and ``api_socket`` (a Unix socket, when it has one). The bearer token is
``DATA/config/api_token``. ``jarvis stop``, ``jarvis tui`` and scripts read these two
files through :func:`find_daemon`; nothing here imports the daemon's code.

A foreground ``jarvis run`` or ``jarvis replay`` holds ``DATA/run.lock`` (the same owner
lock, naming what it runs) while it runs, so ``jarvis stop`` reaches it too when no daemon
runs: :func:`find_foreground` names it and :data:`STOP_SIGNAL` is what it listens for.

From a shell: ``python -m jarvis.discovery --data-dir DATA`` prints the daemon as one JSON
object (pid, url, socket; never the token) and exits 0, or says why not and exits 1.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import signal
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

LOCK_FILE = "serve.lock"
RUN_LOCK_FILE = "run.lock"
STOP_SIGNAL = signal.SIGUSR1
"""What ``jarvis stop`` sends a foreground run or replay: it cancels as a brake, recorded as
stopped by ``cli`` (SIGTERM and Ctrl+C are recorded as ``signal`` and ``ctrl+c``)."""
TOKEN_FILE = Path("config") / "api_token"
ANY_ADDRESS = ("0.0.0.0", "::", "[::]", "")
POLL_S = 0.05


class DaemonNotFound(Exception):
    """No daemon to reach for this data dir; the message says why."""


@dataclass(frozen=True)
class Daemon:
    """A running ``jarvis serve``: its pid, API URL (None with ``--http off``), Unix socket
    (or None) and the token clients send."""

    pid: int
    url: str | None
    socket: Path | None
    token: str
    holder: dict[str, Any]

    @property
    def base_url(self) -> str:
        """The URL to send requests to; over the Unix socket (when there is no TCP API) the
        host is ``localhost``, which the API accepts on its socket."""
        return self.url or "http://localhost"

    @property
    def label(self) -> str:
        where = self.url.removeprefix("http://") if self.url else f"unix socket {self.socket}"
        return f"serve pid {self.pid} at {where}"


def serve_holder(data_dir: Path) -> dict[str, Any] | None:
    """What ``DATA/serve.lock`` says about its holder, when that process is alive on this
    host; None when no daemon runs (no file, an empty one, a dead pid)."""
    try:
        holder = json.loads((Path(data_dir) / LOCK_FILE).read_text(encoding="utf-8"))
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


def find_foreground(data_dir: Path) -> dict[str, Any] | None:
    """What ``DATA/run.lock`` says about the foreground ``jarvis run``/``jarvis replay`` of
    ``data_dir`` (pid, ``runs``), or None when none runs: no file, an empty one, or one whose
    lock nobody holds (a process that died leaves its name but not its lock)."""
    path = Path(data_dir) / RUN_LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            pass  # held: someone runs
        else:
            return None  # nobody holds it: stale
        data = os.read(fd, 64 * 1024)
    finally:
        os.close(fd)
    try:
        holder = json.loads(data)
    except ValueError:
        return None
    if not isinstance(holder, dict) or holder.get("host") not in (None, socket.gethostname()):
        return None
    if not isinstance(holder.get("pid"), int):
        return None
    return holder


@contextlib.contextmanager
def foreground(data_dir: Path, runs: str) -> Iterator[None]:
    """Name this process in ``DATA/run.lock`` while inside (``runs``: what, e.g. ``run: TASK``
    or ``replay T001``), for ``jarvis stop``. When another foreground run holds it, or the
    data dir is read-only, nothing is written: only the first one is reachable."""
    from jarvis.owner_lock import LockHeld, OwnerLock

    lock = OwnerLock(Path(data_dir) / RUN_LOCK_FILE, "the foreground run")
    try:
        lock.acquire()
        lock.update(runs=runs[:200])
    except (LockHeld, OSError):
        lock.release()
    try:
        yield
    finally:
        lock.release()


def read_token(data_dir: Path) -> str:
    """The API token of the data dir's daemon; DaemonNotFound naming the file if unreadable."""
    path = Path(data_dir) / TOKEN_FILE
    try:
        token = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise DaemonNotFound(f"cannot read the API token {path}: {exc.strerror}") from None
    if not token:
        raise DaemonNotFound(f"the API token file {path} is empty")
    return token


def client_url(url: str) -> str:
    """The URL a client on this machine uses for an API bound to ``url``: an address that
    means every interface (0.0.0.0, ::) is reached on loopback."""
    parts = urlsplit(url.rstrip("/"))
    host = parts.hostname or ""
    if host in ANY_ADDRESS or f"[{host}]" in ANY_ADDRESS:
        loopback = "127.0.0.1" if ":" not in host else "[::1]"
        netloc = f"{loopback}:{parts.port}" if parts.port else loopback
        parts = parts._replace(netloc=netloc)
    return urlunsplit(parts)


def find_daemon(data_dir: Path, wait_s: float = 0.0) -> Daemon | None:
    """The daemon that holds ``data_dir``, or None when none runs. A daemon that holds the
    lock but has not named its API yet (starting up) is waited for up to ``wait_s``; after
    that it is returned with ``url`` and ``socket`` None. Raises DaemonNotFound when one
    runs but its token cannot be read."""
    deadline = time.monotonic() + wait_s
    while True:
        holder = serve_holder(data_dir)
        if holder is None:
            return None
        named = "api" in holder or "api_socket" in holder
        if named or time.monotonic() >= deadline:
            break
        time.sleep(POLL_S)
    url = holder.get("api")
    unix = holder.get("api_socket")
    return Daemon(
        pid=int(holder["pid"]),
        url=client_url(url) if isinstance(url, str) and url else None,
        socket=Path(unix) if isinstance(unix, str) and unix else None,
        token=read_token(data_dir),
        holder=holder,
    )


def main(argv: list[str] | None = None) -> int:
    from jarvis.config import resolve_data_dir

    parser = argparse.ArgumentParser(
        prog="python -m jarvis.discovery", description="Where the data dir's jarvis serve is."
    )
    parser.add_argument("--data-dir", help="data directory (default: $JARVIS_DATA_DIR or ./data)")
    parser.add_argument("--wait", type=float, default=0.0, metavar="SECONDS")
    args = parser.parse_args(argv)
    data_dir = resolve_data_dir(args.data_dir)
    try:
        daemon = find_daemon(data_dir, args.wait)
    except DaemonNotFound as exc:
        print(f"jarvis: {exc}", file=sys.stderr)
        return 1
    if daemon is None:
        print(f"jarvis: no `jarvis serve` holds {data_dir}", file=sys.stderr)
        return 1
    socket_path = str(daemon.socket) if daemon.socket else None
    print(json.dumps({"pid": daemon.pid, "url": daemon.url, "socket": socket_path}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
