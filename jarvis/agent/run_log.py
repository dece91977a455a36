"""What a run leaves behind: each step's record (short-term memory, the run folder, the
bus, the budget line) and the task's outcome (long-term memory, the run folder, the bus)."""

from __future__ import annotations

import logging
import time

from jarvis.agent.hippocampus import Hippocampus
from jarvis.agent.state import RunState, TaskOutcome
from jarvis.config import Settings
from jarvis.events import BudgetUsed, EventBus, StepFinished, TaskFinished, TaskStatus
from jarvis.llm.pricing import cost_usd
from jarvis.memory.short_term import ErrorRecord, ResultRecord, StepRecord
from jarvis.runs.records import StepHooks
from jarvis.runs.step_file import call_points
from jarvis.safety import budget
from jarvis.tools.results import ToolResult

log = logging.getLogger(__name__)


class RunLog:
    """Writes what the agent loop did, step by step, and how the task ended."""

    def __init__(
        self,
        settings: Settings,
        hippocampus: Hippocampus,
        bus: EventBus,
        recorder: StepHooks | None,
    ) -> None:
        self.settings = settings
        self.hippocampus = hippocampus
        self.bus = bus
        self.recorder = recorder

    def outcome(self, state: RunState, status: TaskStatus, summary: str) -> TaskOutcome:
        return TaskOutcome(
            task_id=state.task_id,
            task=state.task,
            status=status,
            summary=summary,
            steps=state.step,
            tool_calls=state.tool_calls,
            usage=state.usage,
            cost_usd=cost_usd(self.settings.active_model, state.usage),
        )

    def finish(self, outcome: TaskOutcome) -> None:
        if self.recorder is not None:
            self.recorder.task_done(outcome.task_id)
        self.hippocampus.flush()  # the task's step records are on disk when it ends
        try:
            self.hippocampus.record_task(
                outcome.task, outcome.task_id, outcome.status, outcome.summary, outcome.steps
            )
        except (OSError, ValueError) as exc:
            log.warning("could not record the task in long-term memory: %s", exc)
        self.bus.emit(
            TaskFinished(
                task_id=outcome.task_id,
                status=outcome.status,
                summary=outcome.summary,
                steps=outcome.steps,
                stopped_by=outcome.stopped_by,
                input_tokens=outcome.usage.input_tokens,
                output_tokens=outcome.usage.output_tokens,
                cache_read_tokens=outcome.usage.cache_read_tokens,
                cost_usd=outcome.cost_usd,
            )
        )

    def step(self, state: RunState, record: StepRecord) -> None:
        started = time.perf_counter()
        if record.screenshot is None and state.shot is not None:
            record.screenshot = state.shot.result()  # stored while the model thought
        state.shot = None
        self.hippocampus.add_step(record)
        state.last_targets = [
            p for c in record.tool_calls for p in call_points(c.name, c.arguments)
        ]
        if self.recorder is not None:
            self.recorder.step_done(record)
        state.recorded = record.step
        self.bus.emit(
            StepFinished(
                task_id=state.task_id,
                step=record.step,
                timings_ms={**record.timings_ms, "record": ms_since(started)},
                input_tokens=record.usage.input_tokens,
                output_tokens=record.usage.output_tokens,
                cache_read_tokens=record.usage.cache_read_tokens,
                cost_usd=cost_usd(self.settings.active_model, state.usage),
                screenshot=record.screenshot.path if record.screenshot else None,
            )
        )
        self.budget_line(state)

    def budget_line(self, state: RunState) -> None:
        """``budget_used`` after each step, and after the verification and skill calls
        (which count in the budget as in the task's usage)."""
        if not budget.has_budget(self.settings.safety):
            return
        used = self.spent(state)
        self.bus.emit(
            BudgetUsed(
                task_id=state.task_id,
                cost_usd=used.cost_usd,
                tokens=used.tokens,
                max_cost_usd=self.settings.safety.max_cost_usd,
                max_tokens=self.settings.safety.max_tokens_total,
            )
        )

    def spent(self, state: RunState) -> budget.Spent:
        return budget.spent(state.usage, cost_usd(self.settings.active_model, state.usage))


def ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)


def result_record(result: ToolResult) -> ResultRecord:
    error = (
        ErrorRecord(code=result.error.code, message=result.error.message) if result.error else None
    )
    return ResultRecord(ok=result.ok, data=result.data, error=error)
