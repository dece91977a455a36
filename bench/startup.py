"""How soon `jarvis run` can be stopped and how soon it works: a real `jarvis run` process on
a private Xvfb with the scripted model (tests/fake_model.py) behind the real SDK.

Per run: launch to the kill switch's grab (the "brake armed" line, printed once the grab is
in place) and launch to the model's first request, and the CPU time the `jarvis run` process
has used by then (user + system, from /proc: less at the mercy of other work on the machine
than the wall clock). Prints one JSON object: p50 and p95 of each over ``--runs`` runs,
against the targets (grab at most 1 s p50, first request at most 2.5 s p50), and what
``jarvis run`` imports before the grab (the modules that take longest).

The floor beside them: after each run, a bare ``python -c "import anthropic"`` as the run
imports it (the collector paused, the SDK's aiohttp transport left out), its wall and CPU
time in the same conditions. No run can make its first request sooner than that.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TARGET_GRAB_P50_MS = 1000.0
TARGET_FIRST_REQUEST_P50_MS = 2500.0
ARMED = "brake armed:"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return round(ordered[index], 1)


def cpu_ms(pid: int) -> float:
    """The CPU time (user + system) process ``pid`` has used, in ms."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


class Watched:
    """The `jarvis run` process of this run: when the model saw its first request, and the
    CPU time the process had used by then."""

    def __init__(self) -> None:
        self.pid = 0
        self.first: list[float] = []
        self.cpu: list[float] = []

    def saw_request(self) -> None:
        if not self.first:
            self.first.append(time.monotonic())
            self.cpu.append(cpu_ms(self.pid))


def one_run(env: dict[str, str], data: Path, watched: Watched) -> tuple[float, ...]:
    """(launch to the grab, launch to the first model request, the CPU time at the grab,
    the CPU time at the first request), in ms."""
    watched.first.clear()
    watched.cpu.clear()
    first = watched.first
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "jarvis", "run", "say hello", "--data-dir", str(data)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watched.pid = proc.pid
    assert proc.stdout is not None
    armed = armed_cpu = None
    for line in proc.stdout:
        if line.startswith(ARMED):
            armed, armed_cpu = time.monotonic(), cpu_ms(proc.pid)
            break
    _out, err = proc.communicate(timeout=120)
    if armed is None or armed_cpu is None or not first:
        why = f"jarvis run ended {proc.returncode} without a grab or a request"
        raise RuntimeError(f"{why}:\n{err}")
    return (armed - started) * 1000, (first[0] - started) * 1000, armed_cpu, watched.cpu[0]


def sdk_import_alone(env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) in ms of a fresh interpreter importing the SDK as `jarvis run` does."""
    from jarvis.llm.factory import AIOHTTP_TRANSPORTS

    code = (
        "import gc, sys; gc.disable(); "
        f"sys.modules[{AIOHTTP_TRANSPORTS['anthropic']!r}] = None; import anthropic"
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    wall = (time.monotonic() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def imported_before_grab(env: dict[str, str]) -> list[dict[str, Any]]:
    """The slowest modules `import jarvis.cli` and the kill switch's module load."""
    code = "import jarvis.cli, jarvis.safety.killswitch, jarvis.config"
    found = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], env=env, capture_output=True, text=True
    ).stderr
    rows = []
    for line in found.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[0].strip().isdigit():
            rows.append({"module": parts[2].strip(), "cumulative_ms": int(parts[1]) / 1000})
    tops = [r for r in rows if not r["module"].startswith(" ")]
    return sorted(tops, key=lambda r: -r["cumulative_ms"])[:5]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument(
        "--memory",
        action="store_true",
        help="with long-term memory on (the setting's default; each run opens a new store)",
    )
    args = parser.parse_args()
    from tests.fake_model import FakeModel, Reply
    from tests.xserver import start_xvfb

    watched = Watched()
    lock = threading.Lock()

    def answer(request: Any) -> Reply:
        with lock:
            watched.saw_request()
        return Reply(text="Hello. Done.")

    model = FakeModel().start()
    model.set_default(answer)
    runs: list[tuple[float, ...]] = []
    floor: list[tuple[float, float]] = []
    try:
        with start_xvfb(1280, 800) as server, tempfile.TemporaryDirectory() as tmp:
            env = {
                **server.env(),
                "PATH": os.environ["PATH"],
                "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
                "ANTHROPIC_API_KEY": "bench-key-0123456789",
                "ANTHROPIC_BASE_URL": model.anthropic_base_url,
                "JARVIS_MAX_RETRIES": "0",
                "JARVIS_LONG_TERM_MEMORY": "true" if args.memory else "false",
                "ANONYMIZED_TELEMETRY": "False",
                "HOME": tmp,
            }
            one_run(env, Path(tmp) / "warm", watched)  # the OS's file cache, as a second run has
            for run in range(args.runs):
                runs.append(one_run(env, Path(tmp) / f"d{run}", watched))
                floor.append(sdk_import_alone(env))
            slowest = imported_before_grab(env)
    finally:
        model.stop()
    grabs, requests, grab_cpu, request_cpu = (list(column) for column in zip(*runs, strict=True))
    result = {
        "runs": args.runs,
        "long_term_memory": args.memory,
        "launch_to_brake_armed_ms": {"p50": pct(grabs, 0.5), "p95": pct(grabs, 0.95)},
        "launch_to_first_model_request_ms": {
            "p50": pct(requests, 0.5),
            "p95": pct(requests, 0.95),
        },
        "cpu_to_brake_armed_ms": {"p50": pct(grab_cpu, 0.5), "p95": pct(grab_cpu, 0.95)},
        "cpu_to_first_model_request_ms": {
            "p50": pct(request_cpu, 0.5),
            "p95": pct(request_cpu, 0.95),
        },
        "sdk_import_alone_ms": {
            "wall_p50": pct([wall for wall, _ in floor], 0.5),
            "cpu_p50": pct([cpu for _, cpu in floor], 0.5),
        },
        "target_brake_p50_ms": TARGET_GRAB_P50_MS,
        "target_first_request_p50_ms": TARGET_FIRST_REQUEST_P50_MS,
        "meets_targets": pct(grabs, 0.5) <= TARGET_GRAB_P50_MS
        and pct(requests, 0.5) <= TARGET_FIRST_REQUEST_P50_MS,
        "slowest_imports_before_the_grab": slowest,
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
