"""Several processes add messages at once while a real `jarvis serve` drains the inbox.

Writers use every way in: ``MessageQueue.append`` from two processes, ``jarvis inbox add``
from the shell and markdown files dropped into ``messages/drop/``. The daemon routes,
runs (on the session's Xvfb, with the scripted model) and archives each. Afterwards every
message was archived exactly once, as one task that completed once.
"""

from __future__ import annotations

import multiprocessing
import subprocess
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

from jarvis.gateway.queue import MessageQueue
from jarvis.gateway.todos import TodoList
from tests.fake_model import FakeModel, fake_model_fixture
from tests.test_serve import (
    ROOT,
    is_step,
    jarvis,
    responder,
    serve_env,
    serving,
    stop_serve,
    task_of,
    wait_until,
)

__all__ = ["fake_model_fixture"]

APPENDERS, PER_APPENDER = 2, 10
DROPS, CLI_ADDS = 6, 3


def append_messages(data_dir: str, writer: int) -> None:
    queue = MessageQueue(Path(data_dir))
    for i in range(PER_APPENDER):
        queue.append(f"appender {writer} message {i}\n第{i}条", sender=f"w{writer}")


def drop_files(data_dir: str) -> None:
    drop = Path(data_dir) / "messages" / "drop"
    drop.mkdir(parents=True, exist_ok=True)
    for i in range(DROPS):
        part = drop / f".note-{i}.tmp"  # written aside, then renamed in: a whole file lands
        part.write_text(f"---\nfrom: dropper\n---\ndropped message {i}\n", encoding="utf-8")
        part.rename(drop / f"note-{i}.md")


def test_concurrent_writers_while_serve_drains(
    xserver: Any, tmp_path: Path, fake_model: FakeModel
) -> None:
    data = tmp_path / "data"
    fake_model.set_default(responder())
    env = serve_env(xserver, fake_model) | {"JARVIS_SETTLE_CEILING_MS": "300"}
    expected = {
        *(
            f"appender {w} message {i}\n第{i}条"
            for w in range(APPENDERS)
            for i in range(PER_APPENDER)
        ),
        *(f"dropped message {i}" for i in range(DROPS)),
        *(f"from the shell {i}" for i in range(CLI_ADDS)),
    }
    queue, todos = MessageQueue(data), TodoList(data)
    ctx = multiprocessing.get_context("spawn")
    out = tmp_path / "serve.out"
    with serving(env, data, out) as daemon:
        writers = [
            *(ctx.Process(target=append_messages, args=(str(data), w)) for w in range(2)),
            ctx.Process(target=drop_files, args=(str(data),)),
        ]
        for process in writers:
            process.start()
        shell = [
            subprocess.Popen(
                jarvis("inbox", "add", f"from the shell {i}", "--data-dir", str(data)),
                env=env,
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
            )
            for i in range(CLI_ADDS)
        ]
        for process in writers:
            process.join(60)
            assert process.exitcode == 0
        assert all(p.wait(timeout=60) == 0 for p in shell)

        def drained() -> bool:
            assert daemon.poll() is None, out.read_text()
            return len(queue.archived(date.today())) >= len(expected)

        wait_until(drained, timeout=240)
        stop_serve(daemon, out)

    archived = queue.archived(date.today())
    texts = Counter(m.text for m in archived)
    assert set(texts) == expected and all(n == 1 for n in texts.values())  # exactly once
    assert len({m.id for m in archived}) == len(expected)
    assert queue.pending() == [] and queue.processing() == [] and queue.problems() == []
    tasks = todos.all()
    assert len(tasks) == len(expected) and {t.status for t in tasks} == {"completed"}
    assert sorted(mid for t in tasks for mid in t.message_ids) == sorted(m.id for m in archived)
    assert {m.task_id for m in archived} == {t.id for t in tasks}
    runs = Counter(task_of(r) for r in fake_model.requests if is_step(r))
    assert len(runs) == len(expected) and max(runs.values()) == 1  # no task ran twice
    assert sorted((data / "messages/drop/processed").glob("note-*.md"))  # moved aside, kept
