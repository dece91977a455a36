"""`jarvis stop`: ask the running `jarvis serve` to cancel its task, through its API, or
cancel the foreground `jarvis run`/`jarvis replay` of the data dir.

It finds the daemon of the data dir the way every client does (:mod:`jarvis.discovery`:
the address ``DATA/serve.lock`` names, the token in ``DATA/config/api_token``), or uses
``--url``, and posts ``POST /api/stop {"by": "cli"}``. When no daemon runs, the foreground
run or replay named in ``DATA/run.lock`` gets :data:`~jarvis.discovery.STOP_SIGNAL`, which
it takes as a brake (recorded as stopped by ``cli``). Exit codes: 0 a task is being
stopped, 1 no task was running or the daemon could not be found or reached.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jarvis.config import Settings

EXIT_OK, EXIT_FAILED = 0, 1
FIND_WAIT_S = 2.0


def register(subparsers: argparse._SubParsersAction) -> None:
    stop = subparsers.add_parser(
        "stop", help="cancel the task `jarvis serve` (or a `jarvis run`/`replay`) is running"
    )
    stop.add_argument(
        "--url", help="the daemon's API, e.g. http://127.0.0.1:8765 (default: from serve.lock)"
    )
    stop.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for it")
    stop.set_defaults(handler=cmd_stop)


def cmd_stop(args: argparse.Namespace, settings: Settings) -> int:
    import httpx

    from jarvis.apiclient.http import detail, sync_client, what_failed
    from jarvis.discovery import DaemonNotFound, find_daemon, read_token

    socket: Path | None = None
    try:
        if args.url:
            url, token = args.url.rstrip("/"), read_token(settings.data_dir)
        else:
            daemon = find_daemon(settings.data_dir, wait_s=FIND_WAIT_S)
            if daemon is None:
                return stop_foreground(settings)
            if daemon.url is None and daemon.socket is None:
                print(f"jarvis stop: serve pid {daemon.pid} has not opened its API (yet)")
                return EXIT_FAILED
            url, token = daemon.base_url, daemon.token
            if daemon.url is None:  # only a Unix socket
                socket = daemon.socket
    except DaemonNotFound as exc:
        print(f"jarvis stop: {exc}; is `jarvis serve` running?")
        return EXIT_FAILED
    try:
        with sync_client(url, token, socket=socket, timeout=args.timeout) as client:
            response = client.post("/api/stop", json={"by": "cli"})
    except httpx.HTTPError as exc:
        print(f"jarvis stop: cannot reach the daemon at {url}: {what_failed(exc)}")
        return EXIT_FAILED
    if response.status_code != 202:
        print(f"jarvis stop: the daemon answered {response.status_code}: {detail(response)}")
        return EXIT_FAILED
    if not response.json().get("stopping"):
        print("jarvis stop: no task is running")
        return EXIT_FAILED
    print("jarvis stop: the running task is being cancelled")
    return EXIT_OK


def stop_foreground(settings: Settings) -> int:
    """Cancel the foreground `jarvis run`/`jarvis replay` of the data dir, if one runs."""
    import os

    from jarvis.discovery import STOP_SIGNAL, find_foreground

    holder = find_foreground(settings.data_dir)
    if holder is None:
        print(
            f"jarvis stop: no `jarvis serve`, `jarvis run` or `jarvis replay` "
            f"is running for {settings.data_dir}"
        )
        return EXIT_FAILED
    pid, runs = int(holder["pid"]), holder.get("runs") or holder.get("command") or "a task"
    try:
        os.kill(pid, STOP_SIGNAL)
    except ProcessLookupError:
        print(f"jarvis stop: pid {pid} ({runs}) has just ended")
        return EXIT_FAILED
    except PermissionError:
        print(f"jarvis stop: pid {pid} ({runs}) belongs to another user")
        return EXIT_FAILED
    print(f"jarvis stop: pid {pid} ({runs}) is being cancelled")
    return EXIT_OK
