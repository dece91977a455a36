"""Served open models: tool calls read from the reply itself (native, ``<tool_call>`` JSON,
Qwen's XML form, the reasoning only when the answer has none), never ``tool_choice:
"required"``, and the server named in the run report. Pure tables for the reading, then
the real openai SDK against loopback servers in vLLM's, SGLang's and llama.cpp's shapes
(:mod:`tests.serving_shapes`)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from jarvis.events import Event, EventBus, ModelServer, ServedCallsRead, TaskFinished, TaskStarted
from jarvis.geometry import Size
from jarvis.llm.base import ProviderError, complete
from jarvis.llm.openai import OpenAIProvider
from jarvis.llm.profiles import qwen_tool
from jarvis.llm.profiles.adapter import ProfileProvider
from jarvis.llm.profiles.catalog import profile_by_name
from jarvis.llm.profiles.grammar_text import clean_reply, strip_reasoning
from jarvis.llm.retry import RetryPolicy
from jarvis.llm.served_calls import served_reply, split_reasoning, tools_switched_off, xml_calls
from jarvis.llm.server_id import ServerInfo, from_headers, root_url
from jarvis.llm.types import ImagePart, LLMRequest, Message, TextPart, ToolCall, ToolSpec
from jarvis.runs.journal import JournalWriter
from jarvis.runs.report import render
from jarvis.runs.run_info import RunInfo
from tests import serving_shapes as shapes
from tests.agent_harness import TEST_KEY
from tests.serving_shapes import ServingServer

TOOL = qwen_tool.tool_spec("Coordinates are relative: 0..1000.")
CLICK = ToolSpec(
    name="click",
    description="click",
    parameters={"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"},
                "text": {"type": "string"}}},
)  # fmt: skip
XML = (
    "<tool_call>\n<function=computer_use>\n<parameter=action>\nleft_click\n</parameter>\n"
    "<parameter=coordinate>\n[612, 405]\n</parameter>\n</function>\n</tool_call>"
)
JSON = '<tool_call>{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [7, 8]}}</tool_call>'  # noqa: E501
DRAFT = XML.replace("612, 405", "1, 1")


def _args(calls: list[ToolCall]) -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, c.arguments) for c in calls]


READ = [
    ("json block in the answer", f"Clicking OK.\n{JSON}", "", "text",
     [("computer_use", {"action": "left_click", "coordinate": [7, 8]})]),
    ("xml block in the answer", f"Clicking OK.\n{XML}", "", "text",
     [("computer_use", {"action": "left_click", "coordinate": [612, 405]})]),
    ("xml block cut at the stop token", XML.removesuffix("</tool_call>"), "", "text",
     [("computer_use", {"action": "left_click", "coordinate": [612, 405]})]),
    ("xml function without the tool_call tag",
     "<function=computer_use><parameter=action>left_click</parameter></function>", "", "text",
     [("computer_use", {"action": "left_click"})]),
    ("the answer's call wins over the reasoning's", f"<think>{DRAFT}</think>{XML}", "", "text",
     [("computer_use", {"action": "left_click", "coordinate": [612, 405]})]),
    ("only inside <think>", f"<think>The red one.\n{XML}</think>", "", "reasoning",
     [("computer_use", {"action": "left_click", "coordinate": [612, 405]})]),
    ("only inside an unopened think", f"The red one.\n{XML}\n</think>\n\n", "", "reasoning",
     [("computer_use", {"action": "left_click", "coordinate": [612, 405]})]),
    ("only in the reasoning field", "\n\n", f"The red one.\n{XML}", "reasoning",
     [("computer_use", {"action": "left_click", "coordinate": [612, 405]})]),
    ("reasoning field ignored when the answer has one", JSON, DRAFT, "text",
     [("computer_use", {"action": "left_click", "coordinate": [7, 8]})]),
    ("no call anywhere", "<think>hmm</think>I cannot see it.", "still hmm", "", []),
]  # fmt: skip


@pytest.mark.parametrize(("content", "reasoning", "where", "calls"),
                         [c[1:] for c in READ], ids=[c[0] for c in READ])  # fmt: skip
def test_where_a_served_call_is_read(
    content: str, reasoning: str, where: str, calls: list[tuple[str, dict[str, Any]]]
) -> None:
    reply = served_reply(content, reasoning, [], [TOOL])
    assert reply.where == where
    assert _args(reply.calls) == calls
    if calls:
        assert "<tool_call>" not in reply.text and "<function=" not in reply.text


def test_native_calls_are_taken_as_they_are() -> None:
    native = [ToolCall(id="c1", name="computer_use", arguments={"action": "wait"})]
    reply = served_reply(f"<think>{XML}</think>", XML, native, [TOOL])
    assert reply.where == "native" and reply.calls == native


def test_xml_values_follow_the_tools_schema() -> None:
    text = (
        "<tool_call><function=click><parameter=x>12</parameter><parameter=y>\n34\n"
        "</parameter><parameter=text>42</parameter></function></tool_call>"
    )
    rest, calls = xml_calls(text, [CLICK])
    assert _args(calls) == [("click", {"x": 12, "y": 34, "text": "42"})]  # a string stays one
    assert rest.strip() == ""
    _, untyped = xml_calls(text)
    assert untyped[0].arguments["text"] == 42  # with no schema, text that reads as JSON is JSON


def test_a_nameless_xml_function_is_a_parse_error_not_a_crash() -> None:
    _, calls = xml_calls("<tool_call><function=><parameter=a>1</parameter></function></tool_call>")
    assert len(calls) == 1 and calls[0].parse_error == "no function name"


@pytest.mark.parametrize(
    ("text", "answer", "reasoning"),
    [
        ("<think>a</think>b", "b", "a"),
        ("a</think>b", "b", "a"),
        ("<think>a", "", "a"),
        ("plain", "plain", ""),
        ("<think>a</think>b<think>c</think>", "b", "a\nc"),
    ],
)
def test_split_reasoning(text: str, answer: str, reasoning: str) -> None:
    assert split_reasoning(text) == (answer, reasoning)


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("<think>click(1,1)</think>click(2,2)", "click(2,2)"),  # the answer's action, not the draft
        ("<think>Thought: OK\nAction: click(3,4)</think>", "Thought: OK\nAction: click(3,4)"),
        ("Thought: hm\nAction: click(3,4)\n</think>\n", "Thought: hm\nAction: click(3,4)"),
        ("<think>(10,20)</think>no idea", "no idea"),
        ("<think>a</think><think>b</think>  ", "b"),
    ],
)
def test_reasoning_is_read_only_when_the_answer_is_empty(text: str, read: str) -> None:
    assert strip_reasoning(text).strip() == read
    assert clean_reply(text.replace(",", "，")).strip() == read  # full-width still undone


def test_qwen_arguments_left_as_text_by_the_server_are_read() -> None:
    call = ToolCall(id="c", name="computer_use",
                    arguments={"action": "left_click", "coordinate": "[500, 250]"})  # fmt: skip
    keys = ToolCall(id="k", name="computer_use", arguments={"action": "key", "keys": "ctrl+c"})
    out = qwen_tool.calls_from([call, keys], lambda v: (int(v[0]), int(v[1])), Size(1000, 1000))
    assert _args(out) == [("click", {"x": 500, "y": 250}), ("hotkey", {"keys": "ctrl+c"})]


@pytest.mark.parametrize(
    ("url", "root"),
    [
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000"),
        ("http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000"),
        ("https://gpu.example/qwen/v1", "https://gpu.example/qwen"),
    ],
)
def test_root_url(url: str, root: str) -> None:
    assert root_url(url) == root


def test_headers_name_a_server_when_no_probe_answers() -> None:
    assert from_headers({"Server": "llama.cpp"}) == ServerInfo("llama.cpp", "")
    assert from_headers({"x-inference-version": "2.1", "server": "tgi"}) == ServerInfo("tgi", "2.1")
    assert from_headers({}) == ServerInfo("unknown", "")


# --- through the real SDK ---------------------------------------------------------------


def _request(tools: list[ToolSpec]) -> LLMRequest:
    picture = shapes_picture()
    return LLMRequest(
        system="You operate a desktop.",
        messages=[Message(role="user", content=[picture, TextPart(text="Click OK.")])],
        tools=tools,
        max_tokens=256,
    )


def shapes_picture() -> ImagePart:
    from jarvis.calibrate.serving import serving_picture
    from jarvis.desktop.screen import encode_image

    return ImagePart.from_bytes(encode_image(serving_picture(), "png"), "image/png")


def _provider(server: ServingServer, bus: EventBus, served: bool = True) -> OpenAIProvider:
    return OpenAIProvider(
        "Qwen3-VL-8B-Instruct", served=served, api_key=TEST_KEY, base_url=server.base_url,
        bus=bus, timeout_s=10,
    )  # fmt: skip


async def _ask(shape: shapes.Shape, tools: list[ToolSpec], served: bool = True) -> Any:
    bus, seen = EventBus(), []
    bus.subscribe(seen.append)
    with ServingServer(shape) as server:
        provider = _provider(server, bus, served)
        try:
            response = await complete(provider, _request(tools))
        finally:
            await provider.aclose()
    return response, seen, server


def test_a_call_vllm_left_in_the_reasoning_field_is_run() -> None:
    response, seen, server = asyncio.run(_ask(shapes.VLLM_XML_THINK, [TOOL]))
    assert [c.name for c in response.tool_calls] == ["computer_use"]
    x, y = response.tool_calls[0].arguments["coordinate"]
    assert abs(x - 620) <= 3 and abs(y - 410) <= 3  # the circle, on 0..1000
    assert response.stop_reason == "tool_use"
    kinds = [(type(e), getattr(e, "where", None) or getattr(e, "server", None)) for e in seen]
    assert (ServedCallsRead, "reasoning") in kinds and (ModelServer, "vLLM 0.19.0") in kinds
    assert len(server.requests) == 1 and "tool_choice" not in server.requests[0]
    assert server.gets[-1] == "/version"


def test_without_served_the_same_reply_has_no_call() -> None:
    response, seen, server = asyncio.run(_ask(shapes.VLLM_XML_THINK, [TOOL], served=False))
    assert response.tool_calls == []  # what the server's parser gave: nothing
    assert not any(isinstance(e, ModelServer | ServedCallsRead) for e in seen)
    assert server.gets == []


def test_native_calls_streamed_in_vllm_pieces() -> None:
    response, seen, _ = asyncio.run(_ask(shapes.VLLM_HERMES, [TOOL]))
    assert [c.name for c in response.tool_calls] == ["computer_use"]
    assert response.tool_calls[0].arguments["action"] == "left_click"
    assert not any(isinstance(e, ServedCallsRead) for e in seen)


def test_sglang_reasoning_content_stays_out_of_the_text() -> None:
    response, seen, _ = asyncio.run(_ask(shapes.SGLANG_PLAIN, [TOOL]))
    assert [c.name for c in response.tool_calls] == ["computer_use"]
    assert "The red circle says OK." not in response.text and "<tool_call>" not in response.text
    assert any(isinstance(e, ServedCallsRead) and e.where == "text" for e in seen)
    assert any(isinstance(e, ModelServer) and e.server == "SGLang 0.5.3" for e in seen)


def test_llama_cpp_without_jinja_gets_the_calls_as_text() -> None:
    response, seen, server = asyncio.run(_ask(shapes.LLAMA_NO_JINJA, [TOOL]))
    assert [c.name for c in response.tool_calls] == ["computer_use"]
    assert [bool(b.get("tools")) for b in server.requests] == [True, False]
    assert any(isinstance(e, ModelServer) and e.server == "llama.cpp b6710-74b8fc17" for e in seen)


def test_llama_cpp_without_jinja_fails_plainly_when_not_served() -> None:
    async def ask() -> None:
        with ServingServer(shapes.LLAMA_NO_JINJA) as server:
            provider = OpenAIProvider(
                "m", api_key=TEST_KEY, base_url=server.base_url, retry=RetryPolicy(max_retries=0)
            )
            try:
                await complete(provider, _request([TOOL]))
            finally:
                await provider.aclose()

    with pytest.raises(ProviderError, match="requires --jinja"):
        asyncio.run(ask())


def test_a_served_profile_never_sends_tool_choice_required() -> None:
    with pytest.raises(ValueError, match="never sends tool_choice=required"):
        OpenAIProvider("m", served=True, tool_choice="required", api_key=TEST_KEY)


def test_the_qwen_profile_maps_a_call_read_from_the_reasoning() -> None:
    async def ask() -> Any:
        bus = EventBus()
        with ServingServer(shapes.VLLM_XML_THINK) as server:
            inner = _provider(server, bus)
            provider = ProfileProvider(inner, profile_by_name("qwen3-vl"))
            try:
                return await complete(provider, _request([CLICK]))
            finally:
                await provider.aclose()

    response = asyncio.run(ask())
    assert [c.name for c in response.tool_calls] == ["click"]
    assert response.tool_calls[0].origin["name"] == "computer_use"


def test_the_server_goes_into_run_json_and_the_report(tmp_path: Path) -> None:
    bus = EventBus()
    writer = JournalWriter(tmp_path, bus, provider="openai", model="Qwen3-VL-8B-Instruct")
    events: list[Event] = [
        TaskStarted(task_id="T1", task="click OK"),
        ModelServer(server="vLLM 0.19.0"),
        TaskFinished(task_id="T1", status="finished", summary="done"),
    ]
    for event in events:
        bus.emit(event)
    folder = writer.folder("T1")
    writer.close()
    assert folder is not None
    info = RunInfo.load(folder)
    assert info.server == "vLLM 0.19.0"
    assert json.loads((folder / "run.json").read_text())["server"] == "vLLM 0.19.0"
    assert "vLLM 0.19.0" in render(folder, tmp_path)


def test_without_a_version_endpoint_the_headers_name_the_server() -> None:
    shape = shapes.Shape(
        "proxy", {}, {"Server": "inference-gateway/2.4", "x-backend-version": "0.19.0"},
        shapes.VLLM_HERMES.answer,
    )  # fmt: skip
    response, seen, server = asyncio.run(_ask(shape, [TOOL]))
    assert [c.name for c in response.tool_calls] == ["computer_use"]
    named = [e.server for e in seen if isinstance(e, ModelServer)]
    assert named == ["inference-gateway 0.19.0"]  # the x-...-version header wins over the /2.4
    assert set(server.gets) == {"/get_server_info", "/server_info", "/version", "/props",
                                "/api/version"}  # fmt: skip


@pytest.mark.parametrize(
    ("status", "detail", "off"),
    [
        (500, "tools param requires --jinja flag", True),
        (
            400,
            '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser '
            "to be set",
            True,
        ),
        (500, "Cannot use tools with stream", True),
        (500, "CUDA out of memory", False),
        (429, "tools param requires --jinja flag", False),  # a status no start flag explains
    ],
)
def test_which_errors_mean_the_servers_tool_calling_is_off(
    status: int, detail: str, off: bool
) -> None:
    assert tools_switched_off(status, detail) is off
