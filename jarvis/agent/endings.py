"""How a step can end its task: the input fail-safe, a call for the user, a finish the
verifier passes (its way then kept as a skill), a stall, too many failures in a row.

Each ending raises :class:`~jarvis.agent.state.TaskEnded`; the loop turns it into the
outcome. A finish the verifier does not pass and a repeated action on an unchanged screen
only leave a note for the model's next step.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from jarvis import prompts
from jarvis.agent.brain import Brain
from jarvis.agent.hippocampus import Hippocampus
from jarvis.agent.run_log import RunLog
from jarvis.agent.state import RunState, TaskEnded
from jarvis.config import Settings
from jarvis.events import AgentWarning, EventBus
from jarvis.llm.base import ProviderError
from jarvis.tools.context import ToolContext

log = logging.getLogger(__name__)


class Endings:
    """Decides, after a step's actions, whether the task ends and how."""

    def __init__(
        self,
        settings: Settings,
        brain: Brain,
        hippocampus: Hippocampus,
        bus: EventBus,
        run_log: RunLog,
        on_verified: Callable[[str, str], Awaitable[None]] | None,
    ) -> None:
        self.settings = settings
        self.brain = brain
        self.hippocampus = hippocampus
        self.bus = bus
        self.run_log = run_log
        self.on_verified = on_verified

    async def after_action(self, state: RunState, context: ToolContext, verdict: str) -> None:
        """End the task on the control a tool set this step, or on the stall ``verdict``."""
        control = context.take_control()
        if control is not None and control.kind == "aborted":
            raise TaskEnded(
                "cancelled", f"stopped by the input fail-safe: {control.text}", "pointer corner"
            )
        if control is not None and control.kind == "call_user":
            raise TaskEnded("needs_user", control.text)
        if control is not None and control.kind == "finished":
            await self._finished(state, control.text)
            return
        if verdict == "stuck":
            raise TaskEnded("failed", "stuck: the same action was repeated on an unchanged screen")
        if verdict == "warn":
            message = (
                "Warning: you repeated the same action and the screen did not change. "
                "It is not working; try something different."
            )
            state.notes.append(message)
            self.bus.emit(AgentWarning(task_id=state.task_id, message=message))

    def count_failure(self, state: RunState, reason: str) -> None:
        state.failures += 1
        if state.failures >= self.settings.max_consecutive_failures:
            raise TaskEnded("failed", f"{state.failures} failed steps in a row; last: {reason}")

    async def _finished(self, state: RunState, summary: str) -> None:
        """The model called ``finished``: verify it; a pass ends the task, a fail is noted
        for the model (and ends the task after too many)."""
        result = await self.brain.verify(state.task, summary, state.task_id, state.last_targets)
        if result.response is not None:
            state.usage = state.usage + result.response.usage
            self.run_log.budget_line(state)
        if result.done:
            if self.on_verified is not None:
                await self.on_verified(state.task_id, summary)
            await self._learn_skill(state)
            raise TaskEnded("finished", summary)
        state.verify_failures += 1
        if state.verify_failures > self.settings.max_verify_failures:
            raise TaskEnded("failed", f"verification failed: {result.reason}")
        state.notes.append(prompts.render_text("not_done", reason=result.reason))

    async def _learn_skill(self, state: RunState) -> None:
        """After a verified finish, keep how it was done as a skill memory."""
        if not self.hippocampus.learns:
            return
        try:
            response = await self.brain.distill_skill(state.task, [h for _, h in state.history])
            state.usage = state.usage + response.usage
            self.run_log.budget_line(state)
            await asyncio.to_thread(
                self.hippocampus.store_skill, state.task, response.text.strip(), state.task_id
            )
        except (ProviderError, OSError, ValueError) as exc:
            log.warning("could not distill a skill from task %s: %s", state.task_id, exc)
