"""``jarvis tui``: the terminal cockpit (see :mod:`jarvis.tui.app`).

Exit codes: 0 quit normally, 1 the daemon could not be found or started, 2 bad settings
(an unknown key binding id).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from jarvis.config import Settings

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def register(subparsers: Any) -> None:
    """Add the ``tui`` command to the ``jarvis`` parser."""
    tui = subparsers.add_parser(
        "tui",
        help="the terminal cockpit: give tasks, watch them run, answer, cancel",
        description=(
            "Connects to the `jarvis serve` that holds the data dir through its control API; "
            "when none runs, starts the gateway itself and stops it on exit."
        ),
    )
    tui.add_argument(
        "--url", help="the API of a running serve (default: where DATA/serve.lock says it is)"
    )
    tui.add_argument(
        "--no-start",
        action="store_true",
        help="only connect to a running serve; never start the gateway",
    )
    tui.add_argument(
        "--replay", type=Path, metavar="EVENTS_JSONL", help="show a recorded run journal, offline"
    )
    tui.set_defaults(handler=cmd_tui)


def cmd_tui(args: argparse.Namespace, settings: Settings) -> int:
    from jarvis.tui.bindings import UnknownBinding, keymap

    try:
        keymap(settings.tui.keys)
    except UnknownBinding as exc:
        print(f"jarvis: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.replay is not None:
        return _replay(args.replay, settings)
    return _live(args, settings)


def _replay(path: Path, settings: Settings) -> int:
    from jarvis.tui.app import JarvisApp
    from jarvis.tui.backend import ReplayBackend

    if not path.is_file():
        print(f"jarvis: no such journal: {path}", file=sys.stderr)
        return EXIT_FAILED
    JarvisApp(ReplayBackend.from_file(path), settings.tui).run()
    return EXIT_OK


def _live(args: argparse.Namespace, settings: Settings) -> int:
    from httpx import AsyncHTTPTransport

    from jarvis.tui.app import JarvisApp
    from jarvis.tui.client import ApiBackend
    from jarvis.tui.launcher import LaunchError, find_serve, start_gateway, stop_gateway

    try:
        target = find_serve(settings, args.url)
        if target is None:
            if args.no_start:
                print(f"jarvis: no serve holds {settings.data_dir}", file=sys.stderr)
                return EXIT_FAILED
            print(f"jarvis tui: starting the gateway for {settings.data_dir} ...", flush=True)
            target = start_gateway(settings)
    except LaunchError as exc:
        print(f"jarvis: {exc}", file=sys.stderr)
        return EXIT_FAILED
    transport = None if target.socket is None else AsyncHTTPTransport(uds=str(target.socket))
    backend = ApiBackend(
        target.url,
        target.token,
        label=target.label,
        owns_gateway=target.owned,
        transport=transport,
    )
    try:
        JarvisApp(backend, settings.tui).run()
    finally:
        if target.process is not None:
            code = stop_gateway(target.process)
            print(f"jarvis tui: stopped the gateway (exit {code})", flush=True)
    return EXIT_OK
