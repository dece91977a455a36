"""Run folders by the thousand, written directly as the journal writer leaves them: a
``run.json`` (:class:`~jarvis.runs.run_info.RunInfo`'s fields) and a two-line journal
(``task_started``, ``task_finished``), ``per_day`` runs in each date folder, one a minute
from local midnight, ``seq`` growing with time. For tests/test_runs_index.py and
bench/runs_list.py."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from pathlib import Path


@dataclass(frozen=True)
class Made:
    task_id: str
    folder: Path
    started: float
    first_seq: int
    last_seq: int


def write_run(folder: Path, task_id: str, started: float, seq: int) -> Made:
    """One finished run of one step in ``folder``, its journal lines ``seq`` and ``seq + 1``."""
    folder.mkdir(parents=True)
    ended = started + 30
    lines = [
        {"seq": seq, "ts": started, "kind": "task_started", "task_id": task_id,
         "task": f"task {task_id}", "run": 1},
        {"seq": seq + 1, "ts": ended, "kind": "task_finished", "task_id": task_id,
         "status": "finished", "summary": "done", "steps": 1, "cost_usd": 0.001, "run": 1},
    ]  # fmt: skip
    (folder / "events.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    ending = {"status": "finished", "summary": "done", "started": started, "ended": ended,
              "steps": 1, "cost_usd": 0.001, "first_seq": seq, "last_seq": seq + 1}  # fmt: skip
    info = {"task_id": task_id, "task": f"task {task_id}", "channel": "cli", "pid": 1,
            **ending, "runs": [{"run": 1, **ending}]}  # fmt: skip
    (folder / "run.json").write_text(json.dumps(info, indent=2) + "\n")
    return Made(task_id, folder, started, seq, seq + 1)


def write_runs(
    data_dir: Path, count: int, per_day: int = 100, first: date = date(2024, 1, 1)
) -> list[Made]:
    """``count`` runs T00001... oldest first, and ``runs/seq`` at their last line."""
    runs = data_dir / "runs"
    made = []
    for i in range(count):
        day = first + timedelta(days=i // per_day)
        started = datetime.combine(day, time(0, 0)).timestamp() + 60 * (i % per_day) + 1
        task_id = f"T{i + 1:05d}"
        made.append(write_run(runs / day.isoformat() / task_id, task_id, started, 2 * i + 1))
    (runs / "seq").write_text(f"{2 * count:020d}\n")
    return made
