"""`jarvis login`: print a fresh one-time login link to the web panel of the running
`jarvis serve` (the one `serve` printed at its start is used up by the first browser,
and scrolled away). The daemon is found as every client finds it
(:mod:`jarvis.discovery`); the link is asked with the token (``POST /api/login/link``).
Exit codes: 0 printed, 1 no daemon, no HTTP address, or the daemon refused."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jarvis.config import Settings

EXIT_OK, EXIT_FAILED = 0, 1
FIND_WAIT_S = 2.0


def register(subparsers: argparse._SubParsersAction) -> None:
    login = subparsers.add_parser(
        "login", help="print a fresh one-time login link to the running daemon's web panel"
    )
    login.set_defaults(handler=cmd_login)


def cmd_login(args: argparse.Namespace, settings: Settings) -> int:
    import httpx

    from jarvis.apiclient.http import detail, sync_client, what_failed
    from jarvis.discovery import DaemonNotFound, find_daemon

    try:
        daemon = find_daemon(settings.data_dir, wait_s=FIND_WAIT_S)
    except DaemonNotFound as exc:
        print(f"jarvis login: {exc}; is `jarvis serve` running?")
        return EXIT_FAILED
    if daemon is None:
        print(f"jarvis login: no `jarvis serve` holds {settings.data_dir}")
        return EXIT_FAILED
    if daemon.url is None:
        print(
            f"jarvis login: serve pid {daemon.pid} has no HTTP address for a browser "
            "(start it with --http)"
        )
        return EXIT_FAILED
    try:
        with sync_client(daemon.base_url, daemon.token, timeout=10) as client:
            response = client.post("/api/login/link")
    except httpx.HTTPError as exc:
        print(f"jarvis login: cannot reach the daemon at {daemon.base_url}: {what_failed(exc)}")
        return EXIT_FAILED
    if response.status_code != 201:
        print(f"jarvis login: the daemon answered {response.status_code}: {detail(response)}")
        return EXIT_FAILED
    print(f"{daemon.base_url}{response.json()['path']}")
    return EXIT_OK
