"""A whole fleet as a person runs it: a real redis-server (AOF on), `jarvis serve --fleet`
as a subprocess (the coordinator; it can be killed with -9 and started again on the same
data dir) and `jarvis worker` processes on their own Xvfb (:class:`tests.test_fleet_worker.
Fleet`). Every process gets the Redis password in its environment, never in its argv.
Tasks arrive as files dropped into the inbox."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import IO, Any

from jarvis.gateway.queue import MessageQueue
from jarvis.gateway.todos import Todo, TodoList
from tests.fake_model import FakeModel, RecordedRequest, Reply, call
from tests.redis_server import RedisServer
from tests.test_fleet_worker import other
from tests.test_serve import NEW_TASK, ROOT, is_router, jarvis, serve_env

LEASE_S = 3.0
OLD = time.time() - 3600


def summary_of(task: str) -> str:
    return f"did: {task}"


def one_step(request: RecordedRequest) -> Reply:
    """The scripted model of small tasks: each is done in one step."""
    if is_router(request):
        return NEW_TASK
    if (reply := other(request)) is not None:
        return reply
    task = next(t for t in TASK_TEXTS if t in request.all_text())
    return Reply(text="Thought: done.", tool_calls=[call("finished", summary=summary_of(task))])


TASK_TEXTS = [f"Look at the screen and note item {n:02d} of the list." for n in range(60)]


def drop(data: Path, n: int) -> str:
    """Drop task ``n`` into the inbox as a person would (written aside, then moved in)."""
    folder = MessageQueue(data).drop_dir
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".task-{n:02d}.md.tmp"
    tmp.write_text(TASK_TEXTS[n] + "\n", encoding="utf-8")
    os.utime(tmp, (OLD, OLD))  # settled: the channel need not wait for more writes
    os.replace(tmp, folder / f"task-{n:02d}.md")
    return TASK_TEXTS[n]


class Coordinator:
    """``jarvis serve --fleet`` as a subprocess, its output appended to ``out``."""

    def __init__(
        self, xserver: Any, fake_model: FakeModel, redis: RedisServer, data: Path, out: Path
    ) -> None:
        self.env = serve_env(xserver, fake_model) | redis.env
        self.env["JARVIS_FLEET__LEASE_S"] = str(LEASE_S)
        self.url = redis.bare_url
        self.data, self.out = data, out
        self.proc: subprocess.Popen[bytes] | None = None
        self._sink: IO[str] | None = None

    def start(self) -> subprocess.Popen[bytes]:
        self._sink = self.out.open("a")
        args = jarvis("serve", "--fleet", self.url, "--data-dir", str(self.data), "--poll", "0.2")
        self.proc = subprocess.Popen(
            args, env=self.env, cwd=ROOT, stdin=subprocess.DEVNULL,
            stdout=self._sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
        return self.proc

    def kill(self) -> None:
        """kill -9."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait()
        self._close()

    def stop(self) -> int | None:
        """SIGTERM (or nothing when it is not running); its exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._close()
        return self.proc.returncode

    def _close(self) -> None:
        if self._sink is not None:
            self._sink.close()
            self._sink = None

    def output(self) -> str:
        logs = sorted((self.data / "logs").glob("*.log"))
        return self.out.read_text() + "".join(p.read_text() for p in logs)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def todos(self) -> list[Todo]:
        return TodoList(self.data).all()

    def done(self) -> list[Todo]:
        return [t for t in self.todos() if t.status == "completed"]

    def journal(self, task_id: str) -> list[dict[str, Any]]:
        path = self.data / "runs" / date.today().isoformat() / task_id / "events.jsonl"
        if not path.is_file():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def wait_for(condition: Callable[[], Any], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not before the deadline: {what}")
        time.sleep(0.1)
