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
from typing import Any, Protocol

from PIL import Image

from jarvis.desktop.screen import Observation
from jarvis.desktop.windows import Windows
from jarvis.events import EventBus, StepFinished, StepStarted, TaskFinished, TaskStarted
from jarvis.fsutil import atomic_write_text
from jarvis.memory.short_term import ErrorRecord, ResultRecord, StepRecord, ToolCallRecord
from jarvis.runs.grab import Grabber
from jarvis.runs.matching import (
    Match,
    find_target,
    global_shift,
    has_contrast,
    phash_distance,
    search_box,
)
from jarvis.runs.records import RunRecorder
from jarvis.runs.step_file import KEY_TOOLS, POINTER_TOOLS, CallFile, StepFile, load_steps
from jarvis.tools.context import ToolContext
from jarvis.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

SKIPPED = frozenset({"screenshot", "remember", "call_user"})
REPLAY_FILE = "replay.json"
HINT_PX = 12
"""How near (screen pixels, both axes summed) an ambiguous match must be to the screen's
overall shift to be taken."""


class Regrounder(Protocol):
    """Finds a recorded target on the current screen (the model, for ``--model``)."""

    async def locate(
        self, observation: Observation, crop: Image.Image, call: CallFile
    ) -> tuple[int, int] | None: ...


@dataclass
class Placement:
    arguments: dict[str, Any]
    info: dict[str, Any]


class Stop(Exception):
    """A guard failed: the replay stops here and acts no more."""


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


