"""Replay against the recorded run: time per step, and the ratio.

Records a task on a private Xvfb (1920x1080) against the Tk test app with the scripted
model (the oracle) answering every decision after a realistic delay (default 2 s), then
resets the app and replays the run with ``jarvis replay``'s machinery (no model). Each
step clicks a widget and most also type. Prints one JSON object: the recorded and the
replayed time per step (p50, mean), the ratio of the means, whether the replay did the
same (the app's final texts), and whether it meets the target (ratio >= 5).

    python bench/replay.py [--steps 10] [--delay-s 2.0]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
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
TARGET_RATIO = 5.0


def stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": round(ordered[len(ordered) // 2], 1) if ordered else 0.0,
        "mean": round(statistics.fmean(values), 1) if values else 0.0,
        "n": len(values),
    }


def oracle_steps(app: Any, steps: int) -> list[list[dict[str, dict[str, Any]]]]:
    from jarvis.desktop.screen import Size, fit_size, screen_to_model

    screen = Size(*app.screen)
    model = fit_size(screen, 1280)

    def at(widget: str) -> dict[str, int]:
        x, y = screen_to_model(*app.widget_center(widget), model, screen)
        return {"x": x, "y": y}

    script: list[list[dict[str, dict[str, Any]]]] = []
    for i in range(steps - 1):
        if i % 3 == 0:
            script.append([{"click": at("box")}, {"type": {"text": f"w{i} "}}])
        elif i % 3 == 1:
            script.append([{"click": at("notes")}, {"type": {"text": f"line {i} "}}])
        else:
            script.append([{"click": at("ok")}])
    script.append([{"finished": {"summary": "done"}}])
    return script


async def record(settings: Any, steps: list[Any], delay_s: float) -> tuple[str, list[float]]:
    from jarvis.agent.factory import build_agent
    from jarvis.eval.oracle import OracleProvider
    from jarvis.events import EventBus, EventRecorder, StepStarted
    from jarvis.runs.journal import JournalWriter

    bus = EventBus()
    events = EventRecorder(bus)
    journal = JournalWriter.for_settings(settings, bus, channel="bench")
    try:
        async with build_agent(
            settings, bus, provider=OracleProvider(steps, delay_s), where=XDisplay.from_env()
        ) as agent:
            outcome = await agent.run("type into the Tk app and press OK")
    finally:
        journal.close()
    assert outcome.status == "finished", outcome.summary
    starts = [e.ts for e in events.of(StepStarted)]
    # a step lasts from its start to the next one's; the last (finished) is not an action
    per_step = [(b - a) * 1000 for a, b in itertools.pairwise(starts)]
    return outcome.task_id, per_step


def replay_phases(folder: Path) -> dict[str, float]:
    """Mean milliseconds per replayed step in each phase (from its step records)."""
    from jarvis.runs.step_file import load_steps

    steps = [s for _, s in load_steps(folder)]
    keys = ("settle", "capture", "act", "model")
    return {k: round(statistics.fmean(s.timings_ms.get(k, 0.0) for s in steps), 1) for k in keys}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    from jarvis.config import load_settings
    from jarvis.runs.replay_run import replay_task
    from tests.tkdriver import TkApp
    from tests.xserver import start_xvfb

    with start_xvfb(1920, 1080, set_env=True) as server:
        app = TkApp.start()
        try:
            data_dir = Path(tempfile.mkdtemp(prefix="jarvis-bench-replay-"))
            settings = load_settings(data_dir, long_term_memory=False, max_steps=args.steps + 2)
            app.reset()
            task_id, recorded = await record(settings, oracle_steps(app, args.steps), args.delay_s)
            texts = (app.entry_text(), app.notes_text(), app.ok_pressed())
            app.reset()
            started = time.perf_counter()
            outcome = await replay_task(settings, task_id, where=XDisplay.from_env())
            wall = time.perf_counter() - started
            phases = replay_phases(outcome.folder)
            app.sync()
            same = (app.entry_text(), app.notes_text(), app.ok_pressed()) == texts
        finally:
            app.close()
    rec, rep = stats(recorded), stats(outcome.step_ms)
    ratio = round(rec["mean"] / rep["mean"], 2) if rep["mean"] else None
    return {
        "screen": f"{server.width}x{server.height}",
        "model_delay_s": args.delay_s,
        "recorded_step_ms": rec,
        "replay_step_ms": rep,
        "replay_phase_ms": phases,
        "replay_wall_s": round(wall, 2),
        "replay_stopped": outcome.stopped,
        "replay_same_result": same,
        "ratio": ratio,
        "target_ratio": TARGET_RATIO,
        "meets_target": bool(ratio and ratio >= TARGET_RATIO and same and not outcome.stopped),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--delay-s", type=float, default=2.0)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main_async(args))))


if __name__ == "__main__":
    main()
