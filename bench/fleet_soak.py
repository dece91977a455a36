"""The fleet over a long run (issue 33): does it stay as fast, and as small, at task 1,500
as at task 1, and does every task end exactly once?

Real parts, as bench/fleet.py has them: a redis-server on loopback (AOF on, a password),
``--workers`` (4) `jarvis worker` processes each on its own Xvfb, and the coordinator,
here `jarvis serve --fleet` as a subprocess on an Xvfb of its own (tests/fleet_harness.py),
so that the resident memory measured is the coordinator's alone and not the bench's (the
scripted model, the feeder and the poller run in this process). The model is bench/fleet.py's:
each step request answered after ``--model-s`` (0.2 s), a task is ``--steps`` (2) steps (a
pointer move, then ``finished``), the router's and the verifier's requests answered at once.

- Feeding: ``--tasks`` (1,500) files dropped into the inbox as bench/fleet.py drops them
  (written aside, then moved in), paced so that at most ``--ahead`` (50) tasks are dropped
  and not yet ended: the queue never runs dry (4 workers take 4), yet the inbox, the router's
  list of open tasks and todos.md's open part stay the size a busy fleet has, not 1,500.
- ``--history N`` first writes N ended tasks into todos.md (through ``render_todos``), to
  start as a fleet that has run for a while.
- Throughput: the bench polls the books (todos.md and todos/archive/*.md, read only when
  their size or mtime changed; a text count of ended task ids) every 0.2 s and notes when
  each task was seen ended. A window of W tasks runs from the previous window's end (the
  first one's: the first drop) to its W-th task: tasks/min of the first and the last 300,
  their ratio (target >= 0.9), and of every 100 (the bucket). Steadier, beside them: the
  first 300 after the first bucket (the warm-up) against the last 300 before the drain
  (the last ``--ahead`` tasks end with nothing new coming in).
- Memory: the coordinator's VmRSS (/proc) after the first bucket (the warm-up) and when the
  last task ended; growth target <= 50 MB; the series per bucket, and the coordinator's CPU
  seconds per bucket (a book that costs what it holds shows there first).
- Nothing lost, nothing twice: after the coordinator stopped, todos.md and
  todos/archive/*.md (``parse_todos``) hold each dropped task exactly once (by task id and
  by the name in its text), completed; each ended task's journal (runs/*/TASK/events.jsonl)
  shows one task_finished and one reply_ready (more than one task_started is reported as a
  retry); the inbox archive answered each message once and the inbox is empty. A task not
  in the books that still waits in the inbox (a run that did not finish) is not lost. The
  coordinator's output and log: error and warning lines, counted, the first few shown.
- Where the time goes, per bucket: from a task's drop to its entry in todos.md (the inbox
  and the router) and from there to its completion (medians, whole seconds as the books
  keep them); and how far the books trail the model's ``finished`` answers.

A run that stalls (no task ended for ``--stall-s``), passes ``--max-minutes`` or gets SIGTERM
(or Ctrl+C) stops and reports how far it got. ``--quick`` is 60 tasks, 10 ahead (windows of
12, buckets of 6). ``--keep DIR`` leaves the data dirs and the coordinator's output in DIR,
and what the soak saw so far in DIR/soak.json (the drops, when tasks were seen ended, the
samples), kept up to date should the bench itself be killed. Prints one JSON object, with
each target and whether it is met.

    .venv/bin/python bench/fleet_soak.py [--quick] [--tasks 1500] [--workers 4]
        [--model-s 0.2] [--steps 2] [--history 0] [--ahead 50] [--keep DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import itertools
import json
import os
import re
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

NAME = "BENCH-s{:05d}"
_ENDED = re.compile(r"^### \[(T\d+)\].*\n- status: (?:completed|failed|cancelled)\s*$", re.M)
_PROBLEM = re.compile(r"\b(ERROR|CRITICAL|WARNING|Traceback)\b")
TARGET_RATIO = 0.9
TARGET_RSS_GROWTH_MB = 50.0
QUICK_TASKS = 60
POLL_S = 0.2
RSS_EVERY_S = 2.0


# --- the books --------------------------------------------------------------------------
def book_files(data: Path) -> list[Path]:
    """todos.md and the archive of ended tasks (todos/archive/*.md), where they exist."""
    files = sorted((data / "todos" / "archive").glob("*.md"))
    return [p for p in [data / "todos.md", *files] if p.is_file()]


class EndedCounter:
    """How many tasks the books hold ended, each id once (a task is in both todos.md and
    the archive for a moment while it moves); a file is re-read only when it changed."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self._seen: dict[Path, tuple[tuple[int, int], set[str]]] = {}

    def __call__(self) -> int:
        ended: set[str] = set()
        for path in book_files(self.data):
            with contextlib.suppress(FileNotFoundError):
                st = path.stat()
                stamp = (st.st_mtime_ns, st.st_size)
                kept = self._seen.get(path)
                if kept is None or kept[0] != stamp:
                    kept = (stamp, set(_ENDED.findall(path.read_text(encoding="utf-8"))))
                    self._seen[path] = kept
                ended |= kept[1]
        return len(ended)


def write_history(data: Path, count: int) -> None:
    """``count`` completed tasks in todos.md, as a fleet that has run for a while has."""
    from jarvis.gateway.markdown import Document
    from jarvis.gateway.todo_format import Todo, render_todos
    from jarvis.gateway.todos import TODOS_PREAMBLE

    start = datetime.now().replace(microsecond=0) - timedelta(days=30)
    doc: Any = Document(TODOS_PREAMBLE)
    for n in range(1, count + 1):
        at = start + timedelta(seconds=60 * n)
        doc.items.append(
            Todo(
                id=f"T{n:03d}", title=f"Earlier task {n}", status="completed",
                created=at, started=at, completed=at + timedelta(seconds=20), source="file",
                summary=f"did earlier task {n}", description=f"Earlier task {n}, long done.",
            )
        )  # fmt: skip
    data.mkdir(parents=True, exist_ok=True)
    (data / "todos.md").write_text(render_todos(doc), encoding="utf-8")


# --- the coordinator process --------------------------------------------------------------
def rss_mb(pid: int) -> float | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    rss = [line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")]
    return round(int(rss[0]) / 1024, 1) if rss else None  # none: it exited (a zombie)


def cpu_s(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


# --- the soak -----------------------------------------------------------------------------
@dataclass
class Soak:
    """What the feeding loop saw: when each task was seen ended, the coordinator's samples."""

    started: float = 0.0
    dropped: int = 0
    drops: list[float] = field(default_factory=list)
    """When each task was dropped into the inbox."""
    ended_at: list[float] = field(default_factory=list)
    rss: list[tuple[int, float]] = field(default_factory=list)
    """(tasks ended, MB), every few seconds."""
    cpu: list[tuple[int, float]] = field(default_factory=list)
    stopped_by: str = "done"


def feed(args: argparse.Namespace, data: Path, pid: int, model: Any) -> Soak:
    """Drop the tasks, ``args.ahead`` ahead of the ended ones, until all ended (or a stall)."""
    soak = Soak()
    try:
        _soak(args, soak, EndedCounter(data), pid, model)
    except KeyboardInterrupt:  # Ctrl+C or SIGTERM: report how far it got
        soak.stopped_by = "interrupted"
    mb, used = rss_mb(pid), cpu_s(pid)
    if mb is not None and used is not None:
        soak.rss.append((len(soak.ended_at), mb))
        soak.cpu.append((len(soak.ended_at), used))
    return soak


def _soak(args: argparse.Namespace, soak: Soak, ended: EndedCounter, pid: int, model: Any) -> None:
    from bench.fleet import drop

    base = ended()  # the history
    soak.started = time.time()
    deadline = time.monotonic() + args.max_minutes * 60
    last_progress, last_sample = time.monotonic(), 0.0
    while len(soak.ended_at) < args.tasks:
        count = ended() - base
        now = time.time()
        while len(soak.ended_at) < count:
            soak.ended_at.append(now)
            last_progress = time.monotonic()
        while soak.dropped < args.tasks and soak.dropped - count < args.ahead:
            soak.drops.append(drop(ended.data, NAME.format(soak.dropped)))
            soak.dropped += 1
        if time.monotonic() - last_sample >= RSS_EVERY_S:
            last_sample = time.monotonic()
            mb, used = rss_mb(pid), cpu_s(pid)
            if mb is None or used is None:
                soak.stopped_by = "the coordinator exited"
                return
            soak.rss.append((count, mb))
            soak.cpu.append((count, used))
            del model.server.requests[:]  # the fake model keeps every request: not needed
            if args.keep:  # what was seen so far, should the bench itself be killed
                saved = {"args": vars(args), "soak": dataclasses.asdict(soak)}
                Path(args.keep, "soak.json").write_text(json.dumps(saved))
        if time.monotonic() - last_progress > args.stall_s:
            soak.stopped_by = f"stalled: no task ended for {args.stall_s:.0f} s"
            return
        if time.monotonic() > deadline:
            soak.stopped_by = f"--max-minutes {args.max_minutes:g} passed"
            return
        time.sleep(POLL_S)


def per_min(count: int, seconds: float) -> float | None:
    return round(count / seconds * 60, 2) if seconds > 0 else None


def throughput(soak: Soak, window: int, bucket: int, ahead: int) -> dict[str, Any]:
    """Tasks/min of the first and the last ``window`` tasks, and of every ``bucket``; and,
    steadier, of the first window after the first bucket (the warm-up) and of the last one
    before the drain (the last ``ahead`` tasks end with no new ones coming in)."""
    times, n = soak.ended_at, len(soak.ended_at)

    def rate(first: int, last: int) -> float | None:  # tasks first+1 .. last
        begin = times[first - 1] if first > 0 else soak.started
        return per_min(last - first, times[last - 1] - begin)

    def ratio(first: float | None, last: float | None) -> float | None:
        return round(last / first, 3) if first and last else None

    series = [rate(i, min(i + bucket, n)) for i in range(0, n, bucket)]
    first = rate(0, window) if n >= window else None
    last = rate(n - window, n) if n >= 2 * window else None
    fed = n - ahead if soak.stopped_by == "done" else n
    warm = rate(bucket, bucket + window) if fed - window >= bucket + window else None
    fed_last = rate(fed - window, fed) if warm else None
    return {
        "window": window,
        "first_tasks_per_min": first,
        "last_tasks_per_min": last,
        "ratio": ratio(first, last),
        "after_warmup_tasks_per_min": warm,
        "last_before_drain_tasks_per_min": fed_last,
        "steady_ratio": ratio(warm, fed_last),
        "overall_tasks_per_min": per_min(n, times[-1] - soak.started) if n else None,
        "bucket": bucket,
        "series_tasks_per_min": series,
    }


def record_lag(soak: Soak, model: Any, bucket: int) -> dict[str, Any]:
    """How far the books trail the workers: the k-th task seen ended in the books against
    the k-th ``finished`` the model answered (s), at the end of each bucket."""
    answered = sorted(t[-1] + model.delay_s for t in model.step_times.values() if t)
    lags = [seen - done for seen, done in zip(soak.ended_at, answered, strict=False)]
    return {
        "record_lag_s_series": [round(lags[min(i + bucket, len(lags)) - 1], 2)
                                for i in range(0, len(lags), bucket)],
        "record_lag_s_max": round(max(lags), 2) if lags else None,
    }  # fmt: skip


def memory(soak: Soak, warmup: int, bucket: int) -> dict[str, Any]:
    """The coordinator's RSS after the warm-up and at the end; per bucket, and CPU."""
    after = [mb for done, mb in soak.rss if done >= warmup]
    start = after[0] if after else None
    end = soak.rss[-1][1] if soak.rss else None

    def at_buckets(samples: list[tuple[int, float]]) -> list[float]:
        picked: dict[int, float] = {}
        for done, value in samples:
            picked.setdefault(done // bucket, value)
        return [picked[k] for k in sorted(picked)]

    cpu = at_buckets(soak.cpu)
    return {
        "rss_idle_mb": soak.rss[0][1] if soak.rss else None,
        "rss_start_mb": start,
        "warmup_tasks": warmup,
        "rss_end_mb": end,
        "rss_growth_mb": round(end - start, 1) if start is not None and end is not None else None,
        "rss_peak_mb": max(mb for _d, mb in soak.rss) if soak.rss else None,
        "rss_series_mb": at_buckets(soak.rss),
        "cpu_s_per_bucket": [round(b - a, 1) for a, b in itertools.pairwise(cpu)],
        "cpu_s_total": round(soak.cpu[-1][1], 1) if soak.cpu else None,
    }


# --- the record -----------------------------------------------------------------------------
def books(data: Path) -> tuple[dict[str, list[Any]], Counter[str]]:
    """The bench's tasks in todos.md and the archive, by the name in their text; and how
    many times each task id stands there."""
    from jarvis.gateway.todo_format import parse_todos

    by_name: dict[str, list[Any]] = {}
    places: Counter[str] = Counter()
    for path in book_files(data):
        for todo in parse_todos(path.read_text(encoding="utf-8")).entries():
            places[todo.id] += 1
            if found := re.search(r"BENCH-s\d+", todo.description or ""):
                by_name.setdefault(found.group(), []).append(todo)
    return by_name, places


def stages(by_name: dict[str, list[Any]], drops: list[float], bucket: int) -> dict[str, Any]:
    """Where a task's time goes, per bucket of tasks in the order dropped (medians, s; the
    books keep whole seconds): from the drop to its task in todos.md (inbox, router), and
    from there to its completion (dispatch, the worker, the outcome written back)."""
    routed: list[list[float]] = []
    ran: list[list[float]] = []
    for n, dropped in enumerate(drops):
        todo = (by_name.get(NAME.format(n)) or [None])[0]
        if n % bucket == 0:
            routed.append([])
            ran.append([])
        if todo is not None:
            routed[-1].append(todo.created.timestamp() - dropped)
            if todo.completed is not None:
                ran[-1].append((todo.completed - todo.created).total_seconds())
    median = lambda xs: round(statistics.median(xs), 1) if xs else None  # noqa: E731
    return {
        "drop_to_task_s_series": [median(xs) for xs in routed],
        "task_to_completed_s_series": [median(xs) for xs in ran],
    }


def ledger(data: Path, dropped: int) -> dict[str, Any]:
    """Each dropped task once in the books, completed, one finished attempt in its journal.
    A task not in the books is lost unless it still waits (a run that did not finish):
    its file in messages/drop/ or its message in the inbox."""
    from jarvis.gateway.queue import MessageQueue

    by_name, places = books(data)
    queue = MessageQueue(data)
    waits = [m.text for m in queue.pending() + queue.processing()]
    waits += [p.name for p in queue.drop_dir.glob("BENCH-*.md")]
    waiting = set(re.findall(r"BENCH-s\d+", "\n".join(waits)))
    names = [NAME.format(n) for n in range(dropped)]
    lost = [n for n in names if n not in by_name and n not in waiting]
    twice = sorted(n for n, ts in by_name.items() if len({t.id for t in ts}) > 1)
    ids = sorted({t.id for ts in by_name.values() for t in ts})
    statuses = Counter(t.status for ts in by_name.values() for t in ts)
    ended = sorted({t.id for ts in by_name.values() for t in ts if not t.is_open})
    runs, bad, retried = data / "runs", [], []
    for task_id in ended:  # an open one (a run that did not finish) has no finish yet
        kinds = [
            json.loads(line)["kind"]
            for path in runs.glob(f"*/{task_id}/events.jsonl")
            for line in path.read_text(encoding="utf-8").splitlines()
        ]
        if kinds.count("task_finished") != 1 or kinds.count("reply_ready") != 1:
            bad.append({task_id: dict(Counter(k for k in kinds if k.startswith(("task", "r"))))})
        elif kinds.count("task_started") > 1:
            retried.append(task_id)
    answered = Counter()
    for path in sorted(queue.archive_dir.glob("????-??-??.md")):
        answered.update(m.outcome for m in queue.archived(date.fromisoformat(path.stem)))
    return {
        "dropped": dropped,
        "tasks_in_books": len(ids),
        "ids_more_than_once_in_books": sorted(i for i, c in places.items() if c > 1),
        "lost": lost[:20],
        "lost_count": len(lost),
        "twice": twice[:20],
        "twice_count": len(twice),
        "statuses": dict(statuses),
        "journal_not_one_finish": bad[:20],
        "journal_not_one_finish_count": len(bad),
        "retried": retried[:20],
        "retried_count": len(retried),
        "archived_todo_files": len(book_files(data)) - 1,
        "inbox_answered": dict(answered),
        "inbox_left": len(queue.pending()) + len(queue.processing()),
        "waiting_not_in_books": len(waiting - set(by_name)),
    }


