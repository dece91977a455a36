"""OpenAIProvider with the real openai SDK against the loopback fake model."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from jarvis.config import load_settings
from jarvis.events import EventBus, EventRecorder, ModelRetry
from jarvis.llm.anthropic import AnthropicProvider
from jarvis.llm.base import (
    ProviderAuthError,
    ProviderError,
    StreamInterrupted,
    ToolsUnsupported,
    complete,
)
from jarvis.llm.factory import make_provider
from jarvis.llm.openai import ChunkAssembler, OpenAIProvider, to_openai_messages
from jarvis.llm.types import (
    ImagePart,
    Message,
    StreamEvent,
    TextDelta,
    TextPart,
    ToolArgsDelta,
    ToolCall,
    ToolCallDone,
    ToolCallStart,
    ToolResultPart,
    ToolSpec,
)
from tests.fake_model import FakeModel, Reply, ToolUse, call
from tests.fake_model import fake_model_fixture as fake_model_fixture
from tests.llm_cases import (
    FAST,
    check_cut_after_output_is_not_retried,
    check_recovers_after_one_retry,
    request,
    run,
)

KEY = "sk-proj-test-SECRET-77b1e0"
CLICK = ToolSpec(
    name="click",
    description="Click at a point of the screenshot.",
    parameters={
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "required": ["x", "y"],
    },
)
TYPE = ToolSpec(
    name="type",
    description="Type text.",
    parameters={"type": "object", "properties": {"text": {"type": "string"}}},
)


def jpeg() -> ImagePart:
    buf = io.BytesIO()
    Image.new("RGB", (32, 24), (10, 120, 200)).save(buf, "JPEG")
    return ImagePart.from_bytes(buf.getvalue(), "image/jpeg")


def provider(fake: FakeModel, bus: EventBus | None = None, **kw: Any) -> OpenAIProvider:
    return OpenAIProvider(
        "gpt-4.1", api_key=KEY, base_url=fake.openai_base_url, bus=bus, retry=FAST, **kw
    )


def test_streams_text_and_reports_usage(fake_model: FakeModel) -> None:
    fake_model.script(
        Reply(
            text="A terminal window is open.",
            text_chunk=2,
            input_tokens=300,
            output_tokens=11,
            cache_read_tokens=1024,
        )
    )
    events: list[StreamEvent] = []
    response = run(complete(provider(fake_model), request(), on_event=events.append))
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 5 and "".join(deltas) == response.text == "A terminal window is open."
    assert response.stop_reason == "end_turn"
    assert response.model == "gpt-4.1"
    # prompt_tokens (1324) includes the cached ones; ours counts them apart
    assert response.usage.model_dump() == {
        "input_tokens": 300,
        "output_tokens": 11,
        "cache_read_tokens": 1024,
        "cache_write_tokens": 0,
    }
    sent = fake_model.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.body["stream"] is True
    assert sent.body["stream_options"] == {"include_usage": True}
    assert sent.body["max_tokens"] == 4096  # a compatible endpoint: the widely known name
    assert sent.header("authorization") == f"Bearer {KEY}"


def test_several_tool_calls_in_many_pieces(fake_model: FakeModel) -> None:
    fake_model.script(
        Reply(
            text="Typing, then clicking.",
            tool_calls=[call("type", text="naïve <café> " * 4), call("click", x=640, y=360)],
            args_chunk=3,
        )
    )
    events: list[StreamEvent] = []
    response = run(
        complete(provider(fake_model), request(tools=[CLICK, TYPE]), on_event=events.append)
    )
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("type", {"text": "naïve <café> " * 4}),
        ("click", {"x": 640, "y": 360}),
    ]
    assert response.stop_reason == "tool_use"
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    assert [s.id for s in starts] == [c.id for c in response.tool_calls]
    pieces = [e for e in events if isinstance(e, ToolArgsDelta)]
    assert len(pieces) > 20
    for c in response.tool_calls:
        joined = "".join(p.delta for p in pieces if p.id == c.id)
        assert json.loads(joined) == c.arguments
    assert [e.call for e in events if isinstance(e, ToolCallDone)] == response.tool_calls
    sent = fake_model.requests[0].body
    assert [t["function"]["name"] for t in sent["tools"]] == ["click", "type"]
    assert sent["tools"][0]["type"] == "function"


def test_assembler_handles_index_reuse_and_missing_ids() -> None:
    """Some compatible servers give every call index 0, or no id at all."""

    def chunk(*tool_calls: dict[str, Any], finish: str | None = None) -> Any:
        from openai.types.chat import ChatCompletionChunk

        delta: dict[str, Any] = {"tool_calls": list(tool_calls)} if tool_calls else {}
        return ChatCompletionChunk.model_validate(
            {
                "id": "c",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        )

    assembler = ChunkAssembler()
    for piece in [
        chunk({"index": 0, "id": "a", "function": {"name": "click", "arguments": '{"x"'}}),
        chunk({"index": 0, "function": {"arguments": ": 1}"}}),
        chunk({"index": 0, "id": "b", "function": {"name": "wait", "arguments": "{}"}}),
        chunk({"index": 1, "function": {"name": "screenshot", "arguments": ""}}),
        chunk(finish="tool_calls"),
    ]:
        assembler.handle(piece)
    assembler.finish()
    calls = assembler.response().tool_calls
    assert [(c.id[:5], c.name, c.arguments) for c in calls] == [
        ("a", "click", {"x": 1}),
        ("b", "wait", {}),
        ("call_", "screenshot", {}),
    ]


def test_garbage_tool_arguments_give_parse_error(fake_model: FakeModel) -> None:
    fake_model.script(Reply(tool_calls=[ToolUse("click", raw='{"x": 1,, "y": 2}')]))
    response = run(complete(provider(fake_model), request(tools=[CLICK])))
    (bad,) = response.tool_calls
    assert bad.name == "click" and bad.arguments == {}
    assert bad.parse_error and "not valid JSON" in bad.parse_error


def test_request_wire_shape(fake_model: FakeModel) -> None:
    shot = jpeg()
    history = [
        Message.user("Open the menu.", shot),
        Message.assistant(
            "",
            [
                ToolCall(id="call_1", name="click", arguments={"x": 3, "y": 4}),
                ToolCall(id="call_2", name="type", arguments={"text": "hi"}),
            ],
        ),
        Message(
            role="user",
            content=[
                TextPart(text="Step 2."),
                ToolResultPart(call_id="call_1", name="click", ok=True, content='{"ok": true}'),
                shot,
                ToolResultPart(call_id="call_2", name="type", ok=False, content="no focus"),
            ],
        ),
    ]
    fake_model.script(Reply(text="ok"))
    run(complete(provider(fake_model), request(*history, tools=[CLICK, TYPE], temperature=0.2)))
    sent = fake_model.requests[0]
    system, first, assistant, tool1, tool2, last = sent.messages
    assert system == {"role": "system", "content": "You drive a desktop."}
    assert first["content"][1] == {"type": "image_url", "image_url": {"url": shot.data_url}}
    assert shot.data_url.startswith("data:image/jpeg;base64,")
    assert assistant["content"] is None
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["click", "type"]
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"x": 3, "y": 4}
    assert tool1 == {"role": "tool", "tool_call_id": "call_1", "content": '{"ok": true}'}
    assert tool2 == {"role": "tool", "tool_call_id": "call_2", "content": "ERROR: no focus"}
    assert last["role"] == "user" and [p["type"] for p in last["content"]] == ["text", "image_url"]
    assert sent.image_count() == 2
    assert sent.body["temperature"] == 0.2


def test_official_endpoint_uses_max_completion_tokens() -> None:
    p = OpenAIProvider("gpt-4.1", api_key=KEY, base_url="https://api.openai.com/v1")
    assert p.max_tokens_key == "max_completion_tokens"


@pytest.mark.parametrize(
    ("reply", "retry_delay"),
    [
        (Reply.rate_limited(retry_after=7), 0.02),  # retry-after honoured, capped by the policy
        (Reply.error(503, "upstream unavailable"), None),
        (Reply.server_error(), None),
        (Reply(text="partial", cut_after=1), None),  # cut before any output: whole retry
        (Reply(text="x", error_after=1, error_type="server_error"), None),
    ],
    ids=["429", "503", "500", "cut-early", "stream-error-object"],
)
def test_retryable_faults_recover(
    fake_model: FakeModel, reply: Reply, retry_delay: float | None
) -> None:
    check_recovers_after_one_retry(fake_model, provider, reply, retry_delay)


def test_gives_up_after_max_retries(fake_model: FakeModel) -> None:
    bus = EventBus()
    recorder = EventRecorder(bus)
    fake_model.set_default(Reply.server_error())
    with pytest.raises(ProviderError) as info:
        run(complete(provider(fake_model, bus), request()))
    assert "500" in str(info.value) and info.value.retryable
    assert len(fake_model.requests) == FAST.max_retries + 1
    assert len(recorder.of(ModelRetry)) == FAST.max_retries


def test_cut_after_output_is_a_clear_error_not_a_hang(fake_model: FakeModel) -> None:
    check_cut_after_output_is_not_retried(
        fake_model, provider, Reply(text="Now I open the browser", text_chunk=2, cut_after=5)
    )


def test_tools_rejected_in_native_mode_is_an_error(fake_model: FakeModel) -> None:
    fake_model.script(Reply.tools_unsupported())
    with pytest.raises(ToolsUnsupported, match="does not support tools"):
        run(complete(provider(fake_model), request(tools=[CLICK], tool_mode="native")))
    assert len(fake_model.requests) == 1


def test_missing_key_names_the_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ProviderAuthError, match="OPENAI_API_KEY"):
        OpenAIProvider("gpt-4.1")


def test_factory_builds_from_settings(
    fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_model.openai_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    settings = load_settings(tmp_path, provider="openai", openai_model="gpt-4o-mini", max_retries=2)
    p = make_provider(settings)
    assert isinstance(p, OpenAIProvider) and p.model == "gpt-4o-mini"
    assert p.retry.max_retries == 2
    fake_model.script(Reply(text="hello"))
    assert run(complete(p, request())).text == "hello"
    assert fake_model.requests[0].body["model"] == "gpt-4o-mini"
    anthropic = make_provider(load_settings(tmp_path, native_computer_tool=True))
    assert isinstance(anthropic, AnthropicProvider) and anthropic.native_computer_tool
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with pytest.raises(ProviderAuthError, match="ANTHROPIC_API_KEY"):
        make_provider(load_settings(tmp_path))


def test_key_never_in_logs_or_errors(
    fake_model: FakeModel, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake_model.script(Reply.unauthorized())
    with pytest.raises(ProviderAuthError) as auth:
        run(complete(provider(fake_model), request()))
    assert "OPENAI_API_KEY" in str(auth.value)
    fake_model.script(Reply.rate_limited(), Reply(text="abc", cut_after=3, text_chunk=1))
    with pytest.raises(StreamInterrupted) as cut:
        run(complete(provider(fake_model), request()))
    assert caplog.text
    texts = [caplog.text, str(auth.value), repr(auth.value), str(cut.value), repr(cut.value)]
    assert not [t for t in texts if KEY in t]


def test_calls_without_results_get_a_skipped_tool_message() -> None:
    calls = [ToolCall(id="c1", name="click"), ToolCall(id="c2", name="type")]
    messages = to_openai_messages(
        "sys",
        [
            Message.user("go"),
            Message.assistant("", calls),
            Message(
                role="user",
                content=[
                    ToolResultPart(call_id="c2", name="type", ok=True, content="typed"),
                    TextPart(text="next step"),
                ],
            ),
        ],
    )
    roles = [(m["role"], m.get("tool_call_id")) for m in messages]
    assert roles == [
        ("system", None),
        ("user", None),
        ("assistant", None),
        ("tool", "c2"),
        ("tool", "c1"),
        ("user", None),
    ]
    assert messages[4]["content"].startswith("not run")


def test_fake_model_also_answers_without_streaming(fake_model: FakeModel) -> None:
    import openai

    fake_model.script(
        Reply(text="plain", tool_calls=[call("click", x=1, y=2)], cache_read_tokens=5)
    )

    async def ask() -> Any:
        client = openai.AsyncOpenAI(api_key=KEY, base_url=fake_model.openai_base_url)
        try:
            return await client.chat.completions.create(
                model="gpt-4.1", messages=[{"role": "user", "content": "hi"}]
            )
        finally:
            await client.close()

    completion = run(ask())
    choice = completion.choices[0]
    assert choice.message.content == "plain" and choice.finish_reason == "tool_calls"
    assert json.loads(choice.message.tool_calls[0].function.arguments) == {"x": 1, "y": 2}
    assert completion.usage.prompt_tokens_details.cached_tokens == 5
    assert not fake_model.requests[0].stream
