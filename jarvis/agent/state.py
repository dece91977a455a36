"""The state of one task run, and what a run returns."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from jarvis.agent.context import Turn
from jarvis.agent.stall import StallDetector
from jarvis.config import Settings
from jarvis.events import TaskStatus
from jarvis.memory.short_term import ScreenshotRef
from jarvis.usage import Usage

if TYPE_CHECKING:
    from jarvis.agent.brain import Decision
    from jarvis.desktop.screen import Observation
    from jarvis.memory.short_term import StepRecord
    from jarvis.tools.results import ToolResult


class TaskOutcome(BaseModel):
    task_id: str
    task: str
    status: TaskStatus
    summary: str = ""
    steps: int = 0
    tool_calls: int = 0
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    stopped_by: str | None = None
    """Which brake cancelled the task (hotkey, tui, web, cli, signal, pointer corner...)."""


@dataclass
class RunState:
    """Mutable state of one task run."""

    task: str
    task_id: str
    channels: tuple[str, ...] = ()
    """Where the task came from (the channel policy applies); empty for ``jarvis run``."""
    step: int = 0
    tool_calls: int = 0
    failures: int = 0
    verify_failures: int = 0
    recorded: int = 0
    """The last step whose record is on disk."""
    usage: Usage = field(default_factory=Usage)
    turns: list[Turn] = field(default_factory=list)
    history: list[tuple[int, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    memories: list[str] = field(default_factory=list)
    stall: StallDetector = field(default_factory=StallDetector)
    max_tokens: int | None = None
    """The output limit of the next request when the last reply was cut off at it."""
    last_targets: list[tuple[int, int]] = field(default_factory=list)
    """The last recorded step's pointer targets (model space): the brain reads the tree of
    a window under one that is not the focused window too."""
    shot: Future[ScreenshotRef] | None = None
    """The step's screenshot being stored (the memory's writer thread): its record takes
    the reference when it is written."""
    takeovers_seen: int = 0
    """The screen hold's generation when this step looked at the screen (a takeover since
    then makes the step's decided calls stale)."""
    still: tuple[float, Future[Observation]] | None = None
    """When the last step's settle ended (``time.monotonic()``) and the observation it made
    of the still screen, when its last call was followed by that settle."""

    def take_still(self, max_age_s: float) -> Future[Observation] | None:
        """The last settle's observation if it ended at most ``max_age_s`` ago (once)."""
        kept, self.still = self.still, None
        if kept is None or time.monotonic() - kept[0] > max_age_s:
            return None
        return kept[1]

    def remember(
        self,
        decision: Decision,
        results: list[ToolResult],
        record: StepRecord,
        trim: Callable[[list[Turn]], list[Turn]],
    ) -> None:
        """The step as a turn of the context (``trim``: the context policy's) and a line
        of the history."""
        calls = decision.tool_calls
        self.turns.append(
            Turn(
                step=self.step,
                screenshot=decision.screenshot,
                prompt=decision.prompt,
                text=decision.text,
                tool_calls=list(calls),
                results=[r.to_part(c.id, c.name) for c, r in zip(calls, results, strict=True)],
                images=[image for r in results for image in r.images],
            )
        )
        self.turns = trim(self.turns)
        self.history.append((self.step, record.summary()))


class TaskEnded(Exception):
    """Raised inside the loop to end the task with a status."""

    def __init__(self, status: TaskStatus, summary: str, stopped_by: str | None = None) -> None:
        super().__init__(summary)
        self.status = status
        self.summary = summary
        self.stopped_by = stopped_by


def new_task_id() -> str:
    return f"t-{datetime.now(UTC):%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


CALLS_PER_STEP = 3
"""Tool calls a step takes, roughly: the tool-call bound is near when fewer than this many
times ``wrap_up_margin`` calls are left."""


def wrap_up_notes(state: RunState, settings: Settings) -> list[str]:
    """Near the step or tool-call bound, what to tell the model: wrap up."""
    notes = []
    left = settings.max_steps - state.step
    if left < settings.wrap_up_margin:
        notes.append(
            f"Only {left + 1} step(s) left including this one: finish now, or call "
            "`finished` or `call_user` with what you have."
        )
    calls_left = settings.max_tool_calls - state.tool_calls
    if calls_left <= CALLS_PER_STEP * settings.wrap_up_margin:
        notes.append(
            f"Only {calls_left} tool call(s) left for this task: finish now, or call "
            "`finished` or `call_user` with what you have."
        )
    return notes


def older_steps(state: RunState, n: int) -> list[str]:
    """Text lines for the last ``n`` steps that are no longer in the context as whole turns."""
    first_turn = state.turns[0].step if state.turns else state.step + 1
    older = [line for step, line in state.history if step < first_turn]
    return older[-n:] if n > 0 else []
