"""How many tasks a minute one coordinator carries, and where its time goes.

Real parts: a redis-server on loopback (AOF on, a password), and the coordinator as a
person runs it: ``jarvis serve --fleet`` (a subprocess; its channels, the router, todos.md,
the journal, the receiver writing events and step files, outcomes written through
``gateway/endings.py``), with every thread under cProfile (``bench/capacity_profile.py``).
The router's model is scripted (every message a new task, answered at once). Messages
arrive as files dropped into the inbox, as a person drops them.

``--workers`` (50) simulated workers speak the real protocol from this process
(``bench/capacity_workers.py``: each a ``FleetWorker`` with a scripted agent and no
desktop): claim with a lease and token, heartbeat, renew, the events of a ``--steps`` (2)
step task with ``--step-s`` (1 s) per step, each step's ``step.json`` and JPEG, then the
outcome with the lease token.

The inbox is kept ``--backlog`` (100) messages ahead of what todos.md has recorded, so
the coordinator always has more than it carries, until ``--tasks`` messages were dropped
or ``--duration`` seconds passed; then what is in flight is drained. A task counts when
its outcome is in todos.md (its ``jarvis:ended`` mark is gone, which the coordinator
removes after writing; checked against todos.md and its archive at the end: each message
is exactly one completed task, in one place).

Prints one JSON object: the steady throughput (while the backlog was kept full, after
the first tasks) and its ceiling (the best ``--window`` (100) task window then), each
window (with the size of todos.md as it closed, to show the cost of a growing list),
p50/p95 latencies (message to recorded outcome, and its parts: with a full backlog the
wait for a worker is most of it), the CPU each process used and the load average (the
machine may be shared), the books' check, and the profile summary (``--profile none``:
no profiler, for the ceiling without its overhead; ``--keep``: the files stay).

    PYTHONPATH=. .venv/bin/python bench/coordinator_capacity.py [--workers 50]
        [--tasks 1000] [--duration 600] [--backlog 100] [--steps 2] [--step-s 1]
        [--window 100] [--profile cprofile|none] [--keep]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_TASKS_PER_MIN = 300.0
READY_TIMEOUT_S = 300.0
DRAIN_TIMEOUT_S = 600.0
PROGRESS_EVERY_S = 15.0
IDLE_PROBE_S = 5.0
STOP_TIMEOUT_S = 300.0


def drop(drop_dir: Path, n: int) -> float:
    """Message ``n`` into the inbox as a person drops it (written aside, then moved in)."""
    tmp = drop_dir / f".bench-{n:06d}.md.tmp"
    tmp.write_text(f"Look at the list and note item BENCH-{n:06d} .\n", encoding="utf-8")
    old = time.time() - 3600
    os.utime(tmp, (old, old))  # settled: the inbox need not wait for more writes
    dropped = time.time()
    os.replace(tmp, drop_dir / f"bench-{n:06d}.md")
    return dropped


def cpu_s(pid: int) -> float:
    """User and system CPU seconds of process ``pid`` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 3)


@dataclass
class Seen:
    """When an outcome was seen recorded, and the state of things then."""

    at: float
    todos_bytes: int
    coordinator_cpu_s: float


def windows(seen: list[Seen], size: int, fed_until: float = float("inf")) -> list[dict[str, Any]]:
    """Each run of ``size`` recorded outcomes (in order of recording): tasks a minute, the
    coordinator's CPU milliseconds a task (what a shared machine does not change much),
    todos.md's size at its end, and whether feeding went on till then (a window that
    ends later is partly the drain, with fewer tasks waiting)."""
    out = []
    for start in range(0, len(seen) - size + 1, size):
        first, last = seen[start], seen[start + size - 1]
        span = last.at - first.at
        cpu_ms = (last.coordinator_cpu_s - first.coordinator_cpu_s) * 1000 / (size - 1)
        out.append({
            "tasks": f"{start + 1}-{start + size}",
            "tasks_per_min": round((size - 1) / span * 60, 1) if span > 0 else None,
            "coordinator_cpu_ms_per_task": round(cpu_ms, 1),
            "todos_md_kb": round(last.todos_bytes / 1024, 1),
            "fed": last.at <= fed_until,
        })  # fmt: skip
    return out


