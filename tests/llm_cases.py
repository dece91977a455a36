"""What the provider adapter tests share: helpers and the checks both adapters must pass.

Each test module keeps its own cases (the faults its wire protocol has); the checks here
are the behaviour every adapter owes the agent loop, written once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import pytest

from jarvis.events import EventBus, EventRecorder, ModelRetry
from jarvis.llm.base import AdapterBase, StreamInterrupted, complete
from jarvis.llm.retry import RetryPolicy
from jarvis.llm.types import LLMRequest, Message, ToolSpec
from tests.fake_model import FakeModel, Reply

T = TypeVar("T")
FAST = RetryPolicy(max_retries=3, base_delay_s=0.001, max_delay_s=0.01, max_retry_after_s=0.02)
MakeProvider = Callable[[FakeModel, EventBus | None], AdapterBase]


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run with a deadline, so a hang fails the test instead of stalling the suite."""
    return asyncio.run(asyncio.wait_for(coro, timeout=20))


def request(*messages: Message, tools: list[ToolSpec] | None = None, **kw: Any) -> LLMRequest:
    msgs = list(messages) or [Message.user("What is on the screen?")]
    return LLMRequest(system="You drive a desktop.", messages=msgs, tools=tools or [], **kw)


def check_recovers_after_one_retry(
    fake_model: FakeModel, make: MakeProvider, reply: Reply, retry_delay: float | None
) -> None:
    """A retryable fault before any output costs one retry (with a ModelRetry event)."""
    bus = EventBus()
    recorder = EventRecorder(bus)
    fake_model.script(reply, Reply(text="recovered"))
    response = run(complete(make(fake_model, bus), request()))
    assert response.text == "recovered"
    assert len(fake_model.requests) == 2
    (retry,) = recorder.of(ModelRetry)
    assert retry.attempt == 1 and retry.reason
    if retry_delay is not None:
        assert retry.delay_s == pytest.approx(retry_delay)
    else:
        assert 0 < retry.delay_s <= FAST.max_delay_s


def check_cut_after_output_is_not_retried(
    fake_model: FakeModel, make: MakeProvider, reply: Reply
) -> None:
    """A stream cut after text reached the caller is a clear error, never a hang or a retry."""
    fake_model.script(reply)
    seen: list[str] = []
    with pytest.raises(StreamInterrupted) as info:
        run(complete(make(fake_model, None), request(), on_event=lambda e: seen.append(e.type)))
    assert "broke off" in str(info.value)
    assert "text_delta" in seen
    assert len(fake_model.requests) == 1  # output already reached the caller: no retry
