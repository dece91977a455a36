"""The oracle: a scripted model that plays a task's ``oracle:`` steps, so a suite runs
without a real model (in CI, and to check the suite itself).

It answers the agent's decision requests (the ones that offer tools) with the next step's
tool calls, in order, and when the script is used up it calls ``finished``. It does not
look at the screen: it cannot judge, so a request without tools (the verification of a
finish, a wrap-up) gets "done" and the task's checker decides. It spends no tokens and
costs nothing. ``delay_s`` holds each answer back, like a real model's latency (for
``bench/replay.py``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

from jarvis.llm.types import (
    LLMRequest,
    LLMResponse,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ToolCall,
)

VERDICT = json.dumps({"done": True, "reason": "the oracle does not judge; the checker does"})


class OracleProvider:
    name = "oracle"

    def __init__(self, steps: list[list[dict[str, dict[str, Any]]]], delay_s: float = 0.0) -> None:
        self.model = "oracle"
        self.steps = [list(step) for step in steps]
        self.delay_s = delay_s
        self.answered = 0
        self._ids = itertools.count(1)

    def _calls(self, step: list[dict[str, dict[str, Any]]]) -> list[ToolCall]:
        calls = []
        for entry in step:
            [(name, arguments)] = entry.items()
            calls.append(
                ToolCall(id=f"oracle-{next(self._ids)}", name=name, arguments=dict(arguments or {}))
            )
        return calls

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        if self.delay_s > 0:
            await asyncio.sleep(self.delay_s)
        if not request.tools:
            text = VERDICT
            calls: list[ToolCall] = []
        elif self.answered < len(self.steps):
            step = self.steps[self.answered]
            self.answered += 1
            names = ", ".join(next(iter(c)) for c in step)
            text = f"Thought: oracle step {self.answered} of {len(self.steps)}: {names}."
            calls = self._calls(step)
        else:
            text = "Thought: the oracle script is done."
            calls = self._calls([{"finished": {"summary": "the oracle script is done"}}])
        yield TextDelta(text=text)
        yield ResponseDone(
            response=LLMResponse(
                text=text,
                tool_calls=calls,
                stop_reason="tool_use" if calls else "end_turn",
                model=self.model,
            )
        )

    async def aclose(self) -> None:
        return None
