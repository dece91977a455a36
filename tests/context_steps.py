"""One agent step as the context sees it, without a desktop: the Brain's request for a
screenshot, then the step remembered as a turn (every call answered "ok") and the window
trimmed by the policy. Shared by tests/test_context_drops.py and bench/context_cost.py."""

from __future__ import annotations

from jarvis.agent.brain import Brain, Decision, ThinkContext
from jarvis.agent.context import Turn
from jarvis.agent.state import RunState, older_steps
from jarvis.desktop.screen import Observation
from jarvis.llm.types import ToolResultPart, ToolSpec


def context_for(
    state: RunState, brain: Brain, observation: Observation, max_steps: int, todos: str = "(none)"
) -> ThinkContext:
    """The ThinkContext of ``state``'s current step."""
    return ThinkContext(
        task=state.task,
        task_id=state.task_id,
        step=state.step,
        max_steps=max_steps,
        observation=observation,
        todos=todos,
        history=older_steps(state, brain.settings.recent_steps),
        turns=list(state.turns),
    )


async def think_step(
    brain: Brain,
    state: RunState,
    observation: Observation,
    tools: list[ToolSpec],
    max_steps: int,
    todos: str = "(none)",
) -> Decision:
    """Step ``state.step + 1``: one request, then the step kept as a turn and in the history."""
    state.step += 1
    ctx = context_for(state, brain, observation, max_steps, todos)
    decision = await brain.think_and_decide(ctx, tools)
    results = [
        ToolResultPart(call_id=c.id, name=c.name, ok=True, content='{"ok": true}')
        for c in decision.tool_calls
    ]
    turn = Turn(
        state.step,
        decision.screenshot,
        decision.prompt,
        decision.text,
        decision.tool_calls,
        results,
    )
    state.turns = brain.policy.trim([*state.turns, turn])
    state.history.append((state.step, f"step {state.step}: clicked item {state.step} -> ok"))
    return decision
