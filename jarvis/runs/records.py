"""The step recorder: ``steps/NNNN/`` beside a run's journal, written as the agent goes.

The agent calls three hooks (:class:`StepHooks`): :meth:`RunRecorder.observed` with each
step's screenshot, :meth:`RunRecorder.step_done` with the step's record, and
:meth:`RunRecorder.task_done` at the end. Between them the recorder listens on the bus:
at every ``ToolCallStarted`` it notes, before the input happens, which window is under
the pointer target and which one has the keyboard, and cuts the target crop from the
screenshot the model saw; ``ToolCallFinished`` brings the result and the latency.

The screenshot of step N+1 is step N's ``after.jpg`` (the screen once N's actions
settled); the last step's comes from one more capture at the end. Files are written on
one background thread, in order, so the loop never waits for a disk.

Secrets never reach a record: values of :func:`~jarvis.redaction.known_secrets` and
text matching ``settings.runs.secret_patterns`` are replaced with ``[REDACTED]`` in the
arguments, thoughts and results; a call that lost text that way is marked ``redacted``
(a replay refuses to repeat it).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from PIL import Image

from jarvis.desktop.screen import Observation, encode_image, model_to_screen, phash_hex
from jarvis.desktop.windows import Windows
from jarvis.events import Event, EventBus, TaskStarted, ToolCallFinished, ToolCallStarted
from jarvis.fsutil import atomic_write_bytes
from jarvis.llm.pricing import cost_usd
from jarvis.llm.wire_tokens import text_tokens
from jarvis.ordered_writes import OrderedWrites
from jarvis.redaction import Redactor, known_secrets
from jarvis.runs.grab import Grabber
from jarvis.runs.step_file import (
    KEY_TOOLS,
    POINTER_TOOLS,
    CallFile,
    Monitor,
    StepFile,
    Target,
    call_points,
    step_folder,
)

if TYPE_CHECKING:
    from jarvis.config import Settings
    from jarvis.desktop.desktop import Desktop
    from jarvis.memory.short_term import StepRecord

log = logging.getLogger(__name__)


class StepHooks(Protocol):
    """What the agent loop calls; :class:`RunRecorder` is the one implementation."""

    def observed(self, task_id: str, step: int, observation: Observation) -> None: ...

    def step_done(self, record: StepRecord) -> None: ...

    def task_done(self, task_id: str) -> None: ...

    def flush(self) -> None:
        """Return once every step file written so far is on disk."""
        ...


def run_folder_for(data_dir: Path, task_id: str, started: float) -> Path:
    """Where the journal keeps a run: ``runs/DATE/TASK_ID`` (local date of its start)."""
    from jarvis.runs.reader import folder_name

    day = datetime.fromtimestamp(started).strftime("%Y-%m-%d")
    return data_dir / "runs" / day / folder_name(task_id)


def run_of(data_dir: Path, task_id: str, started: float) -> tuple[Path, int]:
    """The folder and run number a task's steps go to: the journal's (it opens the run
    first, on the same bus), else the first run in today's folder."""
    from jarvis.runs.reader import find_run
    from jarvis.runs.run_info import RunInfo

    folder = find_run(data_dir, task_id)
    if folder is not None:
        try:
            info = RunInfo.load(folder)
        except (OSError, ValueError):
            info = None
        if info is not None and info.status == "in_progress" and info.current.started == started:
            return folder, info.current.run
    return run_folder_for(data_dir, task_id, started), 1


