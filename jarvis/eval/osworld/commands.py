"""``jarvis eval`` on OSWorld tasks, and ``jarvis eval fetch TASKS --cache DIR``.

``jarvis eval PATH`` hands here when PATH holds OSWorld task JSON (or ``--format
osworld``): the tasks become an eval suite folder under the eval's output folder
(:mod:`jarvis.eval.osworld.convert`), which the usual runner and executors run; the
results are OSWorld's (:mod:`jarvis.eval.osworld.results`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jarvis.eval.osworld.tasks import OsTask, load_tasks, looks_like_osworld
from jarvis.eval.suite import SHIPPED, SuiteError

if TYPE_CHECKING:
    from jarvis.config import Settings
    from jarvis.eval.suite import EvalTask
    from jarvis.eval.workspace import RunResult

DEFAULT_MAX_STEPS = 15
"""OSWorld-Verified's shortest budget (it also reruns at 50 and 100)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "tasks",
        nargs="?",
        help="with `fetch`: the OSWorld tasks whose downloads go into --cache",
    )
    p.add_argument(
        "--format",
        dest="eval_format",
        choices=("auto", "jarvis", "osworld"),
        default="auto",
        help="the suite's format: Jarvis YAML or OSWorld task JSON (default: told apart)",
    )
    p.add_argument("--cache", type=Path, help="OSWorld download cache (default DATA/osworld-cache)")
    p.add_argument(
        "--solution",
        choices=("right", "wrong"),
        default="right",
        help="with --provider oracle: which scripted solution of an OSWorld task to play",
    )


def osworld_path(args: argparse.Namespace) -> Path | None:
    """The OSWorld tasks ``args.suite`` names (a path, or a shipped set), else None."""
    if args.eval_format == "jarvis":
        return None
    path = Path(args.suite)
    if not path.exists() and (SHIPPED / args.suite).is_dir():
        path = SHIPPED / args.suite
    if args.eval_format == "osworld" or looks_like_osworld(path):
        return path
    return None


def cache_dir(args: argparse.Namespace, settings: Settings) -> Path:
    return Path(args.cache or settings.data_dir / "osworld-cache").resolve()


def cmd_fetch(args: argparse.Namespace, settings: Settings) -> int:
    """``jarvis eval fetch TASKS --cache DIR``: fill the cache; 1 when a URL failed."""
    from jarvis.eval.osworld.cache import fetch

    if not args.tasks:
        print("jarvis: eval fetch needs the OSWorld tasks: jarvis eval fetch PATH", file=sys.stderr)
        return 2
    try:
        tasks = load_tasks(Path(args.tasks), args.only)
    except SuiteError as exc:
        print(f"jarvis: {exc}", file=sys.stderr)
        return 2
    cache = cache_dir(args, settings)
    urls = [u for t in tasks for u in t.urls()]
    fetched, failed = fetch(cache, urls, said=lambda line: print(line, file=sys.stderr))
    print(
        json.dumps(
            {"cache": str(cache), "urls": len(set(urls)), "fetched": fetched, "failed": failed}
        )
    )
    return 1 if failed else 0


def prepare(
    args: argparse.Namespace, settings: Settings, path: Path, out: Path
) -> tuple[list[EvalTask], Path, dict[str, str]]:
    """The eval tasks of the OSWorld tasks at ``path`` (their suite folder under ``out``),
    the folder, and each task's domain. Raises SuiteError."""
    from jarvis.eval.osworld.convert import write_suite
    from jarvis.eval.suite import load_suite

    found: list[OsTask] = load_tasks(path, args.only)
    steps = args.max_steps or DEFAULT_MAX_STEPS
    folder = write_suite(found, out / "tasks", cache_dir(args, settings), steps, args.solution)
    return load_suite(folder), folder, {t.id: t.domain for t in found}


def report(
    args: argparse.Namespace,
    results: list[RunResult],
    domains: dict[str, str],
    out: Path,
    head: dict[str, Any],
) -> int:
    """Print the summary (one JSON object) and write results.json; the exit code."""
    from jarvis.eval.osworld.results import summarize, write_results
    from jarvis.eval.summary import summarize as jarvis_summary
    from jarvis.eval.summary import write_html

    steps = args.max_steps or DEFAULT_MAX_STEPS
    summary = summarize(results, domains, repeat=args.repeat, max_steps=steps)
    path = write_results(summary, out)
    html = write_html(jarvis_summary(results, **head), results, out / "summary.html")
    rows = summary.pop("rows")
    print(
        json.dumps(
            {
                **head,
                **summary,
                "results": str(path),
                "html": str(html),
                "tasks": [
                    {k: r[k] for k in ("example_id", "domain", "status", "score", "not_run")}
                    for r in rows
                ],
            }
        )
    )
    return 0 if summary["total"]["pass_at_k"] == 1.0 else 1
