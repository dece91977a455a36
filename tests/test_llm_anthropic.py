"""AnthropicProvider with the real anthropic SDK against the loopback fake model."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from typing import Any

import pytest
from PIL import Image

from jarvis.events import EventBus, EventRecorder, ModelRetry
from jarvis.llm.anthropic import AnthropicProvider
from jarvis.llm.anthropic_wire import build_wire
from jarvis.llm.base import (
    ProviderAuthError,
    ProviderError,
    StreamInterrupted,
    ToolsUnsupported,
    complete,
)
from jarvis.llm.computer_tool import BETA_HEADER, computer_action_to_calls
from jarvis.llm.types import (
    ImagePart,
    LLMRequest,
    LLMResponse,
    Message,
    StreamEvent,
    TextDelta,
    TextPart,
    ToolArgsDelta,
    ToolCall,
    ToolCallDone,
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

KEY = "sk-ant-test-SECRET-4f2a9c"
CLICK = ToolSpec(
    name="click",
    description="Click at a point of the screenshot.",
    parameters={
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "required": ["x", "y"],
        "additionalProperties": False,
    },
)
FINISHED = ToolSpec(
    name="finished",
    description="The task is done.",
    parameters={"type": "object", "properties": {"summary": {"type": "string"}}},
)


def png(width: int, height: int) -> ImagePart:
    buf = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(buf, "PNG")
    return ImagePart.from_bytes(buf.getvalue(), "image/png")


def provider(fake: FakeModel, bus: EventBus | None = None, **kw: Any) -> AnthropicProvider:
    return AnthropicProvider(
        "claude-sonnet-4-6", api_key=KEY, base_url=fake.base_url, bus=bus, retry=FAST, **kw
    )


def test_streams_text_and_reports_usage(fake_model: FakeModel) -> None:
    fake_model.script(
        Reply(
            text="The screen shows a login form.",
            text_chunk=3,
            input_tokens=120,
            output_tokens=9,
            cache_read_tokens=800,
            cache_write_tokens=40,
        )
    )
    events: list[StreamEvent] = []
    response = run(complete(provider(fake_model), request(), on_event=events.append))
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 5 and "".join(deltas) == "The screen shows a login form."
    assert response.text == "The screen shows a login form."
    assert response.stop_reason == "end_turn"
    assert response.usage.model_dump() == {
        "input_tokens": 120,
        "output_tokens": 9,
        "cache_read_tokens": 800,
        "cache_write_tokens": 40,
    }
    sent = fake_model.requests[0]
    assert sent.stream and sent.body["model"] == "claude-sonnet-4-6"
    assert sent.header("authorization") == f"Bearer {KEY}"
    assert sent.header("x-stainless-retry-count") == "0"  # SDK retries are ours, not its own


def test_tool_calls_assembled_from_many_pieces(fake_model: FakeModel) -> None:
    args = {"x": 1234, "y": 567, "note": "a long value " * 5}
    fake_model.script(
        Reply(
            text="Clicking both.",
            tool_calls=[ToolUse("click", args), call("finished", summary="done")],
            args_chunk=2,
        )
    )
    events: list[StreamEvent] = []
    response = run(
        complete(provider(fake_model), request(tools=[CLICK, FINISHED]), on_event=events.append)
    )
    pieces = [e for e in events if isinstance(e, ToolArgsDelta)]
    assert len(pieces) > 30
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("click", args),
        ("finished", {"summary": "done"}),
    ]
    done = [e.call for e in events if isinstance(e, ToolCallDone)]
    assert done == response.tool_calls
    assert all(c.id.startswith("toolu_") and c.parse_error is None for c in done)
    assert response.stop_reason == "tool_use"


def test_garbage_tool_arguments_give_parse_error(fake_model: FakeModel) -> None:
    fake_model.script(Reply(tool_calls=[ToolUse("click", raw='{"x": 12, "y": ')]))
    response = run(complete(provider(fake_model), request(tools=[CLICK])))
    (bad,) = response.tool_calls
    assert bad.name == "click" and bad.arguments == {}
    assert bad.parse_error and "not valid JSON" in bad.parse_error


def test_request_wire_shape(fake_model: FakeModel) -> None:
    shot = png(64, 48)
    history = [
        Message.user("Open the file menu.", shot),
        Message.assistant(
            "Clicking File.", [ToolCall(id="toolu_a", name="click", arguments={"x": 3, "y": 4})]
        ),
        # results listed after text on purpose: the adapter must put them first
        Message(
            role="user",
            content=[
                TextPart(text="Step 2."),
                shot,
                ToolResultPart(call_id="toolu_a", name="click", ok=False, content="missed"),
            ],
        ),
    ]
    fake_model.script(Reply(text="ok"))
    run(complete(provider(fake_model), request(*history, tools=[CLICK, FINISHED])))
    body = fake_model.requests[0].body
    assert body["system"][0]["text"] == "You drive a desktop."
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert [t["name"] for t in body["tools"]] == ["click", "finished"]
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    first, assistant, last = body["messages"]
    assert first["content"][1]["type"] == "image"
    assert first["content"][1]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": shot.data_b64,
    }
    assert assistant["content"][1] == {
        "type": "tool_use",
        "id": "toolu_a",
        "name": "click",
        "input": {"x": 3, "y": 4},
    }
    assert [b["type"] for b in last["content"]] == ["tool_result", "text", "image"]
    assert last["content"][0]["tool_use_id"] == "toolu_a" and last["content"][0]["is_error"]
    # rolling breakpoints on the last two user messages; never more than four in all
    assert last["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert first["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert fake_model.requests[0].cache_markers() == 4
    assert fake_model.requests[0].image_count() == 2


@pytest.mark.parametrize(
    ("users", "tools", "system", "expected"),
    [(1, 0, True, 2), (3, 2, True, 4), (5, 0, True, 3), (5, 1, False, 3), (0, 1, True, 2)],
)
def test_cache_breakpoints_never_exceed_four(
    users: int, tools: int, system: bool, expected: int
) -> None:
    messages: list[Message] = []
    for i in range(users):
        messages += [Message.user(f"u{i}"), Message.assistant(f"a{i}")]
    req = LLMRequest(
        system="s" if system else "",
        messages=messages or [Message.assistant("hi")],
        tools=[CLICK, FINISHED][:tools],
    )
    params = build_wire(req, "m").params
    assert json.dumps(params).count("cache_control") == expected
    no_cache = build_wire(req.model_copy(update={"cache": False}), "m").params
    assert "cache_control" not in json.dumps(no_cache)


@pytest.mark.parametrize(
    ("reply", "retry_delay"),
    [
        (Reply.rate_limited(retry_after=1), 0.02),  # retry-after honoured, capped by the policy
        (Reply.overloaded(), None),
        (Reply.server_error(), None),
        (Reply(text="partial", cut_after=2), None),  # cut before any output: whole retry
        (Reply(text="x", error_after=2, error_type="overloaded_error"), None),
    ],
    ids=["429", "529", "500", "cut-early", "stream-error-event"],
)
def test_retryable_faults_recover(
    fake_model: FakeModel, reply: Reply, retry_delay: float | None
) -> None:
    check_recovers_after_one_retry(fake_model, provider, reply, retry_delay)


def test_gives_up_after_max_retries(fake_model: FakeModel) -> None:
    bus = EventBus()
    recorder = EventRecorder(bus)
    fake_model.set_default(Reply.overloaded())
    with pytest.raises(ProviderError) as info:
        run(complete(provider(fake_model, bus), request()))
    assert "529" in str(info.value) and info.value.retryable
    assert len(fake_model.requests) == FAST.max_retries + 1
    assert [r.attempt for r in recorder.of(ModelRetry)] == [1, 2, 3]


def test_cut_after_output_is_a_clear_error_not_a_hang(fake_model: FakeModel) -> None:
    check_cut_after_output_is_not_retried(
        fake_model, provider, Reply(text="I will now click the button", text_chunk=2, cut_after=6)
    )


def test_bad_request_is_not_retried(fake_model: FakeModel) -> None:
    fake_model.script(Reply.error(400, "messages: roles must alternate"))
    with pytest.raises(ProviderError) as info:
        run(complete(provider(fake_model), request(tools=[CLICK])))
    assert not isinstance(info.value, ToolsUnsupported)
    assert "roles must alternate" in str(info.value) and not info.value.retryable
    assert len(fake_model.requests) == 1


def test_missing_key_names_the_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with pytest.raises(ProviderAuthError, match="ANTHROPIC_API_KEY"):
        AnthropicProvider("claude-sonnet-4-6")


def test_env_key_and_base_url_are_used(
    fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_model.base_url)
    fake_model.script(Reply(text="hi"))
    p = AnthropicProvider("claude-haiku-4-5", retry=FAST)
    assert run(complete(p, request())).text == "hi"
    assert fake_model.requests[0].header("authorization") == f"Bearer {KEY}"


def test_key_never_in_logs_or_errors(
    fake_model: FakeModel, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    bus = EventBus()
    recorder = EventRecorder(bus)
    fake_model.script(Reply.unauthorized())
    with pytest.raises(ProviderAuthError) as auth:
        run(complete(provider(fake_model, bus), request()))
    assert "ANTHROPIC_API_KEY" in str(auth.value)
    fake_model.script(Reply.server_error(), Reply(text="abc", cut_after=5, text_chunk=1))
    with pytest.raises(StreamInterrupted) as cut:
        run(complete(provider(fake_model, bus), request()))
    texts = [caplog.text, str(auth.value), repr(auth.value), str(cut.value), repr(cut.value)]
    texts += [e.model_dump_json() for e in recorder.events]
    assert caplog.text  # the retry was logged, so the check below looked at something
    assert not [t for t in texts if KEY in t]


# --- Claude's native computer tool --------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ({"action": "left_click", "coordinate": [10, 20]}, [("click", {"x": 10, "y": 20})]),
        ({"action": "right_click", "coordinate": [1, 2]}, [("right_click", {"x": 1, "y": 2})]),
        ({"action": "double_click", "coordinate": [5, 6]}, [("double_click", {"x": 5, "y": 6})]),
        ({"action": "mouse_move", "coordinate": [7.6, 8.2]}, [("mouse_move", {"x": 8, "y": 8})]),
        (
            {"action": "left_click_drag", "start_coordinate": [1, 2], "coordinate": [30, 40]},
            [("drag", {"startX": 1, "startY": 2, "endX": 30, "endY": 40})],
        ),
        ({"action": "type", "text": "héllo <b>"}, [("type", {"text": "héllo <b>"})]),
        ({"action": "key", "text": "ctrl+s"}, [("hotkey", {"keys": "ctrl+s"})]),
        ({"action": "key", "text": "Return"}, [("press_key", {"key": "Return"})]),
        (
            {"action": "key", "text": "ctrl+a Delete"},
            [("hotkey", {"keys": "ctrl+a"}), ("press_key", {"key": "Delete"})],
        ),
        (
            {
                "action": "scroll",
                "coordinate": [100, 200],
                "scroll_direction": "up",
                "scroll_amount": 5,
            },
            [("scroll", {"x": 100, "y": 200, "direction": "up", "amount": 5})],
        ),
        ({"action": "wait", "duration": 1.5}, [("wait", {"ms": 1500})]),
        ({"action": "screenshot"}, [("screenshot", {})]),
    ],
)
def test_computer_actions_map_to_our_tools(
    action: dict[str, Any], expected: list[tuple[str, dict[str, Any]]]
) -> None:
    calls = computer_action_to_calls(action, "toolu_9")
    assert [(c.name, c.arguments) for c in calls] == expected
    assert all(c.parse_error is None for c in calls)
    assert all(c.origin == {"id": "toolu_9", "name": "computer", "input": action} for c in calls)
    assert len({c.id for c in calls}) == len(calls)


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ({"action": "triple_click", "coordinate": [1, 2]}, "not supported"),
        ({"action": "left_click"}, "coordinate"),
        ({"action": "left_click", "coordinate": [1, 2], "text": "shift"}, "holding keys"),
        ({"action": "left_click_drag", "coordinate": [1, 2]}, "start_coordinate"),
        ({"action": "key", "text": ""}, "key needs text"),
        ({"action": "wait", "duration": "soon"}, "could not convert"),
        ({}, "not supported"),
    ],
)
def test_unmappable_computer_actions_are_parse_errors(action: dict[str, Any], message: str) -> None:
    (bad,) = computer_action_to_calls(action, "toolu_x")
    assert bad.parse_error is not None and message in bad.parse_error
    assert bad.id == "toolu_x"


def test_native_computer_tool_round_trip(fake_model: FakeModel) -> None:
    shot = png(80, 50)
    fake_model.script(
        Reply(
            tool_calls=[
                ToolUse("computer", {"action": "key", "text": "ctrl+a BackSpace"}, id="toolu_k")
            ]
        ),
        Reply(text="done"),
    )
    # the older tool version, by the override (Sonnet 4.6 takes computer_20251124 by default)
    p = provider(fake_model, native_computer_tool=True, computer_tool_version="computer_20250124")
    first = request(Message.user("Clear the box.", shot), tools=[CLICK, FINISHED])

    async def two_turns() -> tuple[LLMResponse, LLMResponse]:
        response = await complete(p, first)
        results = [
            ToolResultPart(call_id=c.id, name=c.name, ok=True, content=f"{c.name} ok")
            for c in response.tool_calls
        ]
        follow = request(
            first.messages[0],
            Message.assistant(response.text, response.tool_calls),
            Message(role="user", content=[*results, TextPart(text="next")]),
            tools=[CLICK, FINISHED],
        )
        return response, await complete(p, follow)

    response, second = run(two_turns())
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("hotkey", {"keys": "ctrl+a"}),
        ("press_key", {"key": "BackSpace"}),
    ]
    sent = fake_model.requests[0]
    assert sent.header("anthropic-beta") == BETA_HEADER
    assert sent.tools[0] == {
        "type": "computer_20250124",
        "name": "computer",
        "display_width_px": 80,
        "display_height_px": 50,
    }
    assert sent.tool_names == ["computer", "finished"]
    assert second.text == "done"
    _, assistant, user = fake_model.requests[1].messages
    assert assistant["content"] == [
        {
            "type": "tool_use",
            "id": "toolu_k",
            "name": "computer",
            "input": {"action": "key", "text": "ctrl+a BackSpace"},
        }
    ]
    result = user["content"][0]
    assert result["tool_use_id"] == "toolu_k" and result["content"] == "hotkey ok\npress_key ok"
    assert result["is_error"] is False


def test_cancel_stops_the_stream(fake_model: FakeModel) -> None:
    fake_model.script(Reply(text="word " * 200, text_chunk=5, delay_s=0.02))

    async def scenario() -> bool:
        first = asyncio.Event()
        task = asyncio.create_task(
            complete(provider(fake_model), request(), on_event=lambda e: first.set())
        )
        await first.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return task.cancelled()

    assert run(scenario())


def test_calls_without_results_get_a_skipped_result() -> None:
    """The API rejects a tool_use without a tool_result; calls never run get one."""
    calls = [ToolCall(id="t1", name="click", arguments={}), ToolCall(id="t2", name="wait")]
    req = request(
        Message.user("go"),
        Message.assistant("two calls", calls),
        Message(
            role="user",
            content=[ToolResultPart(call_id="t2", name="wait", ok=True, content="waited")],
        ),
        tools=[CLICK],
    )
    user = build_wire(req, "m").params["messages"][2]["content"]
    assert [(b["tool_use_id"], b["is_error"]) for b in user] == [("t1", True), ("t2", False)]


def test_fake_model_also_answers_without_streaming(fake_model: FakeModel) -> None:
    """Other parts may call the SDK without streaming; the fake speaks that too."""
    import anthropic

    fake_model.script(Reply(text="plain", tool_calls=[call("click", x=1, y=2)], output_tokens=3))

    async def ask() -> Any:
        client = anthropic.AsyncAnthropic(api_key=KEY, base_url=fake_model.base_url)
        try:
            return await client.messages.create(
                model="claude-haiku-4-5",
                max_tokens=64,
                messages=[{"role": "user", "content": "hi"}],
            )
        finally:
            await client.close()

    message = run(ask())
    assert [b.type for b in message.content] == ["text", "tool_use"]
    assert message.content[1].input == {"x": 1, "y": 2}
    assert message.stop_reason == "tool_use" and message.usage.output_tokens == 3
    assert not fake_model.requests[0].stream
