"""The message archive at scale: what archiving one message and finding one by id cost with a
small history and with a large one (DESIGN section 14: a change costs what it touches).

Real parts: a data dir in a temp folder, :class:`~jarvis.gateway.queue.MessageQueue` and its
archive (day files under ``messages/archive/``, the index beside them). The history is written
straight into day files in their own format (:func:`~jarvis.gateway.message_archive.render_day`)
and ends today, so the messages archived during the run go to a day file already holding
``--per-day`` entries.

- archive: ``MessageQueue.archive`` of a message in processing (processing.md rewritten, the
  entry appended to today's file, the index updated), p50 and p95 over ``--appends``;
- find: ``MessageQueue.find(id)`` without a date, for ids drawn from the whole history, p50
  and p95 over ``--finds``;
- the index's first build from the files (the first start on an existing data dir).

Prints one JSON object: both histories, the ratios large/small of the p50s, and whether they
meet the target (at most 3).

    .venv/bin/python bench/message_archive.py [--days 30] [--per-day 1000] [--small 100]
        [--appends 200] [--finds 300]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jarvis.gateway.message_format import Message

ROOT = Path(__file__).resolve().parent.parent
TARGET_RATIO = 3.0


def history_message(day: date, n: int) -> Message:
    """The ``n``-th message archived on ``day``, canonical (built without validation: a large
    history holds tens of thousands)."""
    from jarvis.gateway.message_format import Message

    at = datetime.combine(day, datetime.min.time()) + timedelta(seconds=30 * n)
    return Message.model_construct(
        id=f"m-{day:%Y%m%d}-{n:06d}",
        timestamp=at,
        sender="fleet",
        channel="api",
        text=f"Task {n} of {day}: open the report, export it as PDF and mail it to the team.",
        task_id=f"T{day:%m%d}{n:05d}",
        outcome="completed",
        archived_at=at + timedelta(seconds=20),
        result="Exported report.pdf and sent it.",
    )


def make_history(data: Path, days: int, per_day: int, last_day: date) -> list[str]:
    """Day files ``days`` long, ending ``last_day``, ``per_day`` entries each; their ids."""
    from jarvis.gateway.message_archive import render_day
    from jarvis.gateway.queue import MessageQueue

    folder = MessageQueue(data).archive_dir
    folder.mkdir(parents=True, exist_ok=True)
    ids: list[str] = []
    for back in reversed(range(days)):
        day = last_day - timedelta(days=back)
        records = [history_message(day, n) for n in range(per_day)]
        (folder / f"{day}.md").write_text(render_day(day, records), encoding="utf-8")
        ids += [m.id for m in records]
    return ids


def percentiles(samples_s: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in samples_s)
    return {
        "p50": round(statistics.median(ms), 3),
        "p95": round(statistics.quantiles(ms, n=20)[18], 3),
    }


def measure(data: Path, ids: list[str], appends: int, finds: int, seed: int = 7) -> dict[str, Any]:
    """Archive ``appends`` new messages and find ``finds`` ids of ``ids`` on the data dir."""
    from jarvis.gateway.queue import MessageQueue

    queue = MessageQueue(data)
    started = time.perf_counter()
    _ = queue.history.index  # the first start: the index is built from the files
    build_s = time.perf_counter() - started
    archive_s = []
    for n in range(appends):
        message = queue.append(f"bench message {n}", sender="bench", channel="api")
        queue.claim_next()
        started = time.perf_counter()
        queue.archive(message.id, "completed", task_id=f"B{n}", summary="done")
        archive_s.append(time.perf_counter() - started)
    rng = random.Random(seed)
    find_s = []
    for message_id in rng.choices(ids, k=finds):
        started = time.perf_counter()
        found = queue.find(message_id)
        find_s.append(time.perf_counter() - started)
        assert found is not None and found.id == message_id, message_id
    queue.history.close()
    return {
        "archived_before": len(ids),
        "index_build_s": round(build_s, 3),
        "archive_ms": percentiles(archive_s),
        "find_ms": percentiles(find_s),
    }


def run(days: int, per_day: int, small: int, appends: int, finds: int) -> dict[str, Any]:
    from jarvis.gateway.markdown import now

    today = now().date()
    results = {}
    for name, (n_days, n_per_day) in {"small": (1, small), "large": (days, per_day)}.items():
        with tempfile.TemporaryDirectory(prefix=f"jarvis-bench-archive-{name}-") as tmp:
            ids = make_history(Path(tmp), n_days, n_per_day, today)
            results[name] = {"days": n_days, **measure(Path(tmp), ids, appends, finds)}
    ratio = {
        what: round(results["large"][what]["p50"] / results["small"][what]["p50"], 2)
        for what in ("archive_ms", "find_ms")
    }
    return {
        "bench": "message archive: archive and find by id, small and large history",
        **results,
        "ratio_large_small_p50": ratio,
        "target_ratio": TARGET_RATIO,
        "met": {what: value <= TARGET_RATIO for what, value in ratio.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30, help="days of the large history")
    parser.add_argument("--per-day", type=int, default=1000, help="messages a day, large")
    parser.add_argument("--small", type=int, default=100, help="messages of the small history")
    parser.add_argument("--appends", type=int, default=200)
    parser.add_argument("--finds", type=int, default=300)
    args = parser.parse_args()
    if min(args.days, args.per_day, args.small, args.appends, args.finds) < 1:
        parser.error("every count must be at least 1")
    sys.path.insert(0, str(ROOT))
    print(json.dumps(run(args.days, args.per_day, args.small, args.appends, args.finds)))


if __name__ == "__main__":
    main()
