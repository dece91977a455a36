"""``jarvis serve``: run the gateway daemon (see :mod:`jarvis.gateway.gateway`).

Exit codes: 0 stopped cleanly (SIGTERM, SIGINT, or ``--once`` done), 1 could not start
(no key, no display, another ``serve`` holds the data dir, the API's port is taken) or
stopped on an error. Unless ``--once``, the control API and web panel (:mod:`jarvis.api`)
run in the same loop (``--http HOST:PORT``, ``--http off``, ``--unix-socket PATH``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jarvis.config import PROVIDERS, Settings
from jarvis.safety.wayland_sandbox import SANDBOX_KINDS

if TYPE_CHECKING:
    from jarvis.desktop.backend import Where
    from jarvis.desktop.x11 import XDisplay
    from jarvis.gateway.gateway import Gateway
    from jarvis.gateway.runner import RunnerFactory

EXIT_OK, EXIT_FAILED = 0, 1
PARENT_POLL_S = 0.5
log = logging.getLogger(__name__)


def _number(value: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None


def _non_negative(value: str) -> float:
    number = _number(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {value}")
    return number


def _positive(value: str) -> float:
    number = _number(value)
    if number <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0: {value}")
    return number


def _http(value: str) -> str:
    from jarvis.api.settings import parse_http

    try:
        parse_http(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def register(subparsers: Any) -> None:
    """Add the ``serve`` command to the ``jarvis`` parser."""
    serve = subparsers.add_parser(
        "serve",
        help="run the gateway: take messages from the inbox and channels, run them as tasks",
        description=(
            "Watch messages/inbox.md and messages/drop/, route each message onto todos.md "
            "and run the tasks one at a time on this desktop. SIGTERM or Ctrl+C stops "
            "cleanly: a running task goes back to pending."
        ),
    )
    serve.add_argument("--once", action="store_true", help="process everything waiting, then exit")
    serve.add_argument("--provider", choices=PROVIDERS)
    serve.add_argument("--model", help="model name for the chosen provider")
    serve.add_argument("--max-steps", type=int, help="step bound for each task")
    serve.add_argument("--tool-mode", choices=["native", "text", "auto"])
    serve.add_argument(
        "--poll",
        type=_positive,
        default=2.0,
        metavar="SECONDS",
        help="fallback scan interval when no file event comes (default 2)",
    )
    serve.add_argument(
        "--polling-observer",
        action="store_true",
        help="watch files by polling (for file systems without change events)",
    )
    serve.add_argument(
        "--compress-every",
        type=_non_negative,
        default=24.0,
        metavar="HOURS",
        help="compress long-term memory this often when idle; 0 never (default 24)",
    )
    serve.add_argument(
        "--with-parent",
        type=int,
        metavar="PID",
        help="stop (as SIGTERM does) when process PID is no longer this one's parent: the "
        "gateway a TUI or an MCP server starts ends with it however it ends",
    )
    _add_where(serve)
    serve.set_defaults(handler=cmd_serve)


def _add_where(serve: argparse.ArgumentParser) -> None:
    """Where the API listens, which display the tasks run on, and the fleet."""
    serve.add_argument(
        "--http",
        type=_http,
        metavar="HOST:PORT",
        help="where the control API and web panel listen: HOST:PORT, :PORT, or off "
        "(default: api.http, 127.0.0.1:8765); a host other than loopback only when named",
    )
    serve.add_argument(
        "--unix-socket", type=Path, metavar="PATH", help="also serve the API on this Unix socket"
    )
    serve.add_argument(
        "--sandbox",
        nargs="?",
        const="x11",
        choices=SANDBOX_KINDS,
        help="run every task on a private virtual display (safety.sandbox): x11 (the "
        "default, Xvfb) or wayland (a headless sway)",
    )
    serve.add_argument(
        "--fleet",
        metavar="URL",
        help="be the coordinator of a fleet: tasks go through this Redis (redis:// or "
        "rediss://) to `jarvis worker` processes (default: fleet.redis_url)",
    )
    serve.add_argument(
        "--local-worker",
        action="store_true",
        help="with --fleet: also run one worker of the fleet in this daemon, on its display",
    )


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from jarvis.desktop.x11 import XDisplay

    if args.with_parent is not None:
        follow_parent(args.with_parent)
    args.fleet = args.fleet or settings.fleet.redis_url
    if args.local_worker and not args.fleet:
        print(
            "jarvis: --local-worker is a worker of a fleet; name it with --fleet URL",
            file=sys.stderr,
        )
        return EXIT_FAILED
    if args.fleet:
        from jarvis.fleet.connection import FleetUrlError, check_url

        if args.once:
            print("jarvis: --once runs tasks here; a fleet's coordinator serves", file=sys.stderr)
            return EXIT_FAILED
        try:
            args.fleet = check_url(args.fleet)
        except FleetUrlError as exc:
            print(f"jarvis: {exc}", file=sys.stderr)
            return EXIT_FAILED

    person = XDisplay.from_env()  # read once here; the daemon's Desktop is made for a display
    if args.fleet and not args.local_worker:  # no task runs here: no display is needed
        return _serve_here(args, settings, person, person, display=False)
    kind = args.sandbox or ("x11" if settings.safety.sandbox.enabled else None)
    from jarvis.preflight import sandbox_problem

    if kind is not None and (problem := sandbox_problem(settings, person)) is not None:
        print(problem)  # said before a private display is started for nothing
        return EXIT_FAILED
    if kind is not None:
        from jarvis.safety.wayland_sandbox import on_private_display

        return on_private_display(
            kind, settings, lambda box: _serve_here(args, settings, box, person)
        )
    where = own_display(settings, person)
    return EXIT_FAILED if where is None else _serve_here(args, settings, where, person)


def own_display(settings: Settings, person: XDisplay) -> Where | None:
    """The display a daemon's or a worker's tasks run on without ``--sandbox``: the one
    it was started in, as ``desktop.backend`` chooses it (the person's X display, or the
    compositor of their Wayland session); None, said in one line, when none can be driven."""
    from jarvis.desktop.backend import BackendError, task_display

    try:
        return task_display(settings.desktop.backend, os.environ, person)
    except BackendError as exc:
        print(f"jarvis: {exc}", file=sys.stderr)
        return None


def _serve_here(
    args: argparse.Namespace,
    settings: Settings,
    where: Where,
    person: XDisplay,
    *,
    display: bool = True,
) -> int:
    """The daemon with its agent on the display ``where``, the kill switch on ``person``
    (``display`` False: a coordinator without a local worker, whose tasks all run on
    the fleet's workers, starts without one)."""
    from jarvis.preflight import cannot_start

    problem = cannot_start(settings, where, display=display)
    if problem is not None:
        print(problem)
        return EXIT_FAILED
    return asyncio.run(_serve(args, settings, where, person))


async def _serve(
    args: argparse.Namespace, settings: Settings, where: Where, person: XDisplay
) -> int:
    from jarvis.api.server import ApiUnavailable
    from jarvis.gateway.gateway import Gateway, GatewayOptions
    from jarvis.owner_lock import LockHeld

    options = GatewayOptions(
        once=args.once,
        poll_interval_s=args.poll,
        use_polling=args.polling_observer,
        compress_every_s=args.compress_every * 3600.0,
        handle_signals=True,
    )
    runner = pick_runner(args.fleet, local_worker=args.local_worker)
    gateway = Gateway(settings, options=options, where=where, person=person, runner=runner)
    if not args.once:
        _add_api(gateway, args, settings)
        gateway.services.append(lambda: _banner(settings, args.fleet))  # once the dir is held
    try:
        report = await gateway.run()
    except (LockHeld, ApiUnavailable) as exc:  # the data dir or the port is taken
        print(f"jarvis: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except Exception:  # the edge: a daemon failure is logged and turned into an exit code
        log.exception("jarvis serve stopped on an error; the next start recovers")
        return EXIT_FAILED
    counts = Counter(run.status for run in report.runs)
    done = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "none"
    print(f"jarvis serve: ran {len(report.runs)} task(s): {done}", flush=True)
    return EXIT_OK


def follow_parent(parent: int, interval_s: float = PARENT_POLL_S) -> threading.Thread:
    """Stop this process as SIGTERM does (a running task goes back to pending) once
    ``parent`` is no longer its parent: the TUI that started it was closed with its
    terminal (SIGHUP), killed, or quit without stopping it. Returns the watching thread."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval_s)
        log.warning("the parent process %d is gone; stopping", parent)
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=watch, name="parent-watch", daemon=True)
    thread.start()
    return thread


def pick_runner(fleet: str | None, *, local_worker: bool = False) -> RunnerFactory:
    """What runs the tasks: the fleet's workers through ``fleet`` (its Redis; one of them in
    this process with ``local_worker``), or else one agent here."""
    if fleet:
        from jarvis.fleet.serving import fleet_runner

        return fleet_runner(fleet, local_worker=local_worker)
    from jarvis.gateway.runner import open_embedded

    return open_embedded


@contextlib.asynccontextmanager
async def _banner(settings: Settings, fleet: str | None = None) -> AsyncIterator[None]:
    """Say that the daemon is up: only once it holds the data dir and its API listens."""
    print(
        f"jarvis serve: pid {os.getpid()}, data {settings.data_dir}; waiting for messages "
        "(drop .md files into messages/drop/ or use `jarvis inbox add`; Ctrl+C stops)",
        flush=True,
    )
    if fleet:
        from jarvis.fleet.connection import shown

        print(f"jarvis serve: tasks go to the fleet's workers at {shown(fleet)}", flush=True)
    if settings.email.enabled:
        print(f"jarvis serve: reading mail for {settings.email.address}", flush=True)
    yield


def _add_api(gateway: Gateway, args: argparse.Namespace, settings: Settings) -> None:
    """The control API and web panel, unless ``--http off`` and no Unix socket."""
    from jarvis.api.server import HttpService
    from jarvis.api.settings import parse_http

    address = parse_http(args.http or settings.api.http)
    unix = args.unix_socket or settings.api.unix_socket
    if address is None and unix is None:
        return
    service = HttpService(gateway, address, unix)
    gateway.services.append(service.running)
