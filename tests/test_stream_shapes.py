"""Stream shapes of real endpoints, through the real anthropic and openai SDKs against the
loopback scripted model: bodies that end right after the stop reason, OpenRouter's
``[DONE]`` without a finish_reason, tool-call deltas keyed by their index (starting at 1,
the head repeated in every chunk, a whole call in one chunk) and a reply cut off by
max_tokens in the middle of a tool call."""

from __future__ import annotations

import json

import pytest

from jarvis.events import EventBus, EventRecorder, ModelRetry
from jarvis.llm.anthropic import AnthropicProvider
from jarvis.llm.base import AdapterBase, StreamInterrupted, complete
from jarvis.llm.openai import OpenAIProvider
from jarvis.llm.types import (
    LLMResponse,
    StreamEvent,
    ToolArgsDelta,
    ToolCallDone,
    ToolCallStart,
    ToolSpec,
)
from tests.fake_model import FakeModel, Reply, ToolUse, call
from tests.llm_cases import FAST, request, run

KEY = "sk-test-stream-shapes-0123"
TYPE = ToolSpec(
    name="type_text",
    description="Type text.",
    parameters={"type": "object", "properties": {"text": {"type": "string"}}},
)
CLICK = ToolSpec(
    name="click",
    description="Click.",
    parameters={"type": "object", "properties": {"x": {"type": "integer"}}},
)
TOOLS = [TYPE, CLICK]
LONG_TEXT = "Grüße 你好 <tag> ~|{} é😀 " * 4


def anthropic(fake_model: FakeModel, bus: EventBus | None = None) -> AnthropicProvider:
    return AnthropicProvider(
        "claude-test", api_key=KEY, base_url=fake_model.base_url, bus=bus, retry=FAST
    )


def openai(fake_model: FakeModel, bus: EventBus | None = None) -> OpenAIProvider:
    return OpenAIProvider(
        "gpt-test", api_key=KEY, base_url=fake_model.openai_base_url, bus=bus, retry=FAST
    )


def stream(provider: AdapterBase) -> tuple[LLMResponse, list[StreamEvent], list[ModelRetry]]:
    """One call with tools; the response, every event the caller saw, and any retries."""
    seen: list[StreamEvent] = []
    recorder = EventRecorder(provider.bus) if provider.bus is not None else None
    response = run(complete(provider, request(tools=TOOLS), on_event=seen.append))
    return response, seen, recorder.of(ModelRetry) if recorder else []


def assert_calls_streamed(seen: list[StreamEvent], response: LLMResponse) -> None:
    """Each call started once, its argument deltas add up to its arguments, done once."""
    for tool_call in response.tool_calls:
        starts = [e for e in seen if isinstance(e, ToolCallStart) and e.id == tool_call.id]
        assert [s.name for s in starts] == [tool_call.name]
        pieces = "".join(
            e.delta for e in seen if isinstance(e, ToolArgsDelta) and e.id == tool_call.id
        )
        assert json.loads(pieces) == tool_call.arguments
        done = [e for e in seen if isinstance(e, ToolCallDone) and e.call.id == tool_call.id]
        assert len(done) == 1


# --- Anthropic ----------------------------------------------------------------------


def test_anthropic_body_ending_after_message_delta_is_a_normal_end(
    fake_model: FakeModel,
) -> None:
    fake_model.script(
        Reply(
            text="Typing it.",
            tool_calls=[call("type_text", text=LONG_TEXT), call("click", x=3)],
            omit_message_stop=True,
        )
    )
    response, seen, retries = stream(anthropic(fake_model, EventBus()))
    assert len(fake_model.requests) == 1 and retries == []  # not retried, not an error
    assert response.stop_reason == "tool_use" and response.text == "Typing it."
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("type_text", {"text": LONG_TEXT}),
        ("click", {"x": 3}),
    ]
    assert all(c.parse_error is None for c in response.tool_calls)
    assert_calls_streamed(seen, response)


def test_anthropic_text_reply_without_message_stop_ends_normally(fake_model: FakeModel) -> None:
    fake_model.script(Reply(text="All done here.", omit_message_stop=True, output_tokens=5))
    response, _, _ = stream(anthropic(fake_model))
    assert response.text == "All done here." and response.stop_reason == "end_turn"
    assert response.usage.output_tokens == 5  # message_delta's usage was read


def test_anthropic_call_cut_off_by_max_tokens_comes_back_marked_unparsed(
    fake_model: FakeModel,
) -> None:
    """max_tokens in the middle of a call: the reply ends normally (so the agent can say
    so), the call carries its parse error and nothing of it is guessed."""
    cut = ToolUse(name="type_text", raw='{"text": "Grüße, this sentence nev')
    fake_model.script(
        Reply(
            text="Typing.",
            tool_calls=[call("click", x=1), cut],
            stop_reason="max_tokens",
            omit_message_stop=True,
        )
    )
    response, _, _ = stream(anthropic(fake_model))
    assert response.stop_reason == "max_tokens"
    first, broken = response.tool_calls
    assert first.arguments == {"x": 1} and first.parse_error is None
    assert broken.name == "type_text" and broken.arguments == {}
    assert broken.parse_error is not None and "not valid JSON" in broken.parse_error


