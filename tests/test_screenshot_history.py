"""Past tasks keep their pictures across `jarvis serve` restarts (issue 22, point 1).

A first `jarvis serve` runs two tasks on the Tk app, each typing a line into its box (the
screen before and after the typed line have pHashes a few bits apart at most); two more
starts of `jarvis serve` run the memory upkeep, with screenshot dedup, on that data dir.
Afterwards every picture a journal, a step record, a run step and a report names exists,
every step's record shows the very screen the step saw (no typed line merged into the
screen before it), the API serves every past step's picture, and `jarvis memory check`
finds nothing dangling. Only the model is scripted.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from jarvis.gateway.queue import MessageQueue
from jarvis.gateway.todos import TodoList
from jarvis.memory.pixels import same_pixels
from jarvis.memory.screenshot_dedup import hamming
from jarvis.memory.short_term import ShortTermMemory
from tests.agent_harness import model_point
from tests.fake_model import FakeModel, RecordedRequest, Reply, call, fake_model_fixture
from tests.test_serve import (
    ROOT,
    finish,
    is_step,
    jarvis,
    responder,
    serve_env,
    serve_settings,
    serving,
    stop_serve,
    task_of,
    wait_until,
)
from tests.tkdriver import TkApp

__all__ = ["fake_model_fixture"]

LINES = {"Type hello world into the box.": "hello world", "Type goodbye into the box.": "bye"}
UPKEEP = "memory upkeep:"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def upkeeps(data: Path) -> int:
    return sum(p.read_text(errors="replace").count(UPKEEP) for p in data.glob("logs/*.log"))


def journals(data: Path) -> list[tuple[Path, list[dict[str, Any]]]]:
    out = []
    for path in sorted(data.glob("runs/*/*/events.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines()
        out.append((path.parent, [json.loads(line) for line in lines if line.strip()]))
    return out


def test_two_serve_restarts_keep_every_past_picture(
    xserver: Any, tkapp: TkApp, tmp_path: Path, fake_model: FakeModel, monkeypatch: Any
) -> None:
    settings = serve_settings(tmp_path, fake_model, monkeypatch)
    data = settings.data_dir
    box = model_point(tkapp, "box", settings)
    steps_of: Counter[str] = Counter()

    def step(request: RecordedRequest) -> Reply:
        task = task_of(request)
        steps_of[task] += 1
        if steps_of[task] == 1:
            return Reply(
                text="Thought: focus the box.", tool_calls=[call("click", x=box[0], y=box[1])]
            )
        if steps_of[task] == 2:
            return Reply(
                text="Thought: type the line.", tool_calls=[call("type", text=LINES[task])]
            )
        return finish(f"typed {LINES[task]}")

    fake_model.set_default(responder(step))
    queue = MessageQueue(data)
    for task in LINES:
        queue.append(task)
    port = free_port()
    env = {
        **serve_env(xserver, fake_model),
        "JARVIS_LONG_TERM_MEMORY": "true",  # the upkeep runs with long-term memory
        "JARVIS_API__HTTP": f"127.0.0.1:{port}",
    }

    # the first start runs both tasks; two more starts run the upkeep on their history
    out = tmp_path / "serve.out"
    with serving(env, data, out) as daemon:
        wait_until(
            lambda: (
                daemon.poll() is not None
                or [t.status for t in TodoList(data).all()] == ["completed", "completed"]
            ),
            timeout=120,
        )
        assert daemon.poll() is None, out.read_text()
        stop_serve(daemon, out)
    assert [is_step(r) for r in fake_model.requests].count(True) == 6
    for start in (1, 2):
        done = upkeeps(data)
        with serving(env, data, out) as daemon:
            wait_until(lambda d=daemon, n=done: d.poll() is not None or upkeeps(data) > n, 90)
            assert daemon.poll() is None, out.read_text()
            if start == 2:
                served = fetch_every_step_picture(data, port)
            stop_serve(daemon, out)

    runs = journals(data)
    assert len(runs) == 2
    finished = {}  # (task id, step) -> the screenshot its step_finished names
    for folder, events in runs:
        for event in events:
            if event["kind"] == "step_finished":
                finished[(event["task_id"], event["step"])] = event["screenshot"]
            if event.get("screenshot"):  # every picture a journal names is there
                assert (data / event["screenshot"]).is_file(), event
        for step_json in sorted(folder.glob("steps/*/step.json")):
            record = json.loads(step_json.read_text())
            names = [record["before"], record["after"]]
            names += [c["target"]["file"] for c in record["calls"] if c.get("target")]
            for name in filter(None, names):  # every picture a run step names is there
                assert (step_json.parent / name).is_file(), (step_json, name)
    assert len(finished) == 6
    assert served == len(finished)

    records = list(ShortTermMemory(data).iter_steps())
    assert len(records) == 6
    for record in records:
        assert record.screenshot is not None
        shot = data / record.screenshot.path
        assert shot.is_file(), record.screenshot.path
        # the record shows the screen its own step saw: the run's copy of it
        [run] = [f for f, events in runs if events[0]["task_id"] == record.task_id]
        seen = run / "steps" / f"{record.step:04d}" / "before.jpg"
        assert same_pixels(shot, seen), (record.task_id, record.step)
        assert record.screenshot.path == finished[(record.task_id, record.step)]

    # the screens before and after each typed line: a pHash candidate, never merged
    by_step = {(r.task_id, r.step): r.screenshot for r in records if r.screenshot}
    for task_id in {r.task_id for r in records}:
        empty, typed = by_step[(task_id, 2)], by_step[(task_id, 3)]
        assert hamming(empty.phash, typed.phash) <= settings.screenshot_dedup_distance
        assert empty.path != typed.path
        assert not same_pixels(data / empty.path, data / typed.path)

    for task_id in {r.task_id for r in records}:  # each report shows every step's screen
        result = subprocess.run(
            jarvis("report", task_id, "--data-dir", str(data)),
            env=env, cwd=ROOT, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        page = Path(result.stdout.strip()).read_text(encoding="utf-8")
        sources = re.findall(r'<img[^>]* src="([^"]*)"', page)
        assert sources and all(s.startswith("data:image/") for s in sources)
        assert page.count('class="shot-img"') == 3

    result = subprocess.run(
        jarvis("memory", "check", "--data-dir", str(data)),
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout
    assert result.stdout.strip().endswith("0 dangling, 0 pointing at another picture; "
                                          "repaired 0, left 0")  # fmt: skip


def fetch_every_step_picture(data: Path, port: int) -> int:
    """Every past step's picture through the API the TUI and the web panel use."""
    token = (data / "config" / "api_token").read_text().strip()
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {token}"}
    served = 0
    with httpx.Client(base_url=base, headers=headers, timeout=10) as client:
        for todo in TodoList(data).all():
            task = client.get(f"/api/tasks/{todo.id}")
            assert task.status_code == 200, task.text
            steps = task.json()["steps"]
            assert len(steps) == 3
            for step in steps:
                picture = client.get(f"/api/screenshots/{step['screenshot']}")
                assert picture.status_code == 200, step
                path = data / "memory" / "screenshots" / step["screenshot"]
                assert picture.content == path.read_bytes()
                served += 1
    return served
