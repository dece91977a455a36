"""Delay from ``SendStreamingMessage`` to the first status update and to the first step update.

A live ``jarvis serve`` (gateway, agent on a private Xvfb, control API on uvicorn at
127.0.0.1) with a scripted model (tests/fake_model.py: each task is one pointer move, then
``finished``, then verification). A real a2a-sdk client sends N tasks one after another,
each with ``SendStreamingMessage``, and records the time from the call to the first event
(the task, SUBMITTED), to the first WORKING status update, and to the first step update
(``step 1``), and to the end of the stream.

Prints one JSON object: p50/p95/max in ms of each, and whether the target (first update
p50 at most 100 ms) holds.

    .venv/bin/python bench/a2a_stream.py [--tasks 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from jarvis.desktop.x11 import XDisplay

HERE = Path(__file__).resolve().parent
# the repository first, for the jarvis and tests packages
sys.path.insert(0, str(HERE.parent))

TARGET_FIRST_MS = 100.0


def stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "p50": round(statistics.median(ordered), 1),
        "p95": round(p95, 1),
        "max": round(ordered[-1], 1),
    }


async def measure(tasks: int) -> dict[str, Any]:
    import httpx
    from a2a.client import ClientConfig, create_client
    from a2a.types import TaskState

    from jarvis.api.server import HttpService
    from jarvis.api.settings import HttpAddress
    from jarvis.config import load_settings
    from jarvis.gateway.gateway import Gateway, GatewayOptions
    from tests.a2a_harness import request
    from tests.api_harness import scripted
    from tests.fake_model import FakeModel, Reply, call

    model = FakeModel().start()
    os.environ["ANTHROPIC_API_KEY"] = "bench-key"
    os.environ["ANTHROPIC_BASE_URL"] = model.anthropic_base_url
    data_dir = Path(tempfile.mkdtemp(prefix="jarvis-bench-a2a-"))
    settings = load_settings(data_dir, max_retries=0, settle_ceiling_ms=200, long_term_memory=False)
    move = Reply(text="Thought: move.", tool_calls=[call("mouse_move", x=40, y=40)])
    options = GatewayOptions(poll_interval_s=0.2, settle_s=0.05, watch_interval_s=0.1)
    gateway = Gateway(settings, options=options, where=XDisplay.from_env())
    service = HttpService(gateway, HttpAddress(host="127.0.0.1", port=0), announce=lambda _: None)
    gateway.services.append(service.running)
    run = asyncio.create_task(gateway.run())
    first: list[float] = []
    working: list[float] = []
    step: list[float] = []
    total: list[float] = []
    try:
        while not gateway.ready.is_set():
            if run.done():
                run.result()
            await asyncio.sleep(0.02)
        assert service.daemon is not None
        headers = {"authorization": f"Bearer {service.daemon.token}"}
        async with httpx.AsyncClient(headers=headers, timeout=60) as http:
            client = await create_client(service.url, ClientConfig(httpx_client=http))
            for i in range(tasks):
                model.set_default(scripted([move]))
                t0 = time.perf_counter()
                marks: dict[str, float] = {}
                async for response in client.send_message(request(f"bench task {i}")):
                    now = (time.perf_counter() - t0) * 1000
                    marks.setdefault("first", now)
                    if response.HasField("status_update"):
                        update = response.status_update
                        if update.status.state == TaskState.TASK_STATE_WORKING:
                            marks.setdefault("working", now)
                        said = " ".join(p.text for p in update.status.message.parts)
                        if said.startswith("step "):
                            marks.setdefault("step", now)
                marks["end"] = (time.perf_counter() - t0) * 1000
                first.append(marks["first"])
                working.append(marks["working"])
                step.append(marks["step"])
                total.append(marks["end"])
            await client.close()
    finally:
        gateway.stop()
        await asyncio.wait_for(run, timeout=30)
        model.stop()
    return {
        "tasks": tasks,
        "first_update_ms": stats(first),
        "first_working_ms": stats(working),
        "first_step_update_ms": stats(step),
        "task_ms": stats(total),
        "target_first_update_p50_ms": TARGET_FIRST_MS,
        "meets_target": statistics.median(first) <= TARGET_FIRST_MS,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20)
    args = parser.parse_args()
    from tests.xserver import start_xvfb

    with start_xvfb(1280, 800, set_env=True):
        result = asyncio.run(measure(args.tasks))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
