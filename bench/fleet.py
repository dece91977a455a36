"""The fleet on this machine: throughput with 1, 2 and 4 workers, dispatch and event
latency, and recovery after `kill -9` of a worker.

Real parts: a redis-server on loopback (AOF on, a password), `jarvis worker` processes
each on its own Xvfb, and the coordinator (the gateway with ``fleet_url`` and its control
API on uvicorn, as `jarvis serve --fleet` runs it) on another Xvfb. Only the model is
scripted: each step request is answered after ``--model-s`` (1 s); a task is ``--steps``
(4) steps (three pointer moves, then ``finished``); the router's and the verifier's
requests are answered at once (they are not steps). Tasks arrive as files dropped into
the inbox (written aside, then moved in, so the inbox need not wait for more writes).

- throughput: ``--tasks-per-worker`` tasks per worker, from the first drop to the last
  completion in todos.md; tasks/min, and efficiency(N) = throughput(N) / (N * throughput(1)).
- dispatch latency: a file dropped into the idle fleet's inbox to the first step request
  a worker sends the model (inbox, router, todos.md, dispatch, claim, the agent's first
  look at the screen); p50 over ``--dispatch-samples``.
- event latency: a worker's step_started (its ``ts`` is set on the worker when the event
  is made) to an SSE client of ``/api/events`` on the coordinator (another thread); and,
  to tell the parts apart, to the coordinator's bus.
- recovery: a worker killed with -9 mid-task (lease ``--lease`` s); the time from its
  lease's expiry (its PTTL when it was killed) to the task's next step request on
  another worker; and from the kill.

Prints one JSON object, with each target and whether it is met.

    .venv/bin/python bench/fleet.py [--model-s 1] [--steps 4] [--tasks-per-worker 4]
        [--dispatch-samples 7] [--sizes 1,2,4]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_EFFICIENCY_4 = 0.85
TARGET_DISPATCH_P50_MS = 100.0
TARGET_EVENT_P50_MS = 30.0
RECOVERY_SLACK_S = 5.0


class Model:
    """The scripted model: step requests answered after ``delay_s``; who asked when."""

    def __init__(self, delay_s: float, steps: int) -> None:
        from tests.fake_model import FakeModel

        self.delay_s, self.steps = delay_s, steps
        self.server = FakeModel().start()
        self.server.set_default(self.answer)
        self.first_step: dict[str, float] = {}
        """Task text -> when its first (or, after a kill, next) step request came."""
        self.step_times: dict[str, list[float]] = {}
        self.lock = threading.Lock()

    def answer(self, request: Any) -> Any:
        from tests.fake_model import Reply, call
        from tests.test_serve import NEW_TASK, VERIFIED, is_router, is_verify

        now = time.time()
        if is_router(request):
            return NEW_TASK
        if is_verify(request):
            return VERIFIED
        body = request.all_text()
        task = body[body.index("BENCH-") :].split()[0] if "BENCH-" in body else "?"
        with self.lock:
            self.first_step.setdefault(task, now)
            times = self.step_times.setdefault(task, [])
            times.append(now)
            n = len(times)
        time.sleep(self.delay_s)
        if n % self.steps == 0:
            return Reply(text="Thought: done.", tool_calls=[call("finished", summary="moved")])
        return Reply(text=f"Thought: move {n}.", tool_calls=[call("mouse_move", x=40 * n, y=30)])


def drop(data: Path, name: str) -> float:
    from jarvis.gateway.queue import MessageQueue

    folder = MessageQueue(data).drop_dir
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{name}.md.tmp"
    tmp.write_text(f"Move the pointer around, task {name} .\n", encoding="utf-8")
    old = time.time() - 3600
    os.utime(tmp, (old, old))  # complete: no settle wait
    started = time.time()
    os.replace(tmp, folder / f"{name}.md")
    return started


def sse_listener(base: str, token: str, delays: list[float], stop: threading.Event) -> None:
    import httpx
    from httpx_sse import connect_sse

    headers = {"authorization": f"Bearer {token}"}
    with (
        httpx.Client(base_url=base, headers=headers, timeout=None) as client,
        connect_sse(client, "GET", "/api/events") as source,
    ):
        for sse in source.iter_sse():
            if stop.is_set():
                return
            if sse.event == "step_started":
                delays.append((time.time() - json.loads(sse.data)["ts"]) * 1000)


async def until(condition: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the fleet did not finish in time")
        await asyncio.sleep(0.02)


async def session(args: argparse.Namespace, workers: int, tmp: Path) -> dict[str, Any]:
    """One coordinator and ``workers`` workers; measures what this size measures."""
    from jarvis.api.server import HttpService
    from jarvis.api.settings import HttpAddress
    from jarvis.config import load_settings
    from jarvis.desktop.x11 import XDisplay
    from jarvis.gateway.gateway import Gateway, GatewayOptions
    from jarvis.gateway.serve_command import pick_runner
    from jarvis.gateway.todos import TodoList
    from tests.redis_server import RedisServer
    from tests.test_fleet_worker import Fleet

    model = Model(args.model_s, args.steps)
    os.environ["ANTHROPIC_API_KEY"] = "bench-key"
    os.environ["ANTHROPIC_BASE_URL"] = model.server.anthropic_base_url
    data = tmp / f"data-{workers}"
    settings = load_settings(
        data, max_retries=0, long_term_memory=False, fleet={"lease_s": args.lease}
    )
    out: dict[str, Any] = {"workers": workers}
    with RedisServer(appendonly=True) as redis:
        fleet = Fleet(tmp / f"w{workers}", model.server, redis.url)
        gateway = Gateway(
            settings,
            options=GatewayOptions(),
            where=XDisplay.from_env(),
            runner=pick_runner(redis.url, local_worker=False),
        )
        service = HttpService(
            gateway, HttpAddress(host="127.0.0.1", port=0), announce=lambda _l: None
        )
        gateway.services.append(service.running)
        run = asyncio.create_task(gateway.run())
        stop, delays, on_bus = threading.Event(), [], []

        def arrived(event: Any) -> None:  # on the coordinator's bus: the wire's part of it
            on_bus.append((time.time() - event.ts) * 1000)

        from jarvis.events import StepStarted

        gateway.bus.subscribe(arrived, StepStarted)
        try:
            await until(lambda: gateway.ready.is_set() or run.done(), 60)
            assert service.daemon is not None
            listener = threading.Thread(
                target=sse_listener,
                args=(service.url, service.daemon.token, delays, stop),
                daemon=True,
            )
            listener.start()
            for i in range(workers):
                fleet.start(f"b{i + 1}", lease_s=args.lease)
            for i in range(workers):
                await fleet.said(f"b{i + 1}", "waiting for tasks", timeout=120)
            todos = TodoList(data)

            def done() -> int:
                return sum(t.status == "completed" for t in todos.all())

            ended = 0
            if workers == 1:  # dispatch latency: one task at a time into an idle fleet
                samples = []
                for i in range(args.dispatch_samples):
                    name = f"BENCH-d{i}"
                    dropped = drop(data, name)
                    await until(lambda n=name: n in model.first_step, 60)
                    samples.append((model.first_step[name] - dropped) * 1000)
                    await until(lambda e=ended + 1: done() >= e, 120)
                    ended += 1
                out["dispatch_ms"] = sorted(round(s, 1) for s in samples)
            count = args.tasks_per_worker * workers
            started = time.time()
            for i in range(count):
                drop(data, f"BENCH-t{workers}-{i}")
            await until(lambda: done() >= ended + count, 600)
            wall = time.time() - started
            out["tasks"] = count
            out["wall_s"] = round(wall, 2)
            out["tasks_per_min"] = round(count / wall * 60, 2)
            if workers == 2:  # recovery: kill -9 of the worker running a task
                name = "BENCH-k"
                drop(data, name)
                await until(lambda: len(model.step_times.get(name, [])) >= 2, 60)
                runner, expires = await _runner_of(todos, name, redis.url)
                seen = len(model.step_times[name])
                killed = time.time()
                fleet.procs[runner].kill()
                await until(lambda: len(model.step_times[name]) > seen, 120)
                again = model.step_times[name][seen]
                out["recovery_s"] = round(again - expires, 2)  # from the lease's expiry
                out["kill_to_running_again_s"] = round(again - killed, 2)
            out["event_ms"], out["bus_ms"] = list(delays), list(on_bus)
        finally:
            stop.set()
            gateway.stop()
            await asyncio.wait_for(run, timeout=60)
            with contextlib.redirect_stdout(sys.stderr):  # what the workers said: not JSON
                fleet.stop()
            model.server.stop()
    return out


async def _runner_of(todos: Any, name: str, url: str) -> tuple[str, float]:
    """The worker that holds the lease of the task whose text names ``name``, and when
    that lease expires unless renewed."""
    from jarvis.fleet import keys
    from jarvis.fleet.connection import client

    [todo] = [t for t in todos.all() if name in (t.description or "")]
    redis = client(url)
    try:
        worker = await redis.hget(keys.lease_key(todo.id), "worker")
        left_ms = await redis.pttl(keys.lease_key(todo.id))
    finally:
        await redis.aclose()
    return worker.decode(), time.time() + left_ms / 1000


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    from tests.xserver import start_xvfb

    results = {}
    with (
        tempfile.TemporaryDirectory(prefix="jarvis-bench-fleet-") as tmp,
        start_xvfb(800, 600, set_env=True),  # the coordinator's own display
    ):
        for n in args.sizes:
            results[n] = await session(args, n, Path(tmp))
    one = results[1]["tasks_per_min"]
    events = sorted(d for r in results.values() for d in r.pop("event_ms"))
    bus = sorted(d for r in results.values() for d in r.pop("bus_ms"))
    dispatch = results[1]["dispatch_ms"]
    efficiency = {str(n): round(results[n]["tasks_per_min"] / (n * one), 3) for n in results}
    recovery = results[2]["recovery_s"] if 2 in results else None
    return {
        "bench": "fleet: throughput, latency, recovery",
        "model_s": args.model_s,
        "steps_per_task": args.steps,
        "lease_s": args.lease,
        "cpus": os.cpu_count(),
        "throughput_tasks_per_min": {str(n): results[n]["tasks_per_min"] for n in results},
        "runs": {str(n): results[n] for n in results},
        "efficiency": efficiency,
        "dispatch_p50_ms": round(statistics.median(dispatch), 1),
        "event_p50_ms": round(statistics.median(events), 2),
        "event_p95_ms": round(statistics.quantiles(events, n=20)[18], 2),
        "event_to_coordinator_bus_p50_ms": round(statistics.median(bus), 2),
        "events": len(events),
        "recovery_after_lease_s": recovery,
        "targets": {
            "efficiency_4": TARGET_EFFICIENCY_4,
            "dispatch_p50_ms": TARGET_DISPATCH_P50_MS,
            "event_p50_ms": TARGET_EVENT_P50_MS,
            "recovery_s": f"lease + {RECOVERY_SLACK_S}",
        },
        "met": {
            "efficiency_4": efficiency["4"] >= TARGET_EFFICIENCY_4 if "4" in efficiency else None,
            "dispatch": statistics.median(dispatch) <= TARGET_DISPATCH_P50_MS,
            "event": statistics.median(events) <= TARGET_EVENT_P50_MS,
            "recovery": recovery <= RECOVERY_SLACK_S if recovery is not None else None,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-s", type=float, default=1.0, help="each step's model time")
    parser.add_argument("--steps", type=int, default=4, help="steps per task")
    parser.add_argument("--tasks-per-worker", type=int, default=4)
    parser.add_argument("--dispatch-samples", type=int, default=7)
    parser.add_argument("--lease", type=float, default=5.0, help="the workers' lease (s)")
    parser.add_argument(
        "--sizes", default="1,2,4", help="fleet sizes to run, comma-separated (1 is needed)"
    )
    args = parser.parse_args()
    try:
        args.sizes = sorted({int(n) for n in args.sizes.split(",")})
    except ValueError:
        parser.error(f"--sizes: not a list of numbers: {args.sizes!r}")
    if 1 not in args.sizes or min(args.sizes) < 1:
        parser.error("--sizes: 1 is needed (dispatch latency, the efficiency baseline)")
    print(json.dumps(asyncio.run(bench(args))))


if __name__ == "__main__":
    main()