def check_books(data: Path, dropped: int) -> dict[str, Any]:
    """Each message dropped is exactly one completed task, in todos.md or its archive."""
    from bench.capacity_workers import MARK
    from jarvis.gateway.todo_format import parse_todos

    places = [data / "todos.md", *sorted((data / "todos" / "archive").glob("*.md"))]
    seen: dict[int, list[tuple[str, str, str]]] = {}
    ids: dict[str, int] = {}
    for path in places:
        if not path.is_file():
            continue
        for todo in parse_todos(path.read_text(encoding="utf-8")).entries():
            ids[todo.id] = ids.get(todo.id, 0) + 1
            found = MARK.search(todo.description or todo.title)
            if found:
                seen.setdefault(int(found[1]), []).append((todo.id, todo.status, path.name))
    waiting = _in_the_inbox(data) - set(seen)  # (processing.md keeps a task's until it ends)
    lost = [n for n in range(dropped) if n not in seen and n not in waiting]
    twice = {n: where for n, where in seen.items() if len(where) > 1}
    not_completed = {n: w[0][1] for n, w in seen.items() if w[0][1] != "completed"}
    return {
        "files": [p.relative_to(data).as_posix() for p in places if p.is_file()],
        "tasks_in_books": sum(ids.values()),
        "messages_dropped": dropped,
        "still_in_the_inbox": len(waiting),
        "lost": lost[:20],
        "lost_count": len(lost),
        "twice": {str(n): w for n, w in list(twice.items())[:20]},
        "twice_count": len(twice),
        "ids_in_two_places": sorted(i for i, count in ids.items() if count > 1)[:20],
        "not_completed": {str(n): s for n, s in list(not_completed.items())[:20]},
        "ok": not lost and not twice and not not_completed and not waiting
        and all(count == 1 for count in ids.values()),
    }  # fmt: skip


def _in_the_inbox(data: Path) -> set[int]:
    """The messages not routed yet (a drain cut short): dropped, in the inbox or being
    routed."""
    from bench.capacity_workers import MARK

    messages = data / "messages"
    paths = [messages / "inbox.md", messages / "processing.md"]
    paths += sorted((messages / "drop").glob("*.md"))
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in paths if p.is_file()]
    return {int(n) for text in texts for n in MARK.findall(text)}


class Coordinator:
    """``jarvis serve --fleet`` as a subprocess (profiled unless ``profile`` is None)."""

    def __init__(self, redis: Any, model: Any, data: Path, lease_s: float) -> None:
        self.data, self.log = data, data.parent / "coordinator.out"
        self.env = {
            "PATH": os.environ["PATH"],
            "HOME": os.environ.get("HOME", str(data.parent)),
            "PYTHONPATH": str(ROOT),
            "ANTHROPIC_API_KEY": "bench-key",
            "ANTHROPIC_BASE_URL": model.anthropic_base_url,
            "JARVIS_MAX_RETRIES": "0",
            "JARVIS_LONG_TERM_MEMORY": "false",
            "JARVIS_API__HTTP": "127.0.0.1:0",
            "JARVIS_FLEET__LEASE_S": str(lease_s),
            "ANONYMIZED_TELEMETRY": "False",
            "ORT_DISABLE_TELEMETRY": "1",
            "HF_HUB_OFFLINE": "1",
        } | redis.env
        self.url = redis.bare_url
        self.proc: subprocess.Popen[bytes] | None = None
        self.profiled = False

    def start(self, profile: str | None) -> None:
        serve = ["serve", "--fleet", self.url, "--data-dir", str(self.data), "--poll", "0.2"]
        runner = [str(ROOT / "bench" / "capacity_profile.py"), profile] if profile else []
        args = [sys.executable, *(runner or ["-m", "jarvis"]), *serve]
        self.profiled = profile is not None
        with self.log.open("ab") as sink:
            self.proc = subprocess.Popen(
                args, env=self.env, cwd=ROOT, stdin=subprocess.DEVNULL,
                stdout=sink, stderr=subprocess.STDOUT,
            )  # fmt: skip

    async def ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while "waiting for messages" not in self.output():
            if self.proc is None or self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the coordinator did not start:\n{self.output()[-3000:]}")
            await asyncio.sleep(0.1)

    def profile_from_now(self) -> None:
        """Profiles count from here on (not the start-up): see bench/capacity_profile.py."""
        if self.proc is not None and self.profiled:
            self.proc.send_signal(signal.SIGUSR1)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.is_file() else ""

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:  # (it writes the outcomes it read first, and then its profile)
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


