"""How long an OSWorld task takes to be ready for the agent on a Jarvis desktop.

Runs the OSWorld starter set (``jarvis/eval/suites/osworld_starter``) with its scripted
right solutions, one run after another, and measures per run the time from the run's start
(before its display exists) to the agent's first screenshot (its first step; the display,
the OSWorld profile and the task's setup steps included). Prints one JSON object: per
domain the p50 over its runs, against OSWorld's fixed 60 s wait after each VM reset; the
target is at most 10 s.

    python bench/osworld_setup.py [--repeat N] [--data-dir DIR]

The first run also starts the eval's process server (imports shared by all runs); a
warm-up run of the os task is made first and left out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from jarvis.eval.osworld.convert import write_suite
from jarvis.eval.osworld.tasks import load_tasks
from jarvis.eval.runner import Job, Plan, run_suite
from jarvis.eval.suite import SHIPPED, load_suite
from jarvis.eval.workspace import RunResult

OSWORLD_RESET_WAIT_S = 60.0
TARGET_S = 10.0


def first_step_at(data_dir: Path, run_id: str) -> float | None:
    """The wall-clock time of the run's first step (the agent's first screenshot)."""
    for journal in data_dir.glob(f"runs/*/{run_id}/events.jsonl"):
        for line in journal.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event.get("kind") == "step_started":
                return float(event["ts"])
    return None


class Timed:
    """One run after the other, each one's start time noted."""

    def __init__(self) -> None:
        self.started: dict[str, float] = {}

    def __call__(
        self, planned: list[Job], plan: Plan, done: Callable[[RunResult], None]
    ) -> list[RunResult]:
        results = []
        for job in planned:
            self.started[job[2]] = time.time()
            result = plan.run(job)
            results.append(result)
            done(result)
        return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--data-dir", type=Path)
    args = parser.parse_args()
    top = Path(tempfile.mkdtemp(prefix="jarvis-osworld-bench-"))
    data_dir = args.data_dir or top / "data"
    tasks = load_tasks(SHIPPED / "osworld_starter")
    domains = {t.id: t.domain for t in tasks}
    folder = write_suite(tasks, top / "tasks", top / "cache", max_steps=15)
    suite = load_suite(folder)
    warm = [t for t in suite if t.id == "starter-os-archive"]
    run_suite(warm, folder, data_dir, provider="oracle", model=None, stamp="warm")
    timed = Timed()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    results = run_suite(
        suite,
        folder,
        data_dir,
        provider="oracle",
        model=None,
        stamp=stamp,
        repeat=args.repeat,
        executor=timed,
    )
    ready: dict[str, list[float]] = {}
    for result in results:
        at = first_step_at(data_dir, result.run_id)
        if at is not None:
            ready.setdefault(domains[result.task], []).append(at - timed.started[result.run_id])
    p50 = {d: round(statistics.median(v), 2) for d, v in sorted(ready.items())}
    print(
        json.dumps(
            {
                "bench": "osworld_setup",
                "what": "task start to the agent's first screenshot, setup included (p50 s)",
                "runs": len(results),
                "scored_1": sum(1 for r in results if r.score == 1.0),
                "per_domain_p50_s": p50,
                "overall_p50_s": round(statistics.median(x for v in ready.values() for x in v), 2)
                if ready
                else None,
                "osworld_reset_wait_s": OSWORLD_RESET_WAIT_S,
                "target_s": TARGET_S,
                "met": bool(p50) and max(p50.values()) <= TARGET_S,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
