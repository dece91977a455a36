"""Tool modes native / text / auto, end to end through both SDKs and the fake model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from jarvis.config import load_settings
from jarvis.events import EventBus, EventRecorder, ModelRetry, ToolModeFallback
from jarvis.llm.anthropic import AnthropicProvider
from jarvis.llm.base import AdapterBase, complete
from jarvis.llm.factory import make_provider
from jarvis.llm.openai import OpenAIProvider
from jarvis.llm.retry import RetryPolicy
from jarvis.llm.types import (
    LLMRequest,
    LLMResponse,
    Message,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDone,
    ToolResultPart,
    ToolSpec,
)
from tests.fake_model import FakeModel, Reply, text_call
from tests.fake_model import fake_model_fixture as fake_model_fixture
from tests.llm_cases import run

FAST = RetryPolicy(max_retries=2, base_delay_s=0.001, max_delay_s=0.01, max_retry_after_s=0.01)
TOOLS = [
    ToolSpec(
        name="click",
        description="Click at a point.",
        parameters={
            "type": "object",
            "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
            "required": ["x", "y"],
        },
    ),
    ToolSpec(
        name="finished",
        description="Say the task is done.",
        parameters={"type": "object", "properties": {"summary": {"type": "string"}}},
    ),
]
Factory = Callable[[FakeModel, EventBus], AdapterBase]


def anthropic(fake: FakeModel, bus: EventBus) -> AdapterBase:
    return AnthropicProvider(
        "claude-haiku-4-5", api_key="k", base_url=fake.base_url, bus=bus, retry=FAST
    )


def openai(fake: FakeModel, bus: EventBus) -> AdapterBase:
    return OpenAIProvider("gpt-4o", api_key="k", base_url=fake.openai_base_url, bus=bus, retry=FAST)


PROVIDERS = pytest.mark.parametrize("make", [anthropic, openai], ids=["anthropic", "openai"])


def request(mode: str, *messages: Message, tools: list[ToolSpec] = TOOLS) -> LLMRequest:
    msgs = list(messages) or [Message.user("Press OK, then say you are done.")]
    return LLMRequest(system="You drive a desktop.", messages=msgs, tools=tools, tool_mode=mode)


def sent_tools(fake: FakeModel, i: int) -> list[str]:
    return fake.requests[i].tool_names


REPLY_TEXT = (
    "I see the OK button.\n"
    + text_call("click", x=412, y=300)
    + "\nThen I report.\n"
    + text_call("finished", summary="pressed <OK>")
)


@PROVIDERS
def test_text_mode_drives_tool_calls_end_to_end(make: Factory, fake_model: FakeModel) -> None:
    bus = EventBus()
    fake_model.script(Reply(text=REPLY_TEXT, text_chunk=3))
    events: list[StreamEvent] = []
    response = run(complete(make(fake_model, bus), request("text"), on_event=events.append))
    assert response.tool_mode == "text" and response.stop_reason == "tool_use"
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("click", {"x": 412, "y": 300}),
        ("finished", {"summary": "pressed <OK>"}),
    ]
    assert response.text == "I see the OK button.\n\nThen I report."
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert "tool_call" not in shown and shown.strip() == response.text
    assert [e.call for e in events if isinstance(e, ToolCallDone)] == response.tool_calls
    sent = fake_model.requests[0]
    assert sent.tools == []  # nothing native in text mode
    prompt = sent.all_text()
    assert "<tool_call>" in prompt and "## click" in prompt and "## finished" in prompt


@PROVIDERS
def test_text_mode_sends_tool_results_as_user_text(make: Factory, fake_model: FakeModel) -> None:
    call = ToolCall(id="call_7", name="click", arguments={"x": 1, "y": 2})
    history = [
        Message.user("task"),
        Message.assistant("Clicking.", [call]),
        Message(
            role="user",
            content=[ToolResultPart(call_id="call_7", name="click", ok=True, content="clicked")],
        ),
    ]
    fake_model.script(Reply(text="All good."))
    response = run(complete(make(fake_model, EventBus()), request("text", *history)))
    assert response.text == "All good." and response.tool_calls == []
    sent = fake_model.requests[0]
    flat = str(sent.body)
    assert "tool_result'" not in flat and "'tool'" not in flat and "tool_use'" not in flat
    assert "tool_calls" not in flat
    text = sent.all_text()
    assert '<tool_result name="click" call_id="call_7" ok="true">' in text
    assert '<tool_call>{"name": "click", "arguments": {"x": 1, "y": 2}}</tool_call>' in text


@PROVIDERS
def test_auto_mode_falls_back_for_this_run_only(
    make: Factory, fake_model: FakeModel, tmp_path: Path
) -> None:
    bus = EventBus()
    recorder = EventRecorder(bus)
    settings = load_settings(tmp_path, tool_mode="auto")
    fake_model.script(
        Reply.tools_unsupported(),
        Reply(text=text_call("click", x=5, y=6)),
        Reply(text=text_call("finished", summary="ok")),
    )
    provider = make(fake_model, bus)

    async def two_calls() -> tuple[LLMResponse, LLMResponse]:
        return (
            await complete(provider, request(settings.tool_mode)),
            await complete(provider, request(settings.tool_mode)),
        )

    first, second = run(two_calls())
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("click", {"x": 5, "y": 6})]
    assert first.tool_mode == "text" and second.tool_calls[0].name == "finished"
    assert sent_tools(fake_model, 0) == ["click", "finished"]  # native was tried first
    assert sent_tools(fake_model, 1) == [] and sent_tools(fake_model, 2) == []
    assert len(fake_model.requests) == 3  # the second call went straight to text mode
    (fallback,) = recorder.of(ToolModeFallback)
    assert "does not support tools" in fallback.reason
    assert recorder.of(ModelRetry) == []
    assert provider.text_fallback and settings.tool_mode == "auto"  # settings untouched
    # a new provider (a new run) tries native again
    fake_model.script(Reply(text="native again"))
    run(complete(make(fake_model, bus), request("auto")))
    assert sent_tools(fake_model, 3) == ["click", "finished"]


@PROVIDERS
def test_auto_mode_stays_native_when_tools_work(make: Factory, fake_model: FakeModel) -> None:
    bus = EventBus()
    recorder = EventRecorder(bus)
    fake_model.script(Reply(text="fine"))
    response = run(complete(make(fake_model, bus), request("auto")))
    assert response.tool_mode == "native"
    assert sent_tools(fake_model, 0) == ["click", "finished"]
    assert recorder.of(ToolModeFallback) == []


@PROVIDERS
def test_no_tools_with_tool_history_sends_history_as_text(
    make: Factory, fake_model: FakeModel
) -> None:
    """The wrap-up call offers no tools; tool blocks without tools would be rejected."""
    call = ToolCall(id="call_9", name="click", arguments={"x": 3, "y": 3})
    history = [
        Message.user("task"),
        Message.assistant("", [call]),
        Message(
            role="user",
            content=[ToolResultPart(call_id="call_9", name="click", ok=True, content="ok")],
        ),
    ]
    fake_model.script(Reply(text="Final answer: done."))
    response = run(complete(make(fake_model, EventBus()), request("native", *history, tools=[])))
    assert response.text == "Final answer: done." and response.tool_mode == "native"
    sent = fake_model.requests[0]
    assert sent.tools == [] and "tool_calls" not in str(sent.body)
    assert "<tool_result" in sent.all_text()


@PROVIDERS
def test_text_mode_without_tools_passes_text_through(make: Factory, fake_model: FakeModel) -> None:
    """A verify call in text mode: JSON in the answer is the answer, not a tool call."""
    answer = '{"name": "click", "arguments": {}, "done": true}'
    fake_model.script(Reply(text=answer, text_chunk=4))
    response = run(complete(make(fake_model, EventBus()), request("text", tools=[])))
    assert response.text == answer and response.tool_calls == []
    assert "<tool_call>" not in fake_model.requests[0].all_text()


def test_factory_passes_the_bus(
    fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_model.base_url)
    bus = EventBus()
    recorder = EventRecorder(bus)
    provider = make_provider(load_settings(tmp_path, model="claude-haiku-4-5"), bus, retry=FAST)
    fake_model.script(Reply.tools_unsupported(), Reply(text="ok"))
    assert run(complete(provider, request("auto"))).tool_mode == "text"
    assert len(recorder.of(ToolModeFallback)) == 1
