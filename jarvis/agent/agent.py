"""The agent loop: observe, think and decide, act, settle, record, until an ending.

Endings: ``finished`` and a passed verification; ``call_user`` (needs_user);
the step or tool-call bound (one last call without tools writes the answer);
too many consecutive failures; a stall; a cancel. The loop emits events and
knows nothing about any UI.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from jarvis.agent import cutoff
from jarvis.agent.beside import Beside
from jarvis.agent.brain import Brain, Decision, ThinkContext
from jarvis.agent.cerebellum import Cerebellum
from jarvis.agent.endings import Endings
from jarvis.agent.hippocampus import Hippocampus
from jarvis.agent.run_log import RunLog, ms_since, result_record
from jarvis.agent.state import (
    RunState,
    TaskEnded,
    TaskOutcome,
    new_task_id,
    older_steps,
    wrap_up_notes,
)
from jarvis.config import Settings
from jarvis.desktop.screen import Observation
from jarvis.desktop.settle import STILL_FRAMES, Settler, SettleResult
from jarvis.events import EventBus, StepStarted, TaskStarted
from jarvis.llm.base import ProviderAuthError, ProviderError, ProviderUnreachable
from jarvis.memory.short_term import StepRecord, ToolCallRecord
from jarvis.runs.records import StepHooks
from jarvis.safety import budget
from jarvis.safety.channel_display import PrivateDisplayError, PrivateDisplayLost, display_for
from jarvis.safety.takeover import ScreenHold
from jarvis.tools.context import ToolContext, current_context
from jarvis.tools.grammar_tools import release_held_keys
from jarvis.tools.results import ToolResult

if TYPE_CHECKING:
    from jarvis.desktop.desktop import Desktop

log = logging.getLogger(__name__)


class ContextFactory(Protocol):
    """The tool context of one task, with its channels (they choose the channel policy)."""

    def __call__(self, task_id: str, channels: tuple[str, ...] = ()) -> ToolContext: ...


class Agent:
    def __init__(
        self,
        settings: Settings,
        brain: Brain,
        cerebellum: Cerebellum,
        hippocampus: Hippocampus,
        settler: Settler,
        context_factory: ContextFactory,
        bus: EventBus,
        todos: Callable[[], str] | None = None,
        stop: threading.Event | None = None,
        recorder: StepHooks | None = None,
        desktop: Desktop | None = None,
        on_verified: Callable[[str, str], Awaitable[None]] | None = None,
        screen_hold: ScreenHold | None = None,
    ) -> None:
        self.settings = settings
        self.brain = brain
        self.cerebellum = cerebellum
        self.hippocampus = hippocampus
        self.settler = settler
        self.context_factory = context_factory
        self.bus = bus
        self.todos = todos or (lambda: "(none)")
        self._inner: asyncio.Task[TaskOutcome] | None = None
        self._cancel_requested = False
        self._cancel_next: str | None = None
        self._stopped_by = "user"
        self.stop = stop or threading.Event()
        """Set on cancel: blocking work in threads (input, settle) checks it and stops."""
        self.recorder = recorder
        """Writes the run's steps/NNNN/ (jarvis.runs.records) from the loop's three hooks."""
        self.desktop = desktop
        """The desktop the screen and input work on (given by build_agent); a task from a
        channel with ``private_display`` moves it to a private display for its run."""
        self.on_verified = on_verified
        """Awaited with (task id, summary) as soon as a finish is verified, before the skill
        is distilled: the daemon writes the verdict here, so a crash after it loses nothing."""
        self.screen_hold = screen_hold
        """The takeover's pause gate (made with the desktop's hold by build_agent): each step
        waits while a person holds the screen, then reads their note (jarvis.safety.takeover)."""
        self._run_log = RunLog(settings, hippocampus, bus, recorder)
        self._endings = Endings(settings, brain, hippocampus, bus, self._run_log, on_verified)

    def cancel(self, by: str = "user") -> None:
        """Stop the running task within a moment: the model stream and the current tool.
        ``by`` says which brake (hotkey, tui, web, cli, signal...); the outcome records it."""
        if not self._cancel_requested:
            self._stopped_by = by
        self._cancel_requested = True
        self.stop.set()
        if self._inner is not None:
            self._inner.cancel()

    def cancel_next(self, by: str) -> None:
        """Cancel the next run as it begins, before its first step (an early brake)."""
        self._cancel_next = by

    async def run(
        self, task: str, task_id: str | None = None, channels: tuple[str, ...] = ()
    ) -> TaskOutcome:
        """Run one task; ``channels`` (where it came from) choose the channel policy."""
        state = RunState(task=task, task_id=task_id or new_task_id(), channels=channels)
        if self.screen_hold is not None:  # a takeover that ended before this run is not news
            hold = self.screen_hold
            state.takeovers_seen = hold.generation - (1 if hold.held.is_set() else 0)
        self.bus.emit(TaskStarted(task_id=state.task_id, task=task))
        self._cancel_requested = False
        self.stop.clear()
        self._inner = asyncio.create_task(self._on_its_display(state))
        if (by := self._cancel_next) is not None:  # cancelled before it starts: no step
            self._cancel_next = None
            self.cancel(by)
        try:
            outcome = await self._inner
        except asyncio.CancelledError:
            outcome = self._run_log.outcome(state, "cancelled", f"cancelled by {self._stopped_by}")
            outcome.stopped_by = self._stopped_by
            self._run_log.finish(outcome)
            if not self._cancel_requested:
                raise
            return outcome
        except PrivateDisplayError as exc:  # fails closed: nothing ran on the person's display
            how = "stopped" if isinstance(exc, PrivateDisplayLost) else "not run"
            log.warning("task %s %s: %s", state.task_id, how, exc)
            outcome = self._run_log.outcome(state, "failed", f"{how}: {exc}")
        finally:
            self._inner = None
        self._run_log.finish(outcome)
        return outcome

    async def _on_its_display(self, state: RunState) -> TaskOutcome:
        """The task on its desktop: a private display when its channel asks for one."""
        async with display_for(self.settings, state.channels, self.desktop, self.screen_hold):
            return await self._loop(state)

    async def _loop(self, state: RunState) -> TaskOutcome:
        state.memories = await asyncio.to_thread(self.hippocampus.recall, state.task)
        context = self.context_factory(state.task_id, state.channels)
        current = current_context.set(context)  # for a provider that must ask a person
        s = self.settings
        try:
            while True:
                if state.step >= s.max_steps:
                    await self._wrap_up(state, f"{s.max_steps} steps")
                if state.tool_calls >= s.max_tool_calls:
                    await self._wrap_up(state, f"{s.max_tool_calls} tool calls")
                over = budget.exceeded(self._run_log.spent(state), s.safety)
                if over is not None:  # no wrap-up call: it would spend past the budget
                    raise TaskEnded("failed", over)
                state.step += 1
                await self._step(state, context)
        except TaskEnded as end:
            outcome = self._run_log.outcome(state, end.status, end.summary)
            outcome.stopped_by = end.stopped_by
            return outcome
        finally:
            current_context.reset(current)
            await asyncio.to_thread(release_held_keys, context)  # none stays down after a task

    async def _step(self, state: RunState, context: ToolContext) -> None:
        await self._wait_for_person(state)
        self.bus.emit(StepStarted(task_id=state.task_id, step=state.step))
        timings: dict[str, float] = {}
        started = time.perf_counter()
        # the last settle's picture of the still screen, no older than the stillness it saw
        # (a takeover since dropped it)
        still = state.take_still(STILL_FRAMES * self.settings.settle_interval_ms / 1000)
        observation = await self.brain.perceive(state.last_targets, still)
        if self.recorder is not None:
            self.recorder.observed(state.task_id, state.step, observation)
        state.shot = self.hippocampus.store_screenshot(observation)  # beside the model call
        timings["capture"] = ms_since(started)
        if observation.tree_seconds:
            timings["tree"] = observation.tree_seconds * 1000
        record = StepRecord(
            task_id=state.task_id,
            step=state.step,
            timestamp=datetime.now(UTC),
            tree=observation.tree,
        )
        try:
            await self._decide_and_act(state, context, observation, record, timings)
        except asyncio.CancelledError:
            if state.recorded < state.step:  # cut short: keep what the step got to
                record.thought = " ".join(filter(None, [record.thought, "(cancelled here)"]))
                record.result, record.timings_ms = "failed", timings
                self._run_log.step(state, record)
            raise

    async def _decide_and_act(
        self,
        state: RunState,
        context: ToolContext,
        observation: Observation,
        record: StepRecord,
        timings: dict[str, float],
    ) -> None:
        """One step's phases: think (the model's decision), act on its calls, record."""
        thought = await self._think(state, context, observation, record, timings)
        if thought is None:
            return
        decision, cut_at = thought
        if not decision.tool_calls:
            self._no_tool_called(state, decision, record, timings)
            return
        verdict = state.stall.check(observation.phash, decision.tool_calls)
        # recalled again while the screen settles (an embedding, maybe a query)
        memories = Beside(self.hippocampus.refreshed, state.task, decision.thought, state.memories)
        try:
            results = await self._act(
                state, context, decision, cut_at, record, timings, memories.start
            )
            state.remember(decision, results, record, self.brain.policy.trim)
            self._run_log.step(state, record)
            state.memories = await memories.result()
        finally:
            memories.drop()  # ended early: what it recalls is not needed
        if not any(r.ok for r in results):
            self._endings.count_failure(state, "every tool call of the step failed")
        else:
            state.failures = 0
        await self._endings.after_action(state, context, verdict)

    async def _think(
        self,
        state: RunState,
        context: ToolContext,
        observation: Observation,
        record: StepRecord,
        timings: dict[str, float],
    ) -> tuple[Decision, int | None] | None:
        """The model's decision for this step, its usage counted, and the output limit it
        was cut off at (None: not cut off); None when the model call failed (the step is
        recorded as failed and counted)."""
        s = self.settings
        state.notes.extend(wrap_up_notes(state, s))
        near = budget.wrap_up_note(self._run_log.spent(state), s.safety)
        state.notes.extend([near] if near else [])
        ctx = self._think_context(state, observation)
        state.notes = []
        started = time.perf_counter()
        try:
            decision = await self.brain.think_and_decide(
                ctx, self.cerebellum.definitions(context.channels)
            )
        except asyncio.CancelledError:  # cut mid-stream: the tokens used so far still count
            record.usage = self.brain.usage_so_far.model_copy()
            state.usage = state.usage + record.usage
            raise
        except ProviderAuthError as exc:
            raise TaskEnded("failed", f"the model provider refused the credentials: {exc}") from exc
        except ProviderUnreachable as exc:  # a wrong base URL: more steps would fail alike
            raise TaskEnded("failed", str(exc)) from exc
        except ProviderError as exc:
            timings["model"] = ms_since(started)
            record.thought = f"model call failed: {exc}"
            record.result = "failed"
            record.timings_ms = timings
            self._run_log.step(state, record)
            self._endings.count_failure(state, f"the model call failed: {exc}")
            return None
        timings["model"] = ms_since(started)
        state.usage = state.usage + decision.response.usage
        limit, cut = state.max_tokens or s.max_tokens, cutoff.is_cut_off(decision.response)
        state.max_tokens = cutoff.next_max_tokens(s.max_tokens) if cut else None
        if state.max_tokens is not None:  # cut off: say so, and give the next reply room
            state.notes.append(cutoff.note(decision.response, limit, state.max_tokens))
        record.thought, record.reflection = decision.thought, decision.reflection
        record.usage = decision.response.usage.model_copy()
        return decision, limit if cut else None

    def _no_tool_called(
        self, state: RunState, decision: Decision, record: StepRecord, timings: dict[str, float]
    ) -> None:
        timings["act"] = timings["settle"] = 0.0
        record.result, record.timings_ms = "failed", timings
        state.remember(decision, [], record, self.brain.policy.trim)
        self._run_log.step(state, record)
        state.notes.append(
            "Your last reply called no tool. Act with a tool, or call `finished` if the task "
            "is done, or `call_user` if you need the user."
        )
        self._endings.count_failure(state, "the model replied without calling a tool")

    async def _act(
        self,
        state: RunState,
        context: ToolContext,
        decision: Decision,
        cut_at: int | None,
        record: StepRecord,
        timings: dict[str, float],
        while_settling: Callable[[], None] = lambda: None,
    ) -> list[ToolResult]:
        """Run the decision's calls within the task's limits (a reply cut off at ``cut_at``
        tokens runs only its whole calls); a result for every call (the ones not run say
        why), written into ``record``. ``while_settling`` starts work the settle's waiting
        leaves the CPU to."""
        allowed = decision.tool_calls[: max(0, self.settings.max_tool_calls - state.tool_calls)]
        calls = allowed if cut_at is None else cutoff.runnable(allowed)  # cut short: not run
        record.tool_calls = [
            ToolCallRecord(id=c.id, name=c.name, arguments=c.arguments) for c in decision.tool_calls
        ]
        stale = self._person_came(state)  # decided on a screen a person has changed since

        async def settle() -> SettleResult:
            while_settling()
            return await self._settle()

        action = await self.cerebellum.act([] if stale else calls, context, settle)
        results = action.results + ([_taken_over() for _ in calls] if stale else [])
        results += [cutoff.not_run_result(cut_at or 0) for _ in allowed[len(calls) :]]
        results += [
            ToolResult.not_run("the task's tool-call limit was reached")
            for _ in decision.tool_calls[len(allowed) :]
        ]
        state.tool_calls += action.executed
        state.still = (time.monotonic(), action.still) if action.still is not None else None
        timings["act"], timings["settle"] = action.act_ms, action.settle_ms
        record.results = [result_record(r) for r in results]
        record.result = "success" if any(r.ok for r in results) else "failed"
        record.timings_ms = timings
        return results

    def _think_context(self, state: RunState, observation: Observation) -> ThinkContext:
        return ThinkContext(
            task=state.task,
            task_id=state.task_id,
            step=state.step,
            max_steps=self.settings.max_steps,
            observation=observation,
            todos=self.todos(),
            memories=state.memories,
            history=older_steps(state, self.settings.recent_steps),
            turns=list(state.turns),
            notes=list(state.notes),
            max_tokens=state.max_tokens,
        )

    async def _settle(self) -> SettleResult:
        return await asyncio.to_thread(self.settler.wait, self.stop)

    async def _wait_for_person(self, state: RunState) -> None:
        """While a person holds the screen, wait; then tell the model what happened."""
        hold = self.screen_hold
        if hold is None:
            return
        await hold.wait_released()
        if hold.generation != state.takeovers_seen:
            state.still = None  # a person had the screen since the settle
        state.notes.extend(hold.notes_after(state.takeovers_seen))
        state.takeovers_seen = hold.generation

    def _person_came(self, state: RunState) -> bool:
        hold = self.screen_hold
        return hold is not None and (hold.held.is_set() or hold.generation != state.takeovers_seen)

    async def _wrap_up(self, state: RunState, limit: str) -> None:
        observation = await self.brain.perceive(state.last_targets)
        ctx = self._think_context(state, observation)
        try:
            response = await self.brain.wrap_up(ctx, limit)
        except ProviderError as exc:
            raise TaskEnded(
                "failed", f"reached the limit of {limit}; no final answer: {exc}"
            ) from exc
        state.usage = state.usage + response.usage
        raise TaskEnded("failed", f"reached the limit of {limit}. {response.text.strip()}")


def _taken_over() -> ToolResult:
    return ToolResult.not_run("a person took over the screen after you decided this; look again")
