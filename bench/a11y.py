"""Benchmark reading the accessibility tree of real applications on a virtual screen.

A private Xvfb, a private session bus with the accessibility bus on it, and three
applications that publish their widgets: mousepad (GTK 3), featherpad (Qt) and Chromium
on a local page of controls. For each, once its tree is published, ``A11yReader.read``
runs ITERATIONS times on its window. Prints ONE JSON object: read time p50 and p95 in
milliseconds per app, elements read before pruning and kept after, the rendered tree's
characters and the tokens it adds to a step (four bytes a token, as the cost model
counts text), and whether every app's p95 meets the 150 ms target.

Run: ``python bench/a11y.py [--iterations N]`` (needs Xvfb, at-spi2-core, the apps).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for tests.*
from jarvis.desktop.a11y import A11yReader, Tree
from jarvis.desktop.a11y.session import A11ySession
from tests.a11yapps import EventPage, publishing_env, start_chromium
from tests.realapps import App, focus
from tests.xserver import start_xvfb

TARGET_P95_MS = 150.0
MAX_CHARS = 6000  # the tree_max_chars default


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def _first_tree(reader: A11yReader, app: App, timeout: float = 30.0) -> Tree:
    deadline = time.monotonic() + timeout
    while True:
        tree = reader.read(app.box)
        if tree is not None and len(tree.elements) >= 3:
            return tree
        if time.monotonic() > deadline:
            raise SystemExit(f"{app.name} published no tree within {timeout:.0f} s")
        time.sleep(0.2)


def measure(reader: A11yReader, app: App, iterations: int) -> dict[str, Any]:
    focus(app.window)
    tree = _first_tree(reader, app)
    times: list[float] = []
    for _ in range(iterations):
        started = time.perf_counter()
        tree = reader.read(app.box) or tree
        times.append((time.perf_counter() - started) * 1000)
    text = tree.render(MAX_CHARS)
    return {
        "read_ms_p50": round(statistics.median(times), 1),
        "read_ms_p95": round(_percentile(times, 0.95), 1),
        "elements_read": tree.visited,
        "elements_kept": len(tree.elements),
        "tree_chars": len(text),
        "tokens_per_step": max(1, math.ceil(len(text.encode()) / 4)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=40)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    results: dict[str, Any] = {}
    with (
        start_xvfb(1920, 1080, set_env=True) as xserver,
        A11ySession(xserver.env()) as session,
        A11yReader(session.address, timeout=2.0) as reader,
        tempfile.TemporaryDirectory(prefix="jarvis-bench-a11y-") as tmp,
    ):
        for name in ("mousepad", "featherpad", "chromium"):
            work = Path(tmp) / name
            work.mkdir()
            env = publishing_env(work, xserver.env(), session)
            page = EventPage() if name == "chromium" else None
            app = start_chromium(work, env, page.url) if page else App.start(name, work, env)
            try:
                results[name] = measure(reader, app, args.iterations)
            finally:
                app.close()
                if page is not None:
                    page.close()
    print(
        json.dumps(
            {
                "iterations": args.iterations,
                "apps": results,
                "target_read_ms_p95": TARGET_P95_MS,
                "meets_target": all(r["read_ms_p95"] <= TARGET_P95_MS for r in results.values()),
                "load_before": round(load_before, 2),
                "load_after": round(os.getloadavg()[0], 2),
            }
        )
    )


if __name__ == "__main__":
    main()
