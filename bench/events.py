"""Delay from an event's emit to an SSE client, with 1 and with 50 subscribers.

The server side is the real thing: an EventBus, the run journal (lines on disk), the event
hub and the control API on uvicorn (127.0.0.1, a free port), as in ``jarvis serve``. The
clients are httpx + httpx-sse in other processes (10 each, not sharing the server's loop);
each records when it received each event. Delay = receive time - the event's ``ts`` (set
when the event is made, just before it is emitted). Events are step_started lines at 50 a
second (model text deltas are coalesced to 20 a second on purpose and are not measured).

Prints one JSON object: p50/p95/max in ms for each subscriber count, and whether the target
(p50 at most 20 ms with 50 subscribers) is met.

    .venv/bin/python bench/events.py [--events 300] [--rate 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from jarvis.desktop.x11 import XDisplay

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_P50_MS = 20.0
PER_PROCESS = 10
"""Subscribers per client process (Python parsing 50 streams in one process would measure
the client more than the server)."""


async def client_main(port: int, token: str, subscribers: int, count: int) -> None:
    """The client process: ``subscribers`` SSE streams; prints the delays (ms) as JSON."""
    import httpx
    from httpx_sse import aconnect_sse

    delays: list[float] = []
    ready = 0

    async def one(client: httpx.AsyncClient) -> None:
        nonlocal ready
        seen = 0
        async with aconnect_sse(client, "GET", "/api/events", headers={}) as source:
            ready += 1
            async for sse in source.aiter_sse():
                if sse.event != "step_started":
                    continue
                delays.append((time.time() - json.loads(sse.data)["ts"]) * 1000)
                seen += 1
                if seen >= count:
                    return

    limits = httpx.Limits(max_connections=subscribers + 5)
    headers = {"authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=60, limits=limits
    ) as client:
        tasks = [asyncio.create_task(one(client)) for _ in range(subscribers)]
        while ready < subscribers:
            await asyncio.sleep(0.01)
        print("READY", flush=True)
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=300)
    print(json.dumps(delays), flush=True)


async def measure(subscribers: int, count: int, rate: float) -> dict[str, Any]:
    from jarvis.api.server import HttpService
    from jarvis.api.settings import HttpAddress
    from jarvis.config import load_settings
    from jarvis.events import StepStarted, TaskStarted
    from jarvis.gateway.gateway import Gateway

    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(Path(tmp) / "data", long_term_memory=False)
        gateway = Gateway(settings, where=XDisplay.from_env())
        service = HttpService(
            gateway, HttpAddress(host="127.0.0.1", port=0), announce=lambda _line: None
        )
        async with service.running():
            assert service.daemon is not None and service.port is not None
            sizes = [min(PER_PROCESS, subscribers - i) for i in range(0, subscribers, PER_PROCESS)]
            clients = [
                await asyncio.create_subprocess_exec(
                    sys.executable,
                    __file__,
                    "--client",
                    str(service.port),
                    service.daemon.token,
                    str(size),
                    str(count),
                    stdout=subprocess.PIPE,
                    cwd=ROOT,
                )
                for size in sizes
            ]
            for client in clients:
                assert client.stdout is not None
                line = await asyncio.wait_for(client.stdout.readline(), 60)
                assert line.strip() == b"READY", line
            gateway.bus.emit(TaskStarted(task_id="B001", task="bench"))
            for step in range(count):
                gateway.bus.emit(StepStarted(task_id="B001", step=step))
                await asyncio.sleep(1 / rate)
            delays: list[float] = []
            for client in clients:
                assert client.stdout is not None
                delays += json.loads(await asyncio.wait_for(client.stdout.read(), 300))
                await client.wait()
        gateway.journal.close()
    delays.sort()
    q = statistics.quantiles(delays, n=100)
    return {
        "subscribers": subscribers,
        "events_each": count,
        "received": len(delays),
        "p50_ms": round(statistics.median(delays), 2),
        "p95_ms": round(q[94], 2),
        "max_ms": round(delays[-1], 2),
    }


async def bench(count: int, rate: float) -> dict[str, Any]:
    one = await measure(1, count, rate)
    fifty = await measure(50, count, rate)
    return {
        "bench": "events: emit to SSE client",
        "rate_per_s": rate,
        "one": one,
        "fifty": fifty,
        "target_p50_ms_with_50": TARGET_P50_MS,
        "met": fifty["p50_ms"] <= TARGET_P50_MS,
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--client":
        port, token, subscribers, count = sys.argv[2:6]
        asyncio.run(client_main(int(port), token, int(subscribers), int(count)))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--rate", type=float, default=50.0, help="events a second")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(bench(args.events, args.rate))))


if __name__ == "__main__":
    main()