def _shift(call: CallFile, dx: int, dy: int) -> dict[str, Any]:
    args = dict(call.arguments)
    if call.name == "drag":
        for key, delta in (("startX", dx), ("startY", dy), ("endX", dx), ("endY", dy)):
            args[key] = int(args[key]) + delta
    else:
        args["x"], args["y"] = int(args["x"]) + dx, int(args["y"]) + dy
    return args


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
        self.grabber = grabber or Grabber()
        self.settle = settle
        self.registry = registry
        self.context = context
        self.bus = bus
        self.recorder = recorder
        self.windows = windows
        self.phash_bits = phash_bits
        self.match_score = match_score
        self.search_px = search_px
        self.regrounder = regrounder
        self.offset = (0, 0)
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
            t0 = time.perf_counter()
            await self.settle()
            timings["settle"] += _ms(t0)
        t0 = time.perf_counter()
        observation = await asyncio.to_thread(self.capture)
        timings["capture"] += _ms(t0)
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
            size = observation.model_size
            if (size.width, size.height) != tuple(recorded.monitor.model):
                raise Stop(
                    f"the screen is {observation.model_size} in model space; the recording "
                    f"was {recorded.monitor.model[0]}x{recorded.monitor.model[1]}"
                )
            for index, call in enumerate(self._calls(recorded)):
                if call.name == "finished":
                    break
                if index > 0:
                    t0 = time.perf_counter()
                    await self.settle()
                    timings["settle"] += _ms(t0)
                    if call.name in POINTER_TOOLS:
                        t0 = time.perf_counter()
                        observation = await asyncio.to_thread(self.capture)
                        timings["capture"] += _ms(t0)
                        distance = phash_distance(observation.phash, recorded.phash.before)
                t0 = time.perf_counter()
                try:
                    placed = await self._place(step_dir, recorded, call, observation, distance)
                except Stop as stop:
                    info["calls"].append(
                        {"name": call.name, "method": "stopped", "reason": str(stop)}
                    )
                    raise
                finally:
                    timings["model"] += _ms(t0) if self.regrounder is not None else 0.0
                info["calls"].append({"name": call.name, **placed.info})
                t0 = time.perf_counter()
                await self._execute(record, f"{replay_id}-{number}-{index}", call, placed)
                timings["act"] += _ms(t0)
                outcome.done += 1
            t0 = time.perf_counter()
            await self.settle()
            timings["settle"] += _ms(t0)
        except Stop as stop:
            info["stopped"] = str(stop)
            record.result = "failed"
            raise
        finally:
            record.timings_ms = timings
            if self.recorder is not None:
                self.recorder.step_done(record, replay=info)
            self.bus.emit(StepFinished(task_id=replay_id, step=number, timings_ms=timings))

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

    async def _place(
        self,
        step_dir: Path,
        recorded: StepFile,
        call: CallFile,
        observation: Observation,
        distance: int,
    ) -> Placement:
        if call.redacted:
            raise Stop(
                f"step {recorded.step}: the recorded {call.name} had a secret cut out of it; "
                "it cannot be repeated"
            )
        if call.name in POINTER_TOOLS:
            return await self._place_pointer(step_dir, recorded, call, observation, distance)
        if call.name in KEY_TOOLS:
            focus = self.windows.focused()
            if call.focus is not None and call.focus.known:
                if not focus.same_as(call.focus):
                    raise Stop(
                        f"step {recorded.step}: refusing to {call.name} into {focus.label()}; "
                        f"the recording sent it to {call.focus.label()}"
                    )
            elif distance > self.phash_bits:
                raise Stop(
                    f"step {recorded.step}: the screen differs from the recording by "
                    f"{distance} pHash bits and the recorded window is unknown"
                )
            return Placement(dict(call.arguments), {"method": "window", "offset": None})
        if call.name == "wait":
            return Placement(dict(call.arguments), {"method": "as recorded", "offset": None})
        raise Stop(
            f"step {recorded.step}: a replay cannot check what {call.name} would act on; "
            "it repeats only the mouse, keyboard and wait tools"
        )

    async def _place_pointer(
        self,
        step_dir: Path,
        recorded: StepFile,
        call: CallFile,
        observation: Observation,
        distance: int,
    ) -> Placement:
        where = f"step {recorded.step}: {call.name} at {call.model_points[0]}"
        if call.target is None or not (step_dir / call.target.file).is_file():
            raise Stop(f"{where}: the recording has no target crop to check against")
        with Image.open(step_dir / call.target.file) as opened:
            crop = opened.convert("RGB")
        method, score = "exact", None
        if has_contrast(crop):
            ox, oy = observation.origin
            size = observation.screen_size
            bounds = (ox, oy, ox + size.width, oy + size.height)
            left, top, right, bottom = call.target.box
            dx0, dy0 = self.offset  # where earlier calls found things: search around there
            shifted = (left + dx0, top + dy0, right + dx0, bottom + dy0)
            region_box = search_box(shifted, self.search_px, bounds)
            region = await asyncio.to_thread(self.grabber.grab, region_box)
            match = find_target(
                region,
                region_box,
                crop,
                call.target.box,
                self.match_score,
                self.offset,
                bounds=bounds,
            )
            why = (
                f"the recorded target is not on the screen within {self.search_px} px "
                f"(no match scores {self.match_score})"
            )
            if match is not None and match.ambiguous:
                match, why = self._disambiguate(step_dir, recorded, observation, match)
            if match is not None:
                offset, score = match.offset, round(match.score, 4)
                method = "exact" if offset == (0, 0) else "template"
            else:
                offset, method = await self._reground(where, why, observation, crop, call)
        elif distance <= self.phash_bits:
            offset = (0, 0)
        else:
            raise Stop(
                f"{where}: the target area is flat, and the screen differs from the "
                f"recording by {distance} pHash bits"
            )
        scale_x, scale_y = recorded.scale
        dx, dy = round(offset[0] / scale_x), round(offset[1] / scale_y)
        width, height = observation.model_size.width, observation.model_size.height
        for x, y in call.model_points:
            if not (0 <= x + dx < width and 0 <= y + dy < height):
                raise Stop(f"{where}: shifted by {offset} px it would leave the screen")
        x, y = call.model_points[0]
        sx, sy = self.context_screen_point(observation, x + dx, y + dy)
        if call.window is not None and call.window.known:
            now = self.windows.at(sx, sy)
            if not now.same_as(call.window):
                raise Stop(
                    f"{where}: the window there is {now.label()}; the recording acted on "
                    f"{call.window.label()}"
                )
        self.offset = offset
        return Placement(
            _shift(call, dx, dy),
            {"method": method, "offset": list(offset), "model_offset": [dx, dy], "score": score},
        )

    def _disambiguate(
        self, step_dir: Path, recorded: StepFile, observation: Observation, match: Match
    ) -> tuple[Match | None, str]:
        """Equally good places for the crop (or the best at the edge of the search): take
        the one the whole screen's shift against the recorded "before" points to, if one is
        near it; else none, and why."""
        with Image.open(step_dir / recorded.before) as opened:
            before = opened.convert("RGB")
        shift = global_shift(before, observation.image)
        if shift is None:
            return None, "the target matches several places; not guessing"
        hint = (shift[0] * recorded.scale[0], shift[1] * recorded.scale[1])
        chosen = match.nearest(hint)
        miss = abs(chosen.offset[0] - hint[0]) + abs(chosen.offset[1] - hint[1])
        if miss > HINT_PX:
            return None, (
                "the target matches several places, or only at the edge of the search, and "
                f"none where the screen moved ({hint[0]:+.0f}, {hint[1]:+.0f} px)"
            )
        return chosen, ""

    async def _reground(
        self, where: str, why: str, observation: Observation, crop: Image.Image, call: CallFile
    ) -> tuple[tuple[int, int], str]:
        if self.regrounder is None:
            raise Stop(f"{where}: {why}; not acting blind")
        point = await self.regrounder.locate(observation, crop, call)
        if point is None:
            raise Stop(f"{where}: neither the recording nor the model found the target")
        x, y = call.model_points[0]
        scale_x, scale_y = (
            observation.screen_size.width / observation.model_size.width,
            (observation.screen_size.height / observation.model_size.height),
        )
        return (round((point[0] - x) * scale_x), round((point[1] - y) * scale_y)), "model"

    @staticmethod
    def context_screen_point(observation: Observation, x: int, y: int) -> tuple[int, int]:
        from jarvis.desktop.screen import model_to_screen

        return model_to_screen(
            x, y, observation.model_size, observation.screen_size, observation.origin
        )


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
