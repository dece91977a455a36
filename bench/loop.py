"""Per-step overhead of the agent loop, everything but the model.

Runs a 30-step scripted task on a private Xvfb (1920x1080) against the Tk test app,
with a loopback model that answers at once, through the real anthropic SDK. Each
step clicks a different point of the app's pad (so the stall detector stays quiet)
and the last one calls ``finished``. Prints one JSON object: p50 and p95 per phase
(capture, model, act, settle, record) and of the overhead (step time minus model
time), with settle detection and, for comparison, with a fixed 2-second sleep
after each action, and the speed-up between the two.

    python bench/loop.py [--steps 30] [--sleep-s 2.0] [--skip-sleep]
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return round(ordered[index], 2)


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": pct(values, 0.5),
        "p95": pct(values, 0.95),
        "mean": round(statistics.fmean(values), 2) if values else 0.0,
    }


async def run_once(
    steps: int, fixed_sleep_s: float | None, server: Any, app: Any
) -> dict[str, Any]:
    from jarvis.agent.factory import build_agent
    from jarvis.config import load_settings
    from jarvis.desktop.screen import Size, fit_size, screen_to_model
    from jarvis.desktop.settle import SettleResult
    from jarvis.events import EventBus, EventRecorder, StepFinished, StepStarted
    from tests.fake_model import FakeModel, Reply, call

    model = FakeModel().start()
    data_dir = Path(tempfile.mkdtemp(prefix="jarvis-bench-loop-"))
    os.environ["ANTHROPIC_API_KEY"] = "bench-key"
    os.environ["ANTHROPIC_BASE_URL"] = model.anthropic_base_url
    settings = load_settings(data_dir, max_steps=steps + 2, max_retries=0)
    screen = Size(server.width, server.height)
    msize = fit_size(screen, settings.max_side)
    px, py, pw, ph = app.widget_rect("pad")
    replies = []
    for i in range(steps - 1):
        x = px + 40 + (i * 37) % max(1, pw - 80)
        y = py + 40 + (i * 53) % max(1, ph - 80)
        mx, my = screen_to_model(x, y, msize, screen)
        replies.append(Reply(text=f"Thought: click {i}", tool_calls=[call("click", x=mx, y=my)]))
    replies.append(Reply(text="Thought: done", tool_calls=[call("finished", summary="clicked")]))
    replies.append(Reply(text='{"done": true, "reason": "ok"}'))
    replies.append(Reply(text="1. Click the pad where asked."))  # the distilled skill
    model.script(*replies)

    bus = EventBus()
    recorder = EventRecorder(bus)
    try:
        async with build_agent(settings, bus, where=XDisplay.from_env()) as agent:
            if fixed_sleep_s is not None:

                async def fixed_sleep() -> SettleResult:
                    await asyncio.sleep(fixed_sleep_s)
                    return SettleResult(fixed_sleep_s * 1000, False, 0)

                agent._settle = fixed_sleep  # type: ignore[method-assign]
            started = time.perf_counter()
            outcome = await agent.run("click around the pad, then finish")
            wall_s = time.perf_counter() - started
    finally:
        model.stop()

    starts = {e.step: e.ts for e in recorder.of(StepStarted)}
    finished = recorder.of(StepFinished)
    phases: dict[str, list[float]] = {
        k: [] for k in ("capture", "model", "act", "settle", "record")
    }
    overhead: list[float] = []
    step_ms: list[float] = []
    for i, event in enumerate(finished):
        for key in phases:
            phases[key].append(event.timings_ms.get(key, 0.0))
        end = finished[i + 1].ts if i + 1 < len(finished) else event.ts
        total = (starts.get(event.step + 1, end) - starts[event.step]) * 1000
        step_ms.append(total)
        overhead.append(total - event.timings_ms.get("model", 0.0))
    return {
        "status": outcome.status,
        "steps": outcome.steps,
        "wall_s": round(wall_s, 2),
        "phases_ms": {k: summary(v) for k, v in phases.items()},
        "step_ms": summary(step_ms[:-1]),
        "overhead_ms": summary(overhead[:-1]),
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    from tests.tkdriver import TkApp
    from tests.xserver import start_xvfb

    with start_xvfb(1920, 1080, set_env=True) as server:
        app = TkApp.start()
        try:
            result: dict[str, Any] = {"screen": "1920x1080", "steps": args.steps}
            result["settle"] = await run_once(args.steps, None, server, app)
            if not args.skip_sleep:
                result["fixed_sleep"] = await run_once(args.steps, args.sleep_s, server, app)
                a = result["settle"]["wall_s"]
                b = result["fixed_sleep"]["wall_s"]
                result["speedup"] = round(b / a, 2) if a else None
            result["target_overhead_p50_ms"] = 250
            result["meets_target"] = result["settle"]["overhead_ms"]["p50"] <= 250
            return result
        finally:
            app.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--sleep-s", type=float, default=2.0)
    parser.add_argument("--skip-sleep", action="store_true")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main_async(args))))


if __name__ == "__main__":
    main()