def log_problems(text: str) -> dict[str, Any]:
    lines = [line for line in text.splitlines() if _PROBLEM.search(line)]
    distinct = list(dict.fromkeys(re.sub(r"\d", "#", line)[:200] for line in lines))
    return {"problem_lines": len(lines), "first_distinct": distinct[:8]}


def wait_for_workers(fleet: Any, names: list[str], timeout: float = 180) -> None:
    from tests.fleet_harness import wait_for

    for name in names:
        wait_for(lambda n=name: "waiting for tasks" in fleet.err(n), timeout, f"{name} up")


def soak_run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    from bench.fleet import Model
    from tests.fleet_harness import Coordinator, wait_for
    from tests.redis_server import RedisServer
    from tests.test_fleet_worker import Fleet
    from tests.xserver import start_xvfb

    model = Model(args.model_s, args.steps)
    data = tmp / "data"
    data.mkdir(parents=True, exist_ok=True)
    if args.history:
        write_history(data, args.history)
    names = [f"s{i + 1}" for i in range(args.workers)]
    with RedisServer(appendonly=True) as redis, start_xvfb(800, 600) as screen:
        coordinator = Coordinator(screen, model.server, redis, data, tmp / "serve.out")
        coordinator.env |= {
            "JARVIS_FLEET__LEASE_S": str(args.lease),
            "ORT_DISABLE_TELEMETRY": "1",
            "HF_HUB_OFFLINE": "1",
        }
        fleet = Fleet(tmp, model.server, redis.url)
        exit_code: int | None = None
        try:
            proc = coordinator.start()
            for name in names:
                fleet.start(name, lease_s=args.lease)
            wait_for_workers(fleet, names)
            up = "tasks go to the fleet's workers"
            wait_for(lambda: up in coordinator.output() or not coordinator.alive(), 120, up)
            soak = feed(args, data, proc.pid, model)
            exit_code = coordinator.stop()
        finally:
            coordinator.stop()
            with contextlib.redirect_stdout(sys.stderr):  # what the workers said: not JSON
                fleet.stop()
            model.server.stop()
        problems = log_problems(coordinator.output())
    return summary(args, soak, data, record_lag(soak, model, bucket_of(args)), exit_code, problems)