def test_anthropic_broken_call_without_message_stop_is_a_broken_stream(
    fake_model: FakeModel,
) -> None:
    """Without message_stop and with a stop reason that is not max_tokens, a call that is
    not complete JSON means the body did not end as the server meant."""
    cut = ToolUse(name="type_text", raw='{"text": "half')
    fake_model.script(Reply(tool_calls=[cut], omit_message_stop=True))
    with pytest.raises(StreamInterrupted) as info:
        run(complete(anthropic(fake_model), request(tools=TOOLS)))
    assert "broken tool call (type_text)" in str(info.value)


# --- OpenAI-compatible --------------------------------------------------------------


def test_openai_done_without_finish_reason_is_a_normal_end(fake_model: FakeModel) -> None:
    """OpenRouter ends some streams with [DONE] and never sends a finish_reason."""
    fake_model.script(
        Reply(
            text="On it.",
            tool_calls=[call("type_text", text=LONG_TEXT), call("click", x=9)],
            omit_finish_reason=True,
            args_chunk=5,
        )
    )
    response, seen, retries = stream(openai(fake_model, EventBus()))
    assert len(fake_model.requests) == 1 and retries == []
    assert response.stop_reason == "tool_use" and response.text == "On it."
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("type_text", {"text": LONG_TEXT}),
        ("click", {"x": 9}),
    ]
    assert_calls_streamed(seen, response)


def test_openai_text_only_without_finish_reason_is_end_turn(fake_model: FakeModel) -> None:
    fake_model.script(Reply(text="Nothing to do.", omit_finish_reason=True))
    response, _, _ = stream(openai(fake_model))
    assert response.text == "Nothing to do." and response.stop_reason == "end_turn"


def test_openai_no_finish_reason_and_a_broken_call_is_a_broken_stream(
    fake_model: FakeModel,
) -> None:
    """No finish_reason and a call that is not complete JSON: the body broke off. The
    call's output had started, so it is not retried; it is never handed over to run."""
    cut = ToolUse(name="type_text", raw='{"text": "Grüße, this sent')
    fake_model.script(Reply(tool_calls=[cut], omit_finish_reason=True))
    seen: list[StreamEvent] = []
    with pytest.raises(StreamInterrupted) as info:
        run(complete(openai(fake_model), request(tools=TOOLS), on_event=seen.append))
    assert "in the middle of a tool call (type_text)" in str(info.value)
    assert not [e for e in seen if isinstance(e, ToolCallDone)]
    assert len(fake_model.requests) == 1


def test_openai_nothing_and_no_finish_reason_is_retried(fake_model: FakeModel) -> None:
    """An empty body (no output, no finish_reason) is a broken response: retried whole."""
    fake_model.script(Reply(omit_finish_reason=True), Reply(text="second try"))
    bus = EventBus()
    response, _, retries = stream(openai(fake_model, bus))
    assert response.text == "second try" and len(fake_model.requests) == 2
    assert len(retries) == 1 and "without a finish_reason or any output" in retries[0].reason


def test_openai_call_cut_off_by_length_is_max_tokens_and_unparsed(
    fake_model: FakeModel,
) -> None:
    cut = ToolUse(name="type_text", raw='{"text": "abc')
    fake_model.script(Reply(tool_calls=[cut], stop_reason="length"))
    response, _, _ = stream(openai(fake_model))
    assert response.stop_reason == "max_tokens"
    (broken,) = response.tool_calls
    assert broken.arguments == {} and broken.parse_error is not None


@pytest.mark.parametrize(
    "shape",
    [
        {"tool_index_base": 1},
        {"repeat_tool_head": True},
        {"whole_tool_calls": True},
        {"tool_index_base": 1, "repeat_tool_head": True, "omit_finish_reason": True},
        {"tool_index_base": 3, "whole_tool_calls": True, "omit_finish_reason": True},
        {"omit_tool_index": True},
        {"omit_tool_index": True, "whole_tool_calls": True},
    ],
    ids=[
        "index-from-1",
        "head-repeated",
        "whole-call",
        "all-three-no-finish",
        "whole-from-3",
        "no-index",
        "no-index-whole",
    ],
)
def test_openai_tool_deltas_are_keyed_by_index(fake_model: FakeModel, shape: dict) -> None:
    calls = [call("type_text", text=LONG_TEXT), call("click", x=7), call("type_text", text="b")]
    fake_model.script(Reply(text="Three calls.", tool_calls=calls, args_chunk=4, **shape))
    response, seen, retries = stream(openai(fake_model, EventBus()))
    assert retries == [] and len(fake_model.requests) == 1
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("type_text", {"text": LONG_TEXT}),
        ("click", {"x": 7}),
        ("type_text", {"text": "b"}),
    ]
    assert len({c.id for c in response.tool_calls}) == 3
    assert response.stop_reason == "tool_use"
    assert_calls_streamed(seen, response)
