"""`jarvis eval SUITE`: run a suite and print one JSON summary.

Exit codes: 0 every run passed its check, 1 some did not, 2 usage (no such suite, a
malformed task file, a bad ``--workers``, a fleet that cannot be reached), 130 Ctrl+C.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jarvis.config import PROVIDERS
from jarvis.eval.osworld import commands as osworld_commands

if TYPE_CHECKING:
    from jarvis.config import Settings
    from jarvis.eval.runner import Executor
    from jarvis.eval.workspace import RunResult

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
FLEET_HAS_DISPLAYS = "--sandbox wayland runs here; the fleet's workers have their own displays"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "eval",
        help="run a suite of tasks, each on a fresh virtual display, and judge the results",
    )
    p.add_argument(
        "suite",
        help="a suite folder of YAML tasks, OSWorld task JSON (a file, a folder, its "
        "evaluation_examples), a shipped suite (starter, osworld_starter), or `fetch`",
    )
    p.add_argument("--repeat", type=int, default=1, help="runs per task (default 1)")
    p.add_argument(
        "--provider",
        dest="eval_provider",
        choices=(*PROVIDERS, "oracle"),
        help="the model provider; oracle plays each task's scripted steps (no model)",
    )
    p.add_argument("--model", dest="eval_model", help="model name for the chosen provider")
    p.add_argument("--only", action="append", help="run only this task id (repeat for more)")
    p.add_argument("--out", type=Path, help="where the HTML summary goes (default DATA/eval/)")
    p.add_argument(
        "--sandbox",
        nargs="?",
        const="x11",
        default="x11",
        choices=("x11", "wayland"),
        help="the private display each task runs on: x11 (Xvfb, the default) or wayland "
        "(a headless sway run as an unprivileged user)",
    )
    p.add_argument(
        "--max-steps", type=int, help="steps allowed per run (OSWorld-Verified: 15, 50, 100)"
    )
    osworld_commands.add_arguments(p)
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--workers",
        metavar="N",
        help="run N tasks at once, each on its own private display (default 1)",
    )
    where.add_argument(
        "--fleet",
        metavar="URL",
        help="run the tasks on the fleet's `jarvis worker --eval` processes (Redis URL)",
    )
    p.set_defaults(handler=cmd_eval)


def cmd_eval(args: argparse.Namespace, settings: Settings) -> int:
    from jarvis.eval.fleet import FleetEvalError
    from jarvis.eval.runner import eval_model, run_suite
    from jarvis.eval.suite import SuiteError, load_suite, resolve_suite
    from jarvis.eval.summary import summarize, write_html
    from jarvis.preflight import base_url_problem

    if args.suite == "fetch":
        return osworld_commands.cmd_fetch(args, settings)
    workers = _workers(args)
    if workers is None:
        return EXIT_USAGE
    stamp = time.strftime("%Y%m%d-%H%M%S")
    osworld = osworld_commands.osworld_path(args)
    out = args.out
    domains: dict[str, str] = {}
    try:
        if osworld is not None:
            out = out or settings.data_dir / "eval" / f"{stamp}-osworld"
            tasks, folder, domains = osworld_commands.prepare(args, settings, osworld, out)
        else:
            folder = resolve_suite(args.suite)
            tasks = load_suite(folder, args.only)
    except SuiteError as exc:
        print(f"jarvis: {exc}", file=sys.stderr)
        return EXIT_USAGE
    provider = args.eval_provider or settings.provider
    problem = base_url_problem(provider)
    if problem is not None:  # refused at once, not after every task's retries
        print(f"jarvis: {problem}", file=sys.stderr)
        return EXIT_USAGE
    model = eval_model(settings, provider, args.eval_model)
    common: dict[str, Any] = {
        "provider": provider,
        "model": args.eval_model,
        "repeat": args.repeat,
        "stamp": stamp,
        "on_result": _progress,
        "display": args.sandbox,
        "max_steps": args.max_steps,
    }
    try:
        executor = _executor(args, settings, workers)
        results = run_suite(tasks, folder, settings.data_dir, executor=executor, **common)
    except FleetEvalError as exc:
        print(f"jarvis: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("jarvis: eval interrupted; its displays are stopped", file=sys.stderr)
        return EXIT_INTERRUPTED
    head = {"suite": folder.name, "provider": provider, "model": model, "repeat": args.repeat}
    if osworld is not None:
        return osworld_commands.report(args, results, domains, out, head)
    summary = summarize(results, **head)
    out = out or settings.data_dir / "eval" / f"{stamp}-{folder.name}"
    html = write_html(summary, results, out / "summary.html")
    summary["html"] = str(html)
    print(json.dumps(summary))
    return EXIT_OK if summary["total"]["success_rate"] == 1.0 else EXIT_FAILED


def _workers(args: argparse.Namespace) -> int | None:
    """``--workers`` (1 without it); None, said on stderr, when it or ``--repeat`` or
    ``--max-steps`` is not a whole number of at least 1, or ``--fleet`` is asked for with a
    display kind the fleet's workers do not take."""
    from jarvis.eval.parallel import parse_workers

    if args.fleet and args.sandbox != "x11":
        print(f"jarvis: {FLEET_HAS_DISPLAYS}", file=sys.stderr)
        return None
    if args.repeat < 1 or (args.max_steps is not None and args.max_steps < 1):
        print("jarvis: --repeat and --max-steps must be at least 1", file=sys.stderr)
        return None
    try:
        return parse_workers(args.workers) if args.workers is not None else 1
    except ValueError as exc:
        print(f"jarvis: {exc}", file=sys.stderr)
        return None


def _progress(result: RunResult) -> None:
    mark = "PASS" if result.success else "FAIL"
    print(f"{mark}  {result.task} #{result.repeat}  {result.reason}", file=sys.stderr)


def _executor(args: argparse.Namespace, settings: Settings, workers: int) -> Executor:
    """Where the runs go: the fleet (``--fleet URL``), N local displays at once
    (``--workers N``), or one after another."""
    from jarvis.eval.fleet import Fleet
    from jarvis.eval.parallel import Threads
    from jarvis.eval.runner import Serial

    if args.fleet:
        return Fleet(args.fleet, settings)
    if workers > 1:
        return Threads(workers)
    return Serial()
