"""`jarvis runs` and finding a run's folder with 10,000 run folders on disk.

Real parts: run folders written as the journal writer leaves them (``run.json`` and a
two-line journal each, ``--per-day`` a date folder, 10 by default: 1,000 days;
tests/run_folders.py), the run index (``runs/index/runs.sqlite``) built from them once,
and `jarvis runs` as a child process (the real CLI entry: interpreter start, imports,
settings, one page of 20).

- cli: wall time of `jarvis runs` (median of ``--repeats``); target at most 1 s. Most of
  it is the interpreter starting and importing: ``cli_main_p50_ms`` is the same command
  through ``jarvis.cli.main`` in this process, the part the history could change.
- list: :func:`jarvis.runs.reader.list_runs` for the first page and for a page deep in
  the history (its cursor), p50 in-process.
- find: :func:`jarvis.runs.reader.find_run` of runs spread over all days, p50.
- events_after: the journal after the seq of the last day's first run, p50.
- the same measures with ``--small`` runs, to show the cost does not grow with history;
  and the time the index took to build from the folders (once, as after a deletion).

Prints one JSON object, with the target and whether it is met, and the load average
(the machine may be shared: a loaded one makes the child process slow, whatever it reads).

    .venv/bin/python bench/runs_list.py [--runs 10000] [--per-day 10] [--repeats 5]
        [--samples 200] [--small 10]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_CLI_S = 1.0


def make_data(root: Path, runs: int, per_day: int) -> tuple[Path, list[Any], float]:
    """A data dir with ``runs`` run folders, and the seconds its index took to build."""
    from jarvis.runs.reader import list_runs
    from tests.run_folders import write_runs

    data = root / f"data-{runs}"
    made = write_runs(data, runs, per_day)
    start = time.perf_counter()
    list_runs(data, 1)
    return data, made, time.perf_counter() - start


def cli_seconds(data: Path, repeats: int) -> list[float]:
    """Wall times of `python -m jarvis runs --data-dir DATA` (output checked, then dropped)."""
    env = os.environ | {"PYTHONPATH": str(ROOT), "ANONYMIZED_TELEMETRY": "False"}
    command = [sys.executable, "-m", "jarvis", "runs", "--data-dir", str(data)]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - start)
        assert done.stdout.strip(), done.stderr
    return times


def cli_main(data: Path) -> None:
    """`jarvis runs --data-dir DATA` through ``jarvis.cli.main`` here (no child process)."""
    from jarvis.cli import main as jarvis

    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert jarvis(["runs", "--data-dir", str(data)]) == 0
    assert out.getvalue().strip()


def p50_ms(call: Callable[[], object], samples: int) -> float:
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 3)


def measure(data: Path, made: list[Any], args: argparse.Namespace) -> dict[str, Any]:
    """The timings of one data dir (see the module doc)."""
    from jarvis.runs.reader import events_after, find_run, list_runs

    pick = random.Random(7)
    ids = [made[pick.randrange(len(made))] for _ in range(args.samples)]
    found = iter(ids * 2)

    def find() -> None:
        run = next(found)
        assert find_run(data, run.task_id) == run.folder

    deep = list_runs(data, max(1, len(made) - 30)).next
    after = made[max(0, len(made) - args.per_day)].first_seq
    return {
        "runs": len(made),
        "cli_s": round(statistics.median(cli_seconds(data, args.repeats)), 3),
        "cli_main_p50_ms": p50_ms(lambda: cli_main(data), max(3, args.samples // 20)),
        "list_first_page_p50_ms": p50_ms(lambda: list_runs(data, 20), args.samples // 4),
        "list_deep_page_p50_ms": p50_ms(lambda: list_runs(data, 20, deep), args.samples // 4),
        "find_run_p50_ms": p50_ms(find, args.samples),
        "events_after_last_day_p50_ms": p50_ms(
            lambda: sum(1 for _ in events_after(data, after)), max(1, args.samples // 10)
        ),
    }


def bench(args: argparse.Namespace) -> dict[str, Any]:
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="jarvis-runs-bench-") as tmp:
        big, made, built = make_data(Path(tmp), args.runs, args.per_day)
        small, few, _ = make_data(Path(tmp), args.small, args.per_day)
        large = measure(big, made, args)
        little = measure(small, few, args)
    return {
        **large,
        "index_build_s": round(built, 3),
        "small": little,
        "cli_ratio_large_to_small": round(large["cli_s"] / little["cli_s"], 2),
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2), os.cpu_count()],
        "target": {"cli_s": TARGET_CLI_S},
        "met": large["cli_s"] <= TARGET_CLI_S,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10_000, help="run folders on disk")
    parser.add_argument("--per-day", type=int, default=10, help="run folders a date folder")
    parser.add_argument("--repeats", type=int, default=5, help="`jarvis runs` calls to time")
    parser.add_argument("--samples", type=int, default=200, help="find_run calls to time")
    parser.add_argument("--small", type=int, default=10, help="run folders of the comparison")
    args = parser.parse_args()
    print(json.dumps(bench(args)))


if __name__ == "__main__":
    main()
