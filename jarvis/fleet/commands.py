"""``jarvis worker`` (one desktop of a fleet) and ``jarvis workers`` (the fleet's workers).

Exit codes: 0 stopped cleanly (SIGTERM, SIGINT), 1 could not start (no key, no display,
a bad Redis URL), 2 usage.

Side: the worker.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jarvis.config import PROVIDERS, Settings
from jarvis.desktop.x11 import XDisplay
from jarvis.safety.wayland_sandbox import SANDBOX_KINDS

if TYPE_CHECKING:
    from jarvis.desktop.backend import Where
    from jarvis.fleet.kinds import TaskHandler

EXIT_OK, EXIT_FAILED = 0, 1
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
DISPLAY = re.compile(r"^[A-Za-z0-9.\-]*:\d+(\.\d+)?$")
URL_ENV = "JARVIS_REDIS_URL"


def _name(value: str) -> str:
    if not NAME.match(value):
        raise argparse.ArgumentTypeError(f"a worker name is letters, digits, _ . - : {value!r}")
    return value


def _display(value: str) -> str:
    if not DISPLAY.match(value):
        raise argparse.ArgumentTypeError(f"not an X display (like :1): {value!r}")
    return value


def _seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0: {value}")
    return number


def _redis_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--redis",
        metavar="URL",
        default=os.environ.get(URL_ENV),  # else fleet.redis_url
        help=f"the fleet's Redis: redis://[:PASSWORD@]HOST:PORT/DB or rediss:// "
        f"(default ${URL_ENV}; a password may come from $JARVIS_REDIS_PASSWORD)",
    )


def register(subparsers: Any) -> None:
    worker = subparsers.add_parser(
        "worker",
        help="run tasks of a fleet on this desktop, one at a time (DESIGN.md section 10)",
        description="Claim tasks from the fleet's Redis stream and run them on one desktop. "
        "SIGTERM or Ctrl+C gives the running task back to the queue at once.",
    )
    _redis_arg(worker)
    where = worker.add_mutually_exclusive_group()
    where.add_argument("--display", type=_display, help="the X display to work on (like :1)")
    where.add_argument(
        "--sandbox",
        nargs="?",
        const="x11",
        choices=SANDBOX_KINDS,
        help="work on a private virtual display of its own: x11 (the default, Xvfb) or "
        "wayland (a headless sway)",
    )
    worker.add_argument("--name", type=_name, help="this worker's name (default HOST-PID)")
    worker.add_argument(
        "--host",
        type=_name,
        help="the host name it reports (default this machine's); a coordinator on another "
        "host relays its live view through Redis",
    )
    worker.add_argument(
        "--lease",
        type=_seconds,
        metavar="SECONDS",
        help="lease time (default fleet.lease_s, 30)",
    )
    worker.add_argument(
        "--eval",
        action="store_true",
        help="also run `jarvis eval --fleet` tasks: their setup and check commands run here",
    )
    worker.add_argument("--provider", choices=PROVIDERS)
    worker.add_argument("--model", help="model name for the chosen provider")
    worker.add_argument("--max-steps", type=int, help="step bound for each task")
    worker.add_argument(
        "--data-dir", help="this worker's scratch folder (default: a temporary one)"
    )
    worker.add_argument("-v", "--verbose", action="store_true", help="debug logging to stderr")
    worker.set_defaults(handler=cmd_worker)

    listing = subparsers.add_parser("workers", help="list the fleet's workers")
    _redis_arg(listing)
    listing.add_argument("--json", action="store_true", help="one JSON document on stdout")
    listing.add_argument("--data-dir", help=argparse.SUPPRESS)
    listing.add_argument("-v", "--verbose", action="store_true", help=argparse.SUPPRESS)
    listing.set_defaults(handler=cmd_workers)


def _url(args: argparse.Namespace, settings: Settings) -> str | None:
    from jarvis.fleet.connection import FleetUrlError, check_url

    args.redis = args.redis or settings.fleet.redis_url
    if not args.redis:
        print(f"jarvis: name the fleet's Redis with --redis URL (or ${URL_ENV})", file=sys.stderr)
        return None
    try:
        return check_url(args.redis)
    except FleetUrlError as exc:
        print(f"jarvis: {exc}", file=sys.stderr)
        return None


def worker_settings(settings: Settings, scratch: Path | None) -> Settings:
    """A worker's settings: no long-term store (the coordinator remembers), and its data
    dir the scratch folder when there is one."""
    update: dict[str, Any] = {"long_term_memory": False}
    if scratch is not None:
        update["data_dir"] = scratch
    return settings.model_copy(update=update)


def cmd_worker(args: argparse.Namespace, settings: Settings) -> int:
    url = _url(args, settings)
    if url is None:
        return EXIT_FAILED
    scratch = None
    if args.data_dir is None and not os.environ.get("JARVIS_DATA_DIR"):
        scratch = Path(tempfile.mkdtemp(prefix="jarvis-worker-"))
    settings = worker_settings(settings, scratch)
    try:
        from jarvis.gateway.serve_command import own_display
        from jarvis.preflight import sandbox_problem

        started_on = XDisplay.from_env()  # a named display opens with this process's cookie
        kind = args.sandbox or ("x11" if settings.safety.sandbox.enabled else None)
        if kind is not None and (problem := sandbox_problem(settings, started_on)):
            print(problem, file=sys.stderr)  # said before a private display is started
            return EXIT_FAILED
        if kind is not None:
            from jarvis.safety.wayland_sandbox import on_private_display

            return on_private_display(kind, settings, lambda box: _work(args, settings, url, box))
        # one process, one desktop: the display named, else the one it was started in
        if args.display:
            return _work(args, settings, url, XDisplay(args.display, started_on.xauthority))
        where = own_display(settings, started_on)
        return EXIT_FAILED if where is None else _work(args, settings, url, where)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def _work(args: argparse.Namespace, settings: Settings, url: str, where: Where) -> int:
    from jarvis.preflight import cannot_start

    problem = cannot_start(settings, where)
    if problem is not None:
        print(problem, file=sys.stderr)
        return EXIT_FAILED
    name = args.name or f"{socket.gethostname()}-{os.getpid()}"
    lease = args.lease or settings.fleet.lease_s
    kinds = task_kinds(evals=args.eval)
    host = args.host or socket.gethostname()
    return asyncio.run(_serve_worker(settings, url, name, host, where, int(lease * 1000), kinds))


def task_kinds(*, evals: bool) -> dict[str, TaskHandler]:
    """The task kinds a ``jarvis worker`` runs besides the agent's tasks: with ``--eval``,
    eval's (its setup and check commands run here); without, eval's runs are refused.
    This command is a root: it wires eval into the fleet, which never imports eval."""
    from jarvis.eval.remote import EVAL_KIND, run_claimed
    from jarvis.fleet.kinds import refusing

    if evals:
        return {EVAL_KIND: run_claimed}
    return {EVAL_KIND: refusing("this worker runs no eval tasks (start it with --eval)")}


async def _serve_worker(
    settings: Settings,
    url: str,
    name: str,
    host: str,
    where: Where,
    lease: int,
    kinds: dict[str, TaskHandler],
) -> int:
    from jarvis.fleet.connection import client
    from jarvis.fleet.worker import FleetWorker, WorkerOptions
    from jarvis.fleet.worker_views import screen_size

    def say(line: str) -> None:
        print(f"jarvis worker: {line}", file=sys.stderr, flush=True)

    redis = client(url)
    options = WorkerOptions(
        name,
        url,
        where,
        screen_size(where),
        lease_ms=lease,
        heartbeat_ttl_s=settings.fleet.heartbeat_ttl_s,
        kinds=kinds,
        host=host,
    )
    try:
        worker = FleetWorker(settings, redis, options, say)
        code = await worker.run()
        say(f"stopped after {worker.ran} task(s)")
        return code
    finally:
        await redis.aclose()


def cmd_workers(args: argparse.Namespace, settings: Settings) -> int:
    url = _url(args, settings)
    if url is None:
        return EXIT_FAILED
    from redis.exceptions import RedisError

    from jarvis.fleet.connection import reason, shown

    try:
        found = asyncio.run(_list(url))
    except (RedisError, OSError) as exc:
        print(f"jarvis: cannot reach Redis at {shown(url)}: {reason(exc)}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        print(json.dumps({"workers": found}, indent=2))
        return EXIT_OK
    if not found:
        print("no workers (none has sent a heartbeat lately)")
    now = time.time()
    for w in found:
        age = max(0.0, now - float(w.get("heartbeat", 0)))
        task = w.get("task") or "-"
        print(
            f"{w['name']}  {w.get('host', '?')}  {w.get('display', '?')} {w.get('size', '')}  "
            f"{w.get('state', '?')}  task {task}  (heard {age:.0f}s ago)"
        )
    return EXIT_OK


async def _list(url: str) -> list[dict[str, Any]]:
    from jarvis.fleet.connection import client
    from jarvis.fleet.registry import workers

    redis = client(url)
    try:
        return await workers(redis)
    finally:
        await redis.aclose()
