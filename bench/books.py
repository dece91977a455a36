"""The books at scale: what one change to todos.md costs with a short and a long history.

Real files in a temporary data dir, through :class:`jarvis.gateway.todos.TodoList` as the
daemon uses it (one long-lived list; the file locked, written atomically and synced).

- small: ``--small`` (100) ended tasks made through the list (add, start, finish);
- large: ``--ended`` (10,000) ended tasks in todos.md as today's version left them (a data
  dir from before rotation), which the first start moves to the archive (timed: the
  upgrade), then ``--pending`` (1,000) pending tasks added through the list.

In each, ``--samples`` (200) rounds of ``add``, ``mark_in_progress`` and ``finish`` of a new
task, and ``next_pending``: p50 and p95 in ms. Targets: p50 at most 10 ms each at the
large size, large/small p50 at most 3. Also, where their benches are present, the router's
request in tokens with 0 and 1,000 open tasks (at most 3 times apart) and ``jarvis runs``
over 10,000 run folders (at most 1 s).

Prints one JSON object, with each target and whether it is met.

    .venv/bin/python bench/books.py [--small 100] [--ended 10000] [--pending 1000]
        [--samples 200]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from jarvis.gateway.todo_format import Todo, format_todo  # noqa: E402
from jarvis.gateway.todos import TodoList  # noqa: E402

TARGET_P50_MS = 10.0
TARGET_RATIO = 3.0
OPS = ("add", "mark_in_progress", "finish", "next_pending")


def old_history(path: Path, ended: int, start: int = 1) -> None:
    """A todos.md as the version before rotation wrote it: ``ended`` ended tasks, whole."""
    base = datetime(2026, 1, 1)
    sections = []
    for n in range(start, start + ended):
        made = base + timedelta(minutes=n)
        sections.append(
            format_todo(
                Todo(
                    id=f"T{n:03d}",
                    title=f"history task {n}",
                    description=f"history task {n}: open the report and file it",
                    status=("completed", "failed", "cancelled")[n % 3],
                    created=made,
                    started=made,
                    completed=made + timedelta(seconds=30),
                    source="inbox",
                    message_ids=[f"m-20260101-000000-{n:06x}"],
                    summary=f"done {n}",
                )
            )
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# Jarvis todos\n\n" + "\n\n".join(sections) + "\n", encoding="utf-8")


def timed(call: Callable[[], Any]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": round(statistics.median(ordered), 3),
        "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 3),
    }


def rounds(todos: TodoList, samples: int) -> dict[str, dict[str, float]]:
    """``samples`` tasks through their life, each call timed."""
    times: dict[str, list[float]] = {op: [] for op in OPS}
    for i in range(samples):
        made: list[Any] = []
        times["add"].append(timed(lambda: made.append(todos.add(f"bench task {i}"))))  # noqa: B023
        task_id = made[0].id
        times["next_pending"].append(timed(todos.next_pending))
        times["mark_in_progress"].append(timed(lambda: todos.mark_in_progress(task_id)))  # noqa: B023
        times["finish"].append(timed(lambda: todos.finish(task_id, "completed", "ok")))  # noqa: B023
    return {op: percentiles(values) for op, values in times.items()}


def small(data: Path, ended: int, samples: int) -> dict[str, Any]:
    todos = TodoList(data)
    for i in range(ended):
        task = todos.add(f"history task {i}")
        todos.mark_in_progress(task.id)
        todos.finish(task.id, "completed", "done")
    return {"ended": ended, "pending": 0, "ops": rounds(todos, samples)}


def large(data: Path, ended: int, pending: int, samples: int) -> dict[str, Any]:
    old_history(data / "todos.md", ended)
    todos = TodoList(data)
    upgrade_ms = timed(todos.all)
    for i in range(pending):
        todos.add(f"backlog task {i}", f"backlog task {i}: a long-waiting job")
    archived = sum(1 for _ in (data / "todos" / "archive").glob("*.md"))
    return {
        "ended": ended,
        "pending": pending,
        "upgrade_ms": round(upgrade_ms, 1),
        "archive_files": archived,
        "todos_md_kb": round((data / "todos.md").stat().st_size / 1024, 1),
        "ops": rounds(todos, samples),
    }


def other_books() -> dict[str, Any]:
    """The router's request size and ``jarvis runs``, from their own benches if present."""
    out: dict[str, Any] = {}
    with contextlib.suppress(ImportError):
        router = importlib.import_module("bench.router_size")
        zero, thousand = router.request_tokens(0), router.request_tokens(1000)
        out["router_tokens"] = {
            "open_0": zero,
            "open_1000": thousand,
            "ratio": round(thousand / zero, 2),
            "target_ratio": TARGET_RATIO,
            "met": thousand <= TARGET_RATIO * zero,
        }
    with contextlib.suppress(ImportError):
        runs = importlib.import_module("bench.runs_list")
        options = argparse.Namespace(runs=10_000, per_day=10, repeats=3, samples=100, small=10)
        found = runs.bench(options)
        out["runs"] = {key: found[key] for key in ("runs", "cli_s", "find_run_p50_ms", "met")}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--ended", type=int, default=10_000)
    parser.add_argument("--pending", type=int, default=1_000)
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="jarvis-bench-books-", dir=ROOT / "data") as tmp:
        result: dict[str, Any] = {
            "small": small(Path(tmp) / "small", args.small, args.samples),
            "large": large(Path(tmp) / "large", args.ended, args.pending, args.samples),
        }
    checks = {}
    for op in OPS:
        big, little = result["large"]["ops"][op]["p50"], result["small"]["ops"][op]["p50"]
        ratio = big / little if little else 0.0
        checks[op] = {
            "p50_large_ms": big,
            "ratio": round(ratio, 2),
            "met": big <= TARGET_P50_MS and ratio <= TARGET_RATIO,
        }
    result["targets"] = {"p50_ms": TARGET_P50_MS, "ratio": TARGET_RATIO, "ops": checks}
    result.update(other_books())
    result["met"] = all(c["met"] for c in checks.values()) and all(
        part.get("met", True) for part in (result.get("router_tokens", {}), result.get("runs", {}))
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
