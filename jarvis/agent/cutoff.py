"""A reply cut off at the output token limit (stop reason ``max_tokens``).

A tool call the limit cut in the middle is never run: its JSON is incomplete, so its
arguments would be a guess. The model is told that its reply was cut off and which call
was not run, and the next request gets room to finish: twice the configured
``max_tokens`` (most models allow that much output; asking for more than a model's
maximum is an error, so it grows once, not without bound).
"""

from __future__ import annotations

from jarvis.llm.types import LLMResponse, ToolCall
from jarvis.tools.results import ToolResult

CUT_OFF = "max_tokens"
GROWTH = 2


def is_cut_off(response: LLMResponse) -> bool:
    return response.stop_reason == CUT_OFF


def runnable(calls: list[ToolCall]) -> list[ToolCall]:
    """The calls of a cut-off reply that were written whole: those before the first call
    whose JSON the limit cut."""
    for position, call in enumerate(calls):
        if call.parse_error is not None:
            return calls[:position]
    return calls


def next_max_tokens(configured: int) -> int:
    """The output limit for the request after a cut-off reply."""
    return configured * GROWTH


def not_run_result(limit: int) -> ToolResult:
    return ToolResult.not_run(
        f"your reply was cut off at the output limit ({limit} tokens) while this "
        "call was being written, so its arguments were incomplete"
    )


def note(response: LLMResponse, limit: int, room: int) -> str:
    """What the model is told in the next step."""
    cut = [c.name for c in response.tool_calls if c.parse_error is not None]
    what = f" in the middle of the `{cut[0]}` call, which was not run" if cut else ""
    return (
        f"Your last reply was cut off at the output limit of {limit} tokens{what}. "
        f"This reply may use up to {room} tokens: keep the reflection short and send "
        "the whole call again."
    )
