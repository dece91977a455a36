"""Replay: repeat a finished run's actions without the model, guarded at every call.

Before each call the screen must be still (settle), and then:

- a pointer call (click, drag, scroll, ...) needs its recorded target crop found near the
  recorded point (:func:`~jarvis.runs.matching.find_target`); the action is shifted by the
  offset of the match (the window moved). With nothing to match (a flat crop) it needs the
  whole screen to match the recording's "before" by pHash. The window under the shifted
  point must have the recorded title and class;
- a key call (type, hotkey, press_key) needs the window with the keyboard to have the
  recorded title and class (without a recorded window: the screen must match by pHash);
- a call whose recorded arguments lost a secret is never repeated, and tools other than
  the mouse, keyboard and `wait` (presets, files, MCP) are not repeated at all.

The guards live in :mod:`jarvis.runs.placement`.

When a guard fails the replay stops with the reason and does nothing more; with a
:class:`Regrounder` (``--model``) a target that cannot be matched is looked for by the
model once before giving up. Failed calls of the recording are skipped (they changed
nothing), and ``finished`` ends the replay.

The replay is itself a run: it emits the task's events (so a journal and a recorder on
the bus write ``runs/DATE/REPLAY_ID/``), and each step's ``step.json`` carries a
``replay`` entry saying how each action was placed; ``replay.json`` names the original.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from jarvis.desktop.screen import Observation
from jarvis.desktop.windows import Windows
from jarvis.events import EventBus, StepFinished, StepStarted, TaskFinished, TaskStarted
from jarvis.fsutil import atomic_write_text
from jarvis.memory.short_term import ErrorRecord, ResultRecord, StepRecord, ToolCallRecord
from jarvis.runs.grab import Grabber
from jarvis.runs.matching import phash_distance
from jarvis.runs.placement import Placement, Placer, Regrounder, Stop
from jarvis.runs.records import RunRecorder
from jarvis.runs.step_file import POINTER_TOOLS, CallFile, StepFile, load_steps
from jarvis.tools.context import ToolContext
from jarvis.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

SKIPPED = frozenset({"screenshot", "remember", "call_user"})
REPLAY_FILE = "replay.json"


@dataclass
class ReplayOutcome:
    task_id: str
    of: str
    folder: Path
    done: int = 0
    total: int = 0
    stopped: str | None = None
    cancelled_by: str | None = None
    """The brake that cancelled the replay (``hotkey``, ``cli``, ``signal``...), or None."""
    step_ms: list[float] = field(default_factory=list)

    def describe(self) -> str:
        if self.total == 0 and self.stopped is None:
            return f"replay {self.task_id} of {self.of}: the run has no actions, nothing to repeat"
        head = f"replay {self.task_id} of {self.of}: {self.done}/{self.total} actions repeated"
        return f"{head}; stopped: {self.stopped}" if self.stopped else f"{head}; done"


def new_replay_id() -> str:
    import uuid

    return f"r-{datetime.now(UTC):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


class Replayer:
    def __init__(
        self,
        *,
        capture: Callable[[], Observation],
        settle: Callable[[], Awaitable[object]],
        registry: ToolRegistry,
        context: ToolContext,
        bus: EventBus,
        recorder: RunRecorder | None,
        windows: Windows,
        phash_bits: int = 10,
        match_score: float = 0.9,
        search_px: int = 200,
        regrounder: Regrounder | None = None,
        grabber: Grabber | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.capture = capture
        self.settle = settle
        self.registry = registry
        self.context = context
        self.bus = bus
        self.recorder = recorder
        self.placer = Placer(
            windows=windows,
            grabber=grabber or Grabber(),
            phash_bits=phash_bits,
            match_score=match_score,
            search_px=search_px,
            regrounder=regrounder,
        )
        self.stop = stop or threading.Event()
        """Set by a brake: input and settle stop between pieces (the context's event)."""
        self.stopped_by: str | None = None
        self._running: asyncio.Task[object] | None = None

    def cancel(self, by: str = "user") -> None:
        """A brake (the kill switch, a signal, ``jarvis stop``): the replay ends as
        cancelled within a moment, as a live task does; ``by`` is recorded."""
        if self.stopped_by is None:
            self.stopped_by = by
        self.stop.set()
        if self._running is not None:
            self._running.cancel()

    async def run(self, folder: Path, of_task: str, task_text: str = "") -> ReplayOutcome:
        replay_id = self.context.task_id
        steps = [(f, s) for f, s in load_steps(folder) if self._calls(s)]
        outcome = ReplayOutcome(task_id=replay_id, of=of_task, folder=Path())
        outcome.total = sum(1 for _, s in steps for c in self._calls(s) if c.name != "finished")
        self.bus.emit(TaskStarted(task_id=replay_id, task=f"replay of {of_task}: {task_text}"))
        number = 0
        self._running = asyncio.current_task()
        try:
            for step_dir, recorded in steps:
                if self.stopped_by is not None:  # braked before the task could be cancelled
                    raise Stop(f"cancelled by {self.stopped_by}")
                if any(c.name == "finished" for c in self._calls(recorded)[:1]):
                    break
                number += 1
                started = time.perf_counter()
                try:
                    await self._step(number, step_dir, recorded, outcome)
                finally:
                    outcome.step_ms.append((time.perf_counter() - started) * 1000)
                if any(c.name == "finished" for c in self._calls(recorded)):
                    break
        except Stop as stop:
            outcome.stopped = str(stop)
        except asyncio.CancelledError:
            if self.stopped_by is None or self._running is None:
                raise  # not a brake of ours: the caller's cancel goes on
            self._running.uncancel()
            outcome.stopped = f"cancelled by {self.stopped_by}"
        finally:
            self._running = None
        status = "failed" if outcome.stopped else "finished"
        if self.stopped_by is not None:
            status = "cancelled"
            outcome.cancelled_by = self.stopped_by
        summary = outcome.stopped or (
            f"repeated {outcome.done} actions of {of_task}"
            if outcome.total
            else f"nothing to repeat: {of_task} has no actions"
        )
        if self.recorder is not None:
            self.recorder.task_done(replay_id)
        self.bus.emit(
            TaskFinished(
                task_id=replay_id,
                status=status,
                summary=summary,
                steps=number,
                stopped_by=self.stopped_by,
            )
        )
        return outcome

    @staticmethod
    def _calls(step: StepFile) -> list[CallFile]:
        return [c for c in step.calls if c.ok and c.name not in SKIPPED]

    async def _step(
        self, number: int, step_dir: Path, recorded: StepFile, outcome: ReplayOutcome
    ) -> None:
        replay_id = self.context.task_id
        self.bus.emit(StepStarted(task_id=replay_id, step=number))
        timings = {"capture": 0.0, "model": 0.0, "act": 0.0, "settle": 0.0}
        if number == 1:  # later steps start where the last one's closing settle ended
            await _timed(timings, "settle", self.settle())
        observation = await _timed(timings, "capture", asyncio.to_thread(self.capture))
        if self.recorder is not None:
            self.recorder.observed(replay_id, number, observation)
        distance = phash_distance(observation.phash, recorded.phash.before)
        info: dict[str, Any] = {
            "of_step": recorded.step,
            "of_run": recorded.run,
            "phash_distance": distance,
            "calls": [],
            "stopped": None,
        }
        record = StepRecord(
            task_id=replay_id,
            step=number,
            timestamp=datetime.now(UTC),
            thought=f"Replay of step {recorded.step}: {recorded.thought}",
        )
        try:
            _check_size(observation, recorded)
            for index, call in enumerate(self._calls(recorded)):
                if call.name == "finished":
                    break
                if index > 0:
                    await _timed(timings, "settle", self.settle())
                    if call.name in POINTER_TOOLS:
                        capture = asyncio.to_thread(self.capture)
                        observation = await _timed(timings, "capture", capture)
                        distance = phash_distance(observation.phash, recorded.phash.before)
                placed = await self._place(
                    step_dir, recorded, call, observation, distance, info["calls"], timings
                )
                call_id = f"{replay_id}-{number}-{index}"
                await _timed(timings, "act", self._execute(record, call_id, call, placed))
                outcome.done += 1
            await _timed(timings, "settle", self.settle())
        except Stop as stop:
            info["stopped"] = str(stop)
            record.result = "failed"
            raise
        finally:
            record.timings_ms = timings
            if self.recorder is not None:
                self.recorder.step_done(record, replay=info)
            self.bus.emit(StepFinished(task_id=replay_id, step=number, timings_ms=timings))

    async def _place(
        self,
        step_dir: Path,
        recorded: StepFile,
        call: CallFile,
        observation: Observation,
        distance: int,
        calls: list[dict[str, Any]],
        timings: dict[str, float],
    ) -> Placement:
        """Place a call (the placer's arguments), noting how in ``calls`` (a refusal too)
        and the time the model took in ``timings``."""
        t0 = time.perf_counter()
        try:
            placed = await self.placer.place(step_dir, recorded, call, observation, distance)
        except Stop as stop:
            calls.append({"name": call.name, "method": "stopped", "reason": str(stop)})
            raise
        finally:
            timings["model"] += _ms(t0) if self.placer.regrounder is not None else 0.0
        calls.append({"name": call.name, **placed.info})
        return placed

    async def _execute(
        self, record: StepRecord, call_id: str, call: CallFile, placed: Placement
    ) -> None:
        result = await self.registry.execute(
            call.name, placed.arguments, self.context, call_id=call_id
        )
        record.tool_calls.append(
            ToolCallRecord(id=call_id, name=call.name, arguments=placed.arguments)
        )
        error = result.error
        record.results.append(
            ResultRecord(
                ok=result.ok,
                data=result.data,
                error=ErrorRecord(code=error.code, message=error.message) if error else None,
            )
        )
        if not result.ok:
            raise Stop(f"{call.name} failed: {error.message if error else 'no result'}")


def write_replay_file(folder: Path, outcome: ReplayOutcome, original: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    data = {
        "of": outcome.of,
        "of_folder": str(original),
        "done": outcome.done,
        "total": outcome.total,
        "stopped": outcome.stopped,
        "step_ms": [round(v, 2) for v in outcome.step_ms],
    }
    atomic_write_text(folder / REPLAY_FILE, json.dumps(data, indent=2) + "\n")


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)


T = TypeVar("T")


async def _timed(timings: dict[str, float], phase: str, work: Awaitable[T]) -> T:
    """Await ``work``, adding the milliseconds it took to ``timings[phase]``."""
    started = time.perf_counter()
    result = await work
    timings[phase] += _ms(started)
    return result


def _check_size(observation: Observation, recorded: StepFile) -> None:
    size = observation.model_size
    if (size.width, size.height) != tuple(recorded.monitor.model):
        raise Stop(
            f"the screen is {observation.model_size} in model space; the recording "
            f"was {recorded.monitor.model[0]}x{recorded.monitor.model[1]}"
        )
