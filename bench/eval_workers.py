"""Serial eval against ``--workers 2`` on the starter suite with the scripted model.

Runs ``jarvis eval starter --provider oracle`` twice, once serially and once with
``--workers 2`` (each run on its own private Xvfb), and prints one JSON object: both wall
times, their ratio, whether the results are the same (task, success, reason, status,
steps per run) and whether the ratio meets the target (at most 0.65).

    python bench/eval_workers.py [--workers 2] [--suite starter]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGET_RATIO = 0.65


def run(suite: str, data_dir: Path, *extra: str) -> tuple[float, dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "XAUTHORITY")}
    env["PYTHONPATH"] = str(ROOT)
    env.setdefault("ANONYMIZED_TELEMETRY", "False")
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "jarvis",
            "eval",
            suite,
            "--provider",
            "oracle",
            "--data-dir",
            str(data_dir),
            *extra,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    wall = time.monotonic() - started
    if not done.stdout.strip():
        raise SystemExit(f"eval failed: {done.stderr.strip()[-500:]}")
    return wall, json.loads(done.stdout.strip().splitlines()[-1])


def results(summary: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (r["task"], r["repeat"], r["success"], r["reason"], r["status"], r["steps"])
        for r in summary["runs"]
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--suite", default="starter")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="jarvis-bench-eval-") as tmp:
        serial_s, serial = run(args.suite, Path(tmp) / "serial")
        parallel_s, parallel = run(args.suite, Path(tmp) / "par", "--workers", str(args.workers))
    ratio = parallel_s / serial_s
    print(
        json.dumps(
            {
                "suite": args.suite,
                "runs": serial["total"]["runs"],
                "serial_s": round(serial_s, 2),
                "workers": args.workers,
                "parallel_s": round(parallel_s, 2),
                "ratio": round(ratio, 3),
                "target_ratio": TARGET_RATIO,
                "meets_target": ratio <= TARGET_RATIO,
                "same_results": results(serial) == results(parallel),
                "success_rate": [
                    serial["total"]["success_rate"],
                    parallel["total"]["success_rate"],
                ],
                "cpus": os.cpu_count(),
                "load_avg_1m": round(os.getloadavg()[0], 2),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