async def watch_recorded(
    redis: Any, tracker: Any, todos: Path, coordinator: int, seen: list[Seen]
) -> None:
    """Outcomes taken whose ``jarvis:ended`` mark is gone are in todos.md: noted, with
    todos.md's size and the coordinator's CPU time then, every 50 ms."""
    from jarvis.fleet import keys

    while True:
        waiting = sorted(tracker.unrecorded)
        if waiting:
            pipe = redis.pipeline(transaction=False)
            for task_id in waiting:
                pipe.hexists(keys.ENDED, task_id)
            marks = await pipe.execute()
            now = time.time()
            size = todos.stat().st_size if todos.exists() else 0
            cpu = cpu_s(coordinator)
            for task_id, marked in zip(waiting, marks, strict=True):
                if not marked:
                    tracker.recorded(task_id, now)
                    seen.append(Seen(now, size, cpu))
        await asyncio.sleep(0.05)


async def feed(drop_dir: Path, tracker: Any, args: argparse.Namespace, began: float) -> int:
    """Drop messages, ``args.backlog`` ahead of what is recorded, until ``args.tasks``
    were dropped or ``args.duration`` passed; the number dropped."""
    from bench.capacity_workers import Task

    n, told = 0, began
    while n < args.tasks and time.time() - began < args.duration:
        recorded = sum(1 for t in tracker.tasks.values() if t.recorded)
        while n < args.tasks and n - recorded < args.backlog:
            tracker.tasks[n] = Task(n, drop(drop_dir, n))
            n += 1
        if time.time() - told >= PROGRESS_EVERY_S:
            told = time.time()
            print(f"{told - began:6.0f}s: {n} dropped, {recorded} recorded", file=sys.stderr)
        await asyncio.sleep(0.05)
    return n


