"""The coordinator under cProfile, every thread of it, and a summary of where its time went.

``python bench/capacity_profile.py OUT ARGS...`` runs ``jarvis ARGS...`` (here ``serve
--fleet``) with a profiler in the main thread (the event loop) and one in each thread
started after it (``asyncio.to_thread``'s pool, where todos.md is read and written, the
file watcher...); SIGUSR1 clears what they counted so far (the start-up's imports); on
exit it writes ``OUT.main`` and ``OUT.threads`` (pstats files).
Times are wall-clock, as cProfile counts them: a thread's time includes waiting for the
GIL; the loop's idle time is its time in ``epoll.poll``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

IDLE = (
    "<method 'poll' of 'select.epoll' objects>",
    "<method 'get' of '_queue.SimpleQueue' objects>",
    "<method 'poll' of 'select.poll' objects>",
    "<method 'acquire' of '_thread.lock' objects>",
    "<method 'acquire' of '_thread.RLock' objects>",
    "<built-in method time.sleep>",
    "<method 'control' of 'select.kqueue' objects>",
)
"""Waiting, not working: the loop with nothing to do, a pool thread with no job, the file
watcher's thread waiting for inotify."""
PLUMBING = (
    "asyncio/",
    "threading.py",
    "concurrent/futures/",
    "selectors.py",
    "contextvars",
    "bench/capacity_profile.py",
    "<built-in method builtins.exec>",
    "jarvis/cli.py",
    "jarvis/__main__.py",
)
"""Frames every call passes through (the loop, the pool, the entry point): left out of
the cumulative list, where they would only say "everything"."""


def serve_profiled(out: str, argv: list[str]) -> int:
    """``jarvis argv`` with every thread profiled; the profiles go to ``out``.main/threads."""
    import cProfile
    import pstats
    import signal
    import threading

    sys.path.insert(0, str(ROOT))
    from jarvis.cli import main

    threads: list[cProfile.Profile] = []

    def profile_this_thread(_frame: Any, _event: str, _arg: Any) -> None:
        profile = cProfile.Profile()
        threads.append(profile)
        profile.enable()  # (replaces this hook in this thread)

    def clear(_signal: int, _frame: Any) -> None:
        for profile in [loop, *threads]:
            profile.clear()

    threading.setprofile(profile_this_thread)
    signal.signal(signal.SIGUSR1, clear)
    loop = cProfile.Profile()
    loop.enable()
    try:
        return main(argv)
    finally:
        loop.disable()
        threading.setprofile(None)  # type: ignore[arg-type]
        loop.dump_stats(f"{out}.main")
        merged = pstats.Stats()
        for profile in threads:
            profile.create_stats()
            if profile.stats:  # type: ignore[attr-defined]  # (a thread that did nothing: none)
                merged.add(profile)
        merged.dump_stats(f"{out}.threads")


def label(key: tuple[str, int, str]) -> str:
    """``path:line(function)``, the path from the project or the package on."""
    path, line, name = key
    if path == "~" and line == 0:
        return name
    for marker in ("site-packages/", "/lib/python3."):
        if marker in path:
            path = path.split(marker, 1)[1]
            path = path.split("/", 1)[1] if marker.startswith("/lib") else path
            break
    else:
        root = str(ROOT) + "/"
        path = path[len(root) :] if path.startswith(root) else path
    return f"{path}:{line}({name})"


def summary(out: str, top: int = 25) -> dict[str, Any]:
    """Where the coordinator's time went: the loop's busy share, the pool's, and the top
    functions (project code by cumulative time, anything by own time)."""
    import pstats

    parts: dict[str, Any] = {}
    for part in ("main", "threads"):
        path = Path(f"{out}.{part}")
        parts[part] = pstats.Stats(str(path)).stats if path.is_file() else {}  # type: ignore[attr-defined]
    merged: dict[str, list[float]] = {}
    for stats in parts.values():
        for key, (_cc, calls, own, cumulative, _callers) in stats.items():
            entry = merged.setdefault(label(key), [0, 0.0, 0.0])
            entry[0] += calls
            entry[1] += own
            entry[2] += cumulative
    idle = {name: round(merged[name][1], 2) for name in IDLE if name in merged}
    loop_total = sum(v[2] for v in parts["main"].values())
    loop_idle = sum(v[2] for k, v in parts["main"].items() if label(k) in IDLE)
    pool_total = sum(v[2] for v in parts["threads"].values())
    pool_idle = sum(v[2] for k, v in parts["threads"].items() if label(k) in IDLE)

    def row(name: str) -> dict[str, Any]:
        calls, own, cumulative = merged[name]
        return {"function": name, "calls": int(calls), "own_s": round(own, 2),
                "cumulative_s": round(cumulative, 2)}  # fmt: skip

    ours = [n for n in merged if n.startswith("jarvis/") and not n.startswith(PLUMBING)]
    ours.sort(key=lambda n: -merged[n][2])
    anything = [n for n in merged if n not in IDLE and not n.startswith(PLUMBING)]
    anything.sort(key=lambda n: -merged[n][1])
    return {
        "profiler": "cProfile, every thread (wall-clock; a thread's time includes GIL waits)",
        "event_loop_s": round(loop_total, 1),
        "event_loop_busy_share": round(1 - loop_idle / loop_total, 3) if loop_total else None,
        "threads_s": round(pool_total, 1),
        "threads_busy_s": round(pool_total - pool_idle, 1),
        "idle_s": idle,
        "top_cumulative_jarvis": [row(n) for n in ours[:top]],
        "top_own_time": [row(n) for n in anything[:top]],
    }


if __name__ == "__main__":
    sys.exit(serve_profiled(sys.argv[1], sys.argv[2:]))