def bucket_of(args: argparse.Namespace) -> int:
    return min(100, max(1, args.tasks // 10))


def summary(
    args: argparse.Namespace, soak: Soak, data: Path, lag: dict[str, Any],
    exit_code: int | None, problems: dict[str, Any],
) -> dict[str, Any]:  # fmt: skip
    """The JSON object: the soak's figures, the record's checks, the targets."""
    window, bucket = min(300, max(1, args.tasks // 5)), bucket_of(args)
    record = ledger(data, soak.dropped)
    rates = throughput(soak, window, bucket, args.ahead)
    mem = memory(soak, bucket, bucket)
    finished = len(soak.ended_at) >= args.tasks
    clean = (
        finished
        and record["lost_count"] == 0
        and record["twice_count"] == 0
        and not record["ids_more_than_once_in_books"]
        and record["statuses"] == {"completed": args.tasks}
        and record["journal_not_one_finish_count"] == 0
    )
    return {
        "bench": "fleet soak: throughput, coordinator memory, exactly once",
        "tasks": args.tasks,
        "workers": args.workers,
        "model_s": args.model_s,
        "steps_per_task": args.steps,
        "history": args.history,
        "ahead": args.ahead,
        "lease_s": args.lease,
        "cpus": os.cpu_count(),
        "finished": finished,
        "stopped_by": soak.stopped_by,
        "ended": len(soak.ended_at),
        "wall_s": round(soak.ended_at[-1] - soak.started, 1) if soak.ended_at else None,
        "throughput": {**rates, **lag},
        "coordinator": {**mem, "exit_code": exit_code, "log": problems},
        "stages": stages(books(data)[0], soak.drops, bucket),
        "record": record,
        "targets": {
            "last_over_first": TARGET_RATIO,
            "rss_growth_mb": TARGET_RSS_GROWTH_MB,
            "exactly_once": True,
        },
        "met": {
            "last_over_first": rates["ratio"] >= TARGET_RATIO if rates["ratio"] else None,
            "rss_growth": mem["rss_growth_mb"] <= TARGET_RSS_GROWTH_MB
            if mem["rss_growth_mb"] is not None
            else None,
            "exactly_once": clean,
        },
    }


def report(folder: Path) -> dict[str, Any]:
    """The JSON object of a ``--keep DIR`` run whose bench was killed: from DIR/soak.json
    (as of its last sample) and the data dir; no record lag (the model's side is gone)
    and no exit code."""
    saved = json.loads((folder / "soak.json").read_text(encoding="utf-8"))
    args = argparse.Namespace(**saved["args"])
    soak = Soak(**saved["soak"])
    if soak.stopped_by == "done" and len(soak.ended_at) < args.tasks:
        soak.stopped_by = "the bench was killed (figures from soak.json, by --report)"
    data = folder / "data"
    logs = [folder / "serve.out", *sorted((data / "logs").glob("*.log"))]
    text = "".join(p.read_text(encoding="utf-8") for p in logs if p.is_file())
    return summary(args, soak, data, {}, None, log_problems(text))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1500)
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_TASKS} tasks")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--model-s", type=float, default=0.2, help="each step's model time")
    parser.add_argument("--steps", type=int, default=2, help="steps per task")
    parser.add_argument("--history", type=int, default=0, help="ended tasks in todos.md first")
    parser.add_argument("--ahead", type=int, help="tasks dropped, not yet ended (50; 10 quick)")
    parser.add_argument("--lease", type=float, default=10.0, help="the workers' lease (s)")
    parser.add_argument("--stall-s", type=float, default=300.0, help="give up after (s)")
    parser.add_argument("--max-minutes", type=float, default=180.0)
    parser.add_argument("--keep", metavar="DIR", help="run in DIR (new) and leave it there")
    parser.add_argument("--report", metavar="DIR", help="only report a killed --keep DIR run")
    args = parser.parse_args()
    if args.report:
        print(json.dumps(report(Path(args.report))))
        return
    if args.quick:
        args.tasks = QUICK_TASKS
    if args.ahead is None:
        args.ahead = 10 if args.quick else 50
    if args.tasks < 1 or args.workers < 1 or args.steps < 1 or args.ahead < 1:
        parser.error("--tasks, --workers, --steps and --ahead are at least 1")
    if args.keep and Path(args.keep).exists() and any(Path(args.keep).iterdir()):
        parser.error(f"--keep: {args.keep} is not empty")
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # as Ctrl+C: report, clean up
    with contextlib.ExitStack() as stack:
        tmp = args.keep or stack.enter_context(tempfile.TemporaryDirectory(prefix="jarvis-soak-"))
        print(json.dumps(soak_run(args, Path(tmp))))


if __name__ == "__main__":
    main()