def crop_box(x: int, y: int, side: int, width: int, height: int) -> tuple[int, int, int, int]:
    """A ``side`` x ``side`` box centred on (x, y), moved inside a width x height image."""
    side = min(side, width, height)
    left = min(max(0, x - side // 2), width - side)
    top = min(max(0, y - side // 2), height - side)
    return left, top, left + side, top + side


@dataclass
class _Step:
    folder: Path
    file: StepFile
    observation: Observation
    calls: dict[str, CallFile] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    done: bool = False


@dataclass
class _Task:
    started: float
    folder: Path | None = None
    run: int = 1
    """Which run of the task (see :func:`run_of`; found at its first step)."""
    current: _Step | None = None
    last: _Step | None = None
    """The latest step whose record is written and which waits for its after picture."""


class RunRecorder:
    """Writes ``steps/NNNN/`` for every task whose events pass on ``bus``."""

    def __init__(
        self,
        data_dir: Path,
        bus: EventBus,
        *,
        model: str = "",
        monitor: int = 1,
        crop_px: int = 96,
        redactor: Redactor | None = None,
        capture: Callable[[], Observation] | None = None,
        windows: Windows,
        grabber: Grabber,
    ) -> None:
        self.data_dir = data_dir
        self.model = model
        self.monitor = monitor
        self.crop_px = crop_px
        self.redactor = redactor or Redactor(known_secrets(), [])
        self.capture = capture
        self.windows = windows
        self.grabber = grabber
        self._tasks: dict[str, _Task] = {}
        self._lock = threading.Lock()
        self._writes = OrderedWrites("run-records", "a run record could not be written")
        self._unsubscribe = bus.subscribe(self._on_event)

    @classmethod
    def for_settings(cls, settings: Settings, bus: EventBus, desktop: Desktop) -> RunRecorder:
        """The recorder of the steps done on ``desktop``: its screen, its window lookups and
        crops from its display, following it when it moves (a task's private display)."""
        grabber = Grabber(desktop.where)
        desktop.on_move(grabber.move_to)
        return cls(
            settings.data_dir,
            bus,
            model=settings.active_model,
            monitor=settings.monitor,
            crop_px=settings.runs.crop_px,
            redactor=Redactor(known_secrets(settings), settings.runs.secret_patterns),
            capture=desktop.screen.capture,
            windows=desktop.windows,
            grabber=grabber,
        )

    # -- hooks the agent calls --
    def observed(self, task_id: str, step: int, observation: Observation) -> None:
        """A step began with this screenshot: its before picture, the last step's after."""
        task = self._task(task_id)
        if task.folder is None:  # the journal opened the run at TaskStarted, before this
            task.folder, task.run = run_of(self.data_dir, task_id, task.started)
        folder = step_folder(task.folder, step, task.run)
        model, screen = observation.model_size, observation.screen_size
        physical = observation.physical_size
        file = StepFile(
            task_id=task_id,
            step=step,
            run=task.run,
            started=time.time(),
            monitor=Monitor(
                index=self.monitor,
                origin=observation.origin,
                screen=(screen.width, screen.height),
                model=(model.width, model.height),
                physical=(physical.width, physical.height) if physical else None,
            ),
            scale=(screen.width / model.width, screen.height / model.height),
        )
        file.phash.before = observation.phash
        task.current = _Step(folder=folder, file=file, observation=observation)
        self._writes.submit(_write_picture, folder / "before.jpg", observation)
        if task.last is not None:
            self._set_after(task.last, observation)
            task.last = None

    def step_done(self, record: StepRecord, replay: dict[str, Any] | None = None) -> None:
        """The step's record is complete: write its step.json (``replay``: how a replay
        placed the step's actions)."""
        task = self._tasks.get(record.task_id)
        if task is None or task.current is None or task.current.file.step != record.step:
            return
        current = task.current
        file = current.file
        file.ended = time.time()
        file.thought = self.redactor.text(record.thought)
        file.reflection = self.redactor.text(record.reflection)
        file.result = record.result
        file.timings_ms = dict(record.timings_ms)
        file.tree = self.redactor.text(record.tree)
        file.tree_tokens = text_tokens(record.tree) if record.tree else 0
        file.replay = self.redactor.value(replay) if replay is not None else None
        file.tokens = record.usage.model_copy()
        file.cost_usd = cost_usd(self.model, record.usage)
        file.calls = []
        for index, call in enumerate(record.tool_calls):
            seen = current.calls.get(call.id)
            if seen is None:  # validated away or never run: keep what the model asked
                seen = self._call_file(call.id, call.name, call.arguments)
            if index < len(record.results) and seen.ok is None:
                result = record.results[index]
                seen.ok = result.ok
                seen.error = (
                    self.redactor.value(result.error.model_dump()) if result.error else None
                )
            file.calls.append(seen)
        current.done = True
        task.last, task.current = current, None
        self._writes.submit(_save, current.folder, file.model_copy(deep=True))

    def task_done(self, task_id: str) -> None:
        """The task ended: the last step gets a fresh after picture; wait for the disk."""
        with self._lock:
            task = self._tasks.pop(task_id, None)
        if task is not None and task.last is not None and self.capture is not None:
            try:
                self._set_after(task.last, self.capture())
            except Exception as exc:  # the display went away: the step keeps no after
                log.warning("no after picture for the last step of %s: %s", task_id, exc)
        self.flush()

    def flush(self) -> None:
        self._writes.flush()

    def close(self) -> None:
        self._unsubscribe()
        self._writes.close()
        self.windows.close()
        self.grabber.close()

    # -- bus --
    def _on_event(self, event: Event) -> None:
        if isinstance(event, TaskStarted):
            self._on_started(event)
        elif isinstance(event, ToolCallStarted):
            self._on_call_started(event)
        elif isinstance(event, ToolCallFinished):
            self._on_call_finished(event)

    def _on_started(self, event: TaskStarted) -> None:
        if event.task_id is None:
            return
        with self._lock:
            self._tasks[event.task_id] = _Task(started=event.ts)

    def _on_call_started(self, event: ToolCallStarted) -> None:
        step = self._current(event.task_id)
        if step is None:
            return
        call = self._call_file(event.call_id, event.tool_name, event.arguments)
        obs = step.observation
        for x, y in call.model_points:
            if 0 <= x < obs.model_size.width and 0 <= y < obs.model_size.height:
                call.screen_points.append(
                    model_to_screen(x, y, obs.model_size, obs.screen_size, obs.origin)
                )
        if call.name in POINTER_TOOLS and call.screen_points:
            call.window = self.windows.at(*call.screen_points[0])
            call.target = self._target(step, call, len(step.order) + 1)
        if call.name in POINTER_TOOLS or call.name in KEY_TOOLS:
            call.focus = self.windows.focused()
        step.calls[event.call_id] = call
        step.order.append(event.call_id)

    def _on_call_finished(self, event: ToolCallFinished) -> None:
        step = self._current(event.task_id)
        if step is None or event.call_id not in step.calls:
            return
        call = step.calls[event.call_id]
        call.ok = event.ok
        call.latency_ms = round(event.latency_ms, 2)
        call.data = self.redactor.value(event.data)
        call.cancelled = event.cancelled
        if not event.ok and not event.cancelled:
            call.error = {
                "code": event.error_code,
                "message": self.redactor.text(event.error_message or ""),
            }

    # -- helpers --
    def _task(self, task_id: str) -> _Task:
        with self._lock:
            task = self._tasks.get(task_id)
            if task is None:  # no TaskStarted seen (a hook used alone): today's folder
                task = _Task(time.time(), run_folder_for(self.data_dir, task_id, time.time()))
                self._tasks[task_id] = task
            return task

    def _current(self, task_id: str | None) -> _Step | None:
        task = self._tasks.get(task_id or "")
        return task.current if task is not None else None

    def _call_file(self, call_id: str, name: str, arguments: dict[str, Any]) -> CallFile:
        clean = self.redactor.value(arguments)
        return CallFile(
            id=call_id,
            name=name,
            arguments=clean if isinstance(clean, dict) else {},
            model_points=call_points(name, arguments),
            redacted=clean != arguments,
        )

    def _target(self, step: _Step, call: CallFile, position: int) -> Target | None:
        """Cut the crop around the call's first point from the screen as it is now."""
        obs = step.observation
        x, y = call.screen_points[0]
        ox, oy = obs.origin
        size = obs.screen_size
        left, top, right, bottom = crop_box(x - ox, y - oy, self.crop_px, size.width, size.height)
        box = (left + ox, top + oy, right + ox, bottom + oy)
        try:
            crop = self.grabber.grab(box)
        except Exception as exc:  # the display went away: no crop, the replay will refuse
            log.warning("no target crop for %s: %s", call.name, exc)
            return None
        first = not any(c.target for c in step.calls.values())
        name = "target.png" if first else f"target-{position}.png"
        target = Target(file=name, box=box, phash=phash_hex(crop))
        self._writes.submit(_write_crop, step.folder / name, crop)
        return target

    def _set_after(self, step: _Step, observation: Observation) -> None:
        step.file.after = "after.jpg"
        step.file.phash.after = observation.phash
        self._writes.submit(_write_picture, step.folder / "after.jpg", observation)
        self._writes.submit(_save, step.folder, step.file.model_copy(deep=True))


def _write_picture(path: Path, observation: Observation) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = observation.data
    if observation.media_type != "image/jpeg":
        data = encode_image(observation.image, "jpeg", 85)
    atomic_write_bytes(path, data)


def _write_crop(path: Path, crop: Image.Image) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, encode_image(crop, "png"))


def _save(folder: Path, file: StepFile) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    file.save(folder)
