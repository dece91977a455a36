"""The simulated workers of ``bench/coordinator_capacity.py``: real fleet workers with a
scripted agent and no desktop.

Each is a :class:`jarvis.fleet.worker.FleetWorker` (its own Redis client, heartbeat,
control stream, claim with a lease and token, lease renewal, the events lane, the files
lane through :class:`~jarvis.fleet.shipper.Shipper`, and the outcome with the lease token),
driven through :meth:`~jarvis.fleet.worker.FleetWorker.serve` with a :class:`ScriptedAgent`
in place of the agent: per step, ``--step-s`` of "model time", then the events a real
agent emits (``step_started``, two ``model_text_delta``, ``tool_call_streaming``,
``tool_call_started``, ``tool_call_finished``, ``step_finished``) and the step's files
(``steps/NNNN/step.json`` and a small ``before.jpg``) under the worker's own data dir;
``task_started`` first, ``verification_finished`` and ``task_finished`` last. A
:class:`TimedQueue` notes when each task was claimed and when its outcome was taken.
"""

from __future__ import annotations

import asyncio
import io
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jarvis.fleet.protocol import Claim
from jarvis.fleet.redis_queue import RedisQueue

MARK = re.compile(r"BENCH-(\d+)")
"""How a task's text names the bench's message (its number)."""


@dataclass
class Task:
    """One bench message, from its drop to its outcome in todos.md (unix seconds)."""

    n: int
    dropped: float
    task_id: str = ""
    claimed: float = 0.0
    sent: float = 0.0
    recorded: float = 0.0
    claims: int = 0
    outcomes: int = 0


@dataclass
class Tracker:
    """What the bench knows of each message; filled by the feeder, the workers' queues
    and the watcher of ``jarvis:ended``."""

    tasks: dict[int, Task] = field(default_factory=dict)
    by_id: dict[str, Task] = field(default_factory=dict)
    unrecorded: set[str] = field(default_factory=set)
    """Task ids whose outcome was taken and is not yet in todos.md."""

    def claimed(self, claim: Claim) -> None:
        found = MARK.search(claim.text)
        task = self.tasks.get(int(found[1])) if found else None
        if task is None:
            return
        task.task_id, task.claims = claim.task_id, task.claims + 1
        task.claimed = task.claimed or time.time()
        self.by_id[claim.task_id] = task

    def sent(self, task_id: str) -> None:
        task = self.by_id.get(task_id)
        if task is not None:
            task.sent, task.outcomes = time.time(), task.outcomes + 1
            self.unrecorded.add(task_id)

    def recorded(self, task_id: str, when: float) -> None:
        self.unrecorded.discard(task_id)
        task = self.by_id.get(task_id)
        if task is not None and not task.recorded:
            task.recorded = when


class TimedQueue(RedisQueue):
    """The worker's queue, noting each claim and each outcome Redis took."""

    def __init__(self, redis: Any, worker: str, tracker: Tracker, *, lease_ms: int) -> None:
        super().__init__(redis, worker, lease_ms=lease_ms)
        self.tracker = tracker

    async def claim(self, wait_s: float = 0.0) -> Claim | None:
        claim = await super().claim(wait_s)
        if claim is not None:
            self.tracker.claimed(claim)
        return claim

    async def complete(self, claim: Claim, status: str, summary: str) -> bool:
        taken = await super().complete(claim, status, summary)
        if taken:
            self.tracker.sent(claim.task_id)
        return taken


