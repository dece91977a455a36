"""The fleet's acceptance run: a real redis-server with AOF on, three `jarvis worker`
processes each on its own Xvfb, `jarvis serve --fleet` as the coordinator and a scripted
model; 30 small tasks dropped into the inbox. Each ends exactly once (todos.md, the
archive, the journal), the three workers share them, the coordinator's data dir holds
each run's journal, step records and screenshots, and `jarvis report` works for a task
a worker ran."""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from jarvis.gateway.queue import MessageQueue
from tests.fake_model import FakeModel, fake_model_fixture
from tests.fleet_harness import LEASE_S, Coordinator, drop, one_step, summary_of, wait_for
from tests.redis_server import RedisServer
from tests.test_fleet_worker import Fleet
from tests.test_serve import ROOT, jarvis

__all__ = ["fake_model_fixture"]

TASKS = 30
WORKERS = ("w1", "w2", "w3")


@pytest.fixture
def aof_redis() -> Iterator[RedisServer]:
    with RedisServer(appendonly=True) as server:
        yield server


@pytest.mark.slow
def test_thirty_inbox_tasks_end_once_each_spread_over_three_workers(
    xserver: Any, tmp_path: Path, fake_model: FakeModel, aof_redis: RedisServer
) -> None:
    fake_model.set_default(one_step)
    data = tmp_path / "data"
    coordinator = Coordinator(xserver, fake_model, aof_redis, data, tmp_path / "serve.out")
    fleet = Fleet(tmp_path, fake_model, aof_redis.url)
    try:
        coordinator.start()
        for name in WORKERS:
            fleet.start(name, lease_s=LEASE_S)
        texts = {drop(data, n) for n in range(TASKS)}
        wait_for(
            lambda: len(coordinator.done()) == TASKS or not coordinator.alive(),
            240,
            "30 tasks completed",
        )
        assert coordinator.alive(), coordinator.output()
        assert coordinator.stop() == 0, coordinator.output()
    finally:
        coordinator.stop()
        fleet.stop()
    todos = coordinator.todos()
    assert len(todos) == TASKS and {t.description for t in todos} == texts
    for todo in todos:
        assert (todo.status, todo.summary) == ("completed", summary_of(todo.description))
    queue = MessageQueue(data)
    archived = queue.archived(date.today())
    assert Counter(m.outcome for m in archived) == {"completed": TASKS}
    assert len({m.id for m in archived}) == TASKS  # each message answered once
    assert queue.pending() == [] and queue.processing() == []

    day = date.today().isoformat()
    ran_by: dict[str, str] = {}
    for todo in todos:
        # which worker ran it: its own scratch dir holds the run it wrote
        [worker] = [w for w in WORKERS if (tmp_path / w / "runs" / day / todo.id).is_dir()]
        ran_by[todo.id] = worker
        kinds = [line["kind"] for line in coordinator.journal(todo.id)]
        assert kinds[0] == "task_started" and kinds.count("task_started") == 1, kinds
        assert kinds.count("task_finished") == 1 and kinds.count("reply_ready") == 1, kinds
        assert kinds.count("step_finished") == 1, kinds
        step = data / "runs" / day / todo.id / "steps" / "0001"
        assert (step / "step.json").is_file() and (step / "before.jpg").stat().st_size > 100
    assert set(ran_by.values()) == set(WORKERS), Counter(ran_by.values())  # each ran some
    records = sorted((data / "memory" / "steps").rglob("*.json"))
    assert len(records) == TASKS  # one step record per task, shipped here
    out = coordinator.output()
    assert aof_redis.password not in out
    for name in WORKERS:
        assert aof_redis.password not in fleet.err(name)

    task_id = todos[0].id
    report = subprocess.run(
        jarvis("report", task_id, "--data-dir", str(data)),
        env=coordinator.env, cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    html = Path(report.stdout.strip()).read_text(encoding="utf-8")
    assert Path(report.stdout.strip()).parent == data / "runs" / day / task_id
    assert summary_of(todos[0].description) in html
    assert len(re.findall(r"data:image/jpeg;base64,", html)) >= 1  # the worker's screenshot