async def bench(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    from bench.capacity_profile import summary
    from bench.capacity_workers import SimulatedFleet, Tracker
    from jarvis.fleet.connection import client
    from jarvis.gateway.queue import MessageQueue
    from tests.fake_model import FakeModel
    from tests.redis_server import RedisServer
    from tests.test_serve import NEW_TASK

    data = tmp / "coordinator"
    drop_dir = MessageQueue(data).drop_dir
    drop_dir.mkdir(parents=True, exist_ok=True)
    profile = str(tmp / "coordinator.prof") if args.profile == "cprofile" else None
    tracker = Tracker()
    seen: list[Seen] = []
    model = FakeModel().start()
    model.set_default(NEW_TASK)  # the router: every message a new task, at once
    with RedisServer(appendonly=True) as server:
        coordinator = Coordinator(server, model, data, args.lease)
        redis = client(server.url)
        fleet = SimulatedFleet(
            server.url, tmp / "workers", tracker, int(args.lease * 1000), args.steps, args.step_s
        )
        watcher: asyncio.Task[None] | None = None
        try:
            coordinator.start(profile)
            await coordinator.ready()
            await fleet.start(args.workers)
            assert coordinator.proc is not None
            watcher = asyncio.create_task(
                watch_recorded(redis, tracker, data / "todos.md", coordinator.proc.pid, seen)
            )
            idle = cpu_s(coordinator.proc.pid)  # its floor: 50 idle workers, the inbox's polls
            await asyncio.sleep(IDLE_PROBE_S)
            idle = (cpu_s(coordinator.proc.pid) - idle) / IDLE_PROBE_S
            cpu = {"coordinator": cpu_s(coordinator.proc.pid), "redis": cpu_s(server.process.pid)}
            cpu["bench"] = time.process_time()
            coordinator.profile_from_now()
            load = [os.getloadavg()[0]]
            began = time.time()
            dropped = await feed(drop_dir, tracker, args, began)
            fed_until = time.time()
            deadline = time.monotonic() + DRAIN_TIMEOUT_S
            while sum(1 for t in tracker.tasks.values() if t.recorded) < dropped:
                if time.monotonic() > deadline or fleet.failed():
                    break
                await asyncio.sleep(0.1)
            wall = time.time() - began
            load.append(os.getloadavg()[0])
            twice = {  # before the workers stop (a task they give back then is claimed again)
                "claims_more_than_once": sum(1 for t in tracker.tasks.values() if t.claims > 1),
                "outcomes_more_than_once": sum(1 for t in tracker.tasks.values() if t.outcomes > 1),
            }
            cpu = {
                "coordinator": cpu_s(coordinator.proc.pid) - cpu["coordinator"],
                "redis": cpu_s(server.process.pid) - cpu["redis"],
                "bench_and_workers": time.process_time() - cpu["bench"],
            }
        finally:
            if watcher is not None:
                watcher.cancel()
            await fleet.stop()
            code = coordinator.stop()
            await redis.aclose()
            model.stop()
    tasks = list(tracker.tasks.values())
    done = sorted((t for t in tasks if t.recorded), key=lambda t: t.recorded)
    times = [t.recorded for t in done]
    warm = min(args.workers, len(times) // 10)  # the first tasks: the pipeline filling
    steady = [t for t in times[warm:] if t <= fed_until]  # the backlog kept full
    steady_rate = (len(steady) - 1) / (steady[-1] - steady[0]) * 60 if len(steady) > 1 else 0.0
    per_window = windows(seen, args.window, fed_until)
    steady_seen = [x for x in seen[warm:] if x.at <= fed_until]
    cpu_ms = (
        (steady_seen[-1].coordinator_cpu_s - steady_seen[0].coordinator_cpu_s)
        * 1000
        / (len(steady_seen) - 1)
        if len(steady_seen) > 1
        else None
    )
    best = max((w["tasks_per_min"] or 0 for w in per_window if w["fed"]), default=0.0)
    result: dict[str, Any] = {
        "bench": "coordinator capacity: one `jarvis serve --fleet`, simulated workers",
        "workers": args.workers,
        "steps_per_task": args.steps,
        "step_s": args.step_s,
        "workers_ceiling_tasks_per_min": round(args.workers / (args.steps * args.step_s) * 60),
        "backlog": args.backlog,
        "lease_s": args.lease,
        "cpus": os.cpu_count(),
        "profiled": args.profile,
        "messages_dropped": dropped,
        "tasks_recorded": len(done),
        "drained": len(done) == dropped,
        "feeding_s": round(fed_until - began, 1),
        "wall_s": round(wall, 1),
        "steady_tasks_per_min": round(steady_rate, 1),
        "ceiling_tasks_per_min": best,
        "steady_coordinator_cpu_ms_per_task": round(cpu_ms, 1) if cpu_ms else None,
        "tasks_per_min_if_the_coordinator_had_a_core": round(60000 / cpu_ms, 1) if cpu_ms else None,
        "windows": per_window,
        "latency_s": {
            "message_to_recorded_p50": quantile([t.recorded - t.dropped for t in done], 0.5),
            "message_to_recorded_p95": quantile([t.recorded - t.dropped for t in done], 0.95),
            "message_to_claimed_p50": quantile([t.claimed - t.dropped for t in done], 0.5),
            "claimed_to_outcome_sent_p50": quantile([t.sent - t.claimed for t in done], 0.5),
            "outcome_sent_to_recorded_p50": quantile([t.recorded - t.sent for t in done], 0.5),
            "outcome_sent_to_recorded_p95": quantile([t.recorded - t.sent for t in done], 0.95),
        },
        "cpu_share_of_one_core": {k: round(v / wall, 3) for k, v in cpu.items()},
        "coordinator_idle_cpu_share": round(idle, 3),
        "load_average_1min_start_end": [round(x, 2) for x in load],
        **twice,
        "worker_errors": fleet.failed(),
        "coordinator_exit": code,
        "books": check_books(data, dropped),
        "target_tasks_per_min": TARGET_TASKS_PER_MIN,
        "met": steady_rate >= TARGET_TASKS_PER_MIN,
    }
    if profile is not None:
        result["profile"] = summary(profile, args.top)
    errors = [line for line in coordinator.output().splitlines() if "ERROR" in line]
    result["coordinator_errors"] = errors[:10]
    if args.keep:
        result["kept"] = str(tmp)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=50, help="simulated workers")
    parser.add_argument("--tasks", type=int, default=1000, help="messages to drop at most")
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of feeding at most")
    parser.add_argument("--backlog", type=int, default=100, help="messages kept ahead")
    parser.add_argument("--steps", type=int, default=2, help="steps per task")
    parser.add_argument("--step-s", type=float, default=1.0, help="each step's time (s)")
    parser.add_argument("--lease", type=float, default=5.0, help="the lease (s)")
    parser.add_argument("--window", type=int, default=100, help="tasks per throughput window")
    parser.add_argument("--top", type=int, default=25, help="functions listed in the profile")
    parser.add_argument("--profile", choices=["cprofile", "none"], default="cprofile")
    parser.add_argument("--keep", action="store_true", help="keep the files (said in the JSON)")
    args = parser.parse_args()
    if min(args.workers, args.tasks, args.backlog, args.steps, args.window) < 1:
        parser.error("--workers, --tasks, --backlog, --steps and --window must be at least 1")
    with contextlib.redirect_stdout(sys.stderr):  # only the JSON goes to stdout
        if args.keep:  # the coordinator's data dir, its output and the profiles stay
            result = asyncio.run(bench(args, Path(tempfile.mkdtemp(prefix="jarvis-capacity-"))))
        else:
            with tempfile.TemporaryDirectory(prefix="jarvis-bench-capacity-") as tmp:
                result = asyncio.run(bench(args, Path(tmp)))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