def screenshot_jpeg(width: int = 640, height: int = 400) -> bytes:
    """A small screenshot-like JPEG (a window on a desktop), made once."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (width, height), (40, 60, 90))
    draw = ImageDraw.Draw(image)
    draw.rectangle((60, 40, width - 60, height - 40), fill=(235, 235, 235), outline=(0, 0, 0))
    draw.rectangle((60, 40, width - 60, 70), fill=(70, 110, 170))
    for row in range(6):
        draw.text((80, 90 + 40 * row), f"Item {row + 1}: some text on the screen", fill=(0, 0, 0))
    out = io.BytesIO()
    image.save(out, "JPEG", quality=75)
    return out.getvalue()


class _Nothing:
    long_term: Any = None


class ScriptedAgent:
    """What :class:`FleetWorker` needs of an agent (run, cancel, ``hippocampus``,
    ``recorder``), emitting a real agent's events and files for ``steps`` steps."""

    def __init__(self, bus: Any, data_dir: Path, steps: int, step_s: float, jpeg: bytes) -> None:
        self.bus, self.data_dir = bus, data_dir
        self.steps, self.step_s, self.jpeg = steps, step_s, jpeg
        self.hippocampus = _Nothing()
        self.recorder = None
        self._cancelled: str | None = None
        self._last: Path | None = None

    def cancel(self, by: str = "user") -> None:
        self._cancelled = by

    async def run(self, text: str, task_id: str, channels: tuple[str, ...] = ()) -> Any:
        from jarvis.agent.state import TaskOutcome
        from jarvis.events import TaskFinished, TaskStarted, VerificationFinished
        from jarvis.runs.records import run_folder_for

        self._cancelled = None
        if self._last is not None:  # shipped before the last outcome: keep the walks short
            await asyncio.to_thread(shutil.rmtree, self._last, True)
        started = time.time()
        folder = self._last = run_folder_for(self.data_dir, task_id, started)
        self.bus.emit(TaskStarted(task_id=task_id, task=text))
        for step in range(1, self.steps + 1):
            await self._step(task_id, folder, step)
            if self._cancelled is not None:
                break
        status = "cancelled" if self._cancelled is not None else "finished"
        found = MARK.search(text)
        summary = "stopped" if self._cancelled else f"noted {found[0] if found else 'it'}"
        if status == "finished":
            self.bus.emit(VerificationFinished(task_id=task_id, done=True, reason="looks done"))
        self.bus.emit(
            TaskFinished(task_id=task_id, status=status, summary=summary, steps=self.steps)
        )
        return TaskOutcome(task_id=task_id, task=text, status=status, summary=summary)

    async def _step(self, task_id: str, folder: Path, step: int) -> None:
        from jarvis.events import (
            ModelTextDelta,
            StepFinished,
            StepStarted,
            ToolCallFinished,
            ToolCallStarted,
            ToolCallStreaming,
        )

        emit = self.bus.emit
        emit(StepStarted(task_id=task_id, step=step))
        began = time.time()
        await asyncio.sleep(self.step_s)  # the model thinks
        last = step == self.steps
        name, arguments = ("finished", {"summary": "noted"}) if last else ("mouse_move", {})
        if not last:
            arguments = {"x": 40 * step, "y": 30}
        call_id = f"toolu_{task_id}_{step}"
        emit(ModelTextDelta(task_id=task_id, text="I'll"))
        emit(ModelTextDelta(task_id=task_id, text=" look at the list and note the item."))
        emit(ToolCallStreaming(task_id=task_id, call_id=call_id, tool_name=name))
        emit(ToolCallStarted(task_id=task_id, call_id=call_id, tool_name=name, arguments=arguments))
        emit(ToolCallFinished(task_id=task_id, call_id=call_id, tool_name=name, ok=True))
        rel = await asyncio.to_thread(self._files, folder, task_id, step, began, name, arguments)
        timings = {"capture": 20.0, "model": self.step_s * 1000, "act": 5.0, "record": 2.0}
        emit(StepFinished(task_id=task_id, step=step, timings_ms=timings, screenshot=rel))

    def _files(
        self, folder: Path, task_id: str, step: int, began: float, name: str, arguments: Any
    ) -> str:
        """The step recorder's files: ``step.json`` and ``before.jpg``; the picture's path
        relative to the data dir."""
        from jarvis.fsutil import atomic_write_bytes, atomic_write_text
        from jarvis.runs.step_file import CallFile, Monitor, StepFile, step_folder

        target = step_folder(folder, step)
        target.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(target / "before.jpg", self.jpeg)
        record = StepFile(
            task_id=task_id,
            step=step,
            started=began,
            ended=time.time(),
            thought="I'll look at the list and note the item.",
            monitor=Monitor(screen=(1280, 800), model=(1280, 800)),
            scale=(1.0, 1.0),
            calls=[CallFile(id=f"toolu_{step}", name=name, arguments=arguments, ok=True)],
            timings_ms={"model": self.step_s * 1000},
        )
        atomic_write_text(target / "step.json", record.model_dump_json(indent=2) + "\n")
        return (target / "before.jpg").relative_to(self.data_dir).as_posix()


@dataclass
class SimulatedFleet:
    """``count`` workers in this process's loop, each a FleetWorker with its own client."""

    url: str
    root: Path
    tracker: Tracker
    lease_ms: int
    steps: int
    step_s: float
    said: list[str] = field(default_factory=list)
    workers: list[Any] = field(default_factory=list)
    runs: list[asyncio.Task[None]] = field(default_factory=list)

    async def start(self, count: int) -> None:
        from jarvis.config import load_settings
        from jarvis.desktop.x11 import XDisplay
        from jarvis.fleet.connection import client
        from jarvis.fleet.worker import FleetWorker, WorkerOptions

        jpeg = screenshot_jpeg()
        for i in range(count):
            name = f"sim{i + 1:02d}"
            settings = load_settings(self.root / name, long_term_memory=False)
            options = WorkerOptions(
                name, self.url, XDisplay(f":{100 + i}"), "1280x800",
                lease_ms=self.lease_ms, handle_signals=False,
            )  # fmt: skip
            worker = FleetWorker(settings, client(self.url), options, self.said.append)
            worker.queue = TimedQueue(worker.redis, name, self.tracker, lease_ms=self.lease_ms)
            await worker.prepare()
            agent = ScriptedAgent(worker.bus, settings.data_dir, self.steps, self.step_s, jpeg)
            self.workers.append(worker)
            self.runs.append(asyncio.create_task(worker.serve(agent), name=name))

    async def stop(self, timeout: float = 30.0) -> None:
        for worker in self.workers:
            worker.stop()
        if self.runs:
            await asyncio.wait(self.runs, timeout=timeout)
        for run in self.runs:
            run.cancel()
        await asyncio.gather(*self.runs, return_exceptions=True)
        for worker in self.workers:
            await worker.redis.aclose()

    def failed(self) -> list[str]:
        """The workers whose loop stopped on an error, and why."""
        return [f"{r.get_name()}: {r.exception()!r}" for r in self.runs if _failed(r)]


def _failed(run: asyncio.Task[None]) -> bool:
    return run.done() and not run.cancelled() and run.exception() is not None
