"""The text-mode tool protocol: parsing, the streaming filter, rendering."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jarvis.llm.text_mode import BlockFilter, parse_tool_calls
from jarvis.llm.text_prompt import (
    format_tool_call,
    messages_to_text,
    render_tools_prompt,
    text_request,
)
from jarvis.llm.types import (
    ImagePart,
    LLMRequest,
    Message,
    TextPart,
    ToolCall,
    ToolResultPart,
    ToolSpec,
)

KNOWN = ["click", "type", "wait", "finished"]


def shape(calls: list[ToolCall]) -> list[tuple[str, dict[str, Any], bool]]:
    return [(c.name, c.arguments, c.parse_error is not None) for c in calls]


@pytest.mark.parametrize(
    ("text", "visible", "calls"),
    [
        (
            'Clicking OK. <tool_call>{"name": "click", "arguments": {"x": 1, "y": 2}}</tool_call>',
            "Clicking OK. ",
            [("click", {"x": 1, "y": 2}, False)],
        ),
        (
            '<tool_call>\n{"name": "type", "arguments": {"text": "a"}}\n</tool_call>'
            '<tool_call>{"name": "wait", "arguments": {"ms": 50}}</tool_call>done',
            "done",
            [("type", {"text": "a"}, False), ("wait", {"ms": 50}, False)],
        ),
        (
            'Now:\n```tool_call\n{"name": "click", "arguments": {"x": 5, "y": 6}}\n```\nok',
            "Now:\n\nok",
            [("click", {"x": 5, "y": 6}, False)],
        ),
        (
            '```json\n{"name": "finished", "arguments": {"summary": "saved"}}\n```',
            "",
            [("finished", {"summary": "saved"}, False)],
        ),
        (  # a json fence that is not a call stays visible (e.g. a verify answer)
            '```json\n{"done": true, "reason": "ok"}\n```',
            '```json\n{"done": true, "reason": "ok"}\n```',
            [],
        ),
        (  # blocks wrapped in an xml fence: the empty fence disappears too
            'Go\n```xml\n<tool_call>{"name": "wait", "arguments": {}}</tool_call>\n```',
            "Go\n",
            [("wait", {}, False)],
        ),
        (
            'I will type. {"name": "type", "arguments": {"text": "hi"}} Then wait.',
            "I will type.  Then wait.",
            [("type", {"text": "hi"}, False)],
        ),
        (  # bare JSON naming a known tool, with the usual drift in key names
            '{"tool": "click", "parameters": {"x": 9, "y": 9}}',
            "",
            [("click", {"x": 9, "y": 9}, False)],
        ),
        (  # bare JSON that is not a call stays text
            'The config is {"name": "Bob", "age": 3}.',
            'The config is {"name": "Bob", "age": 3}.',
            [],
        ),
        (  # arguments given as a JSON string
            '<tool_call>{"name": "click", "arguments": "{\\"x\\": 1, \\"y\\": 1}"}</tool_call>',
            "",
            [("click", {"x": 1, "y": 1}, False)],
        ),
        (  # a list of calls in one block
            '<tool_call>[{"name": "wait", "arguments": {"ms": 1}}, {"name": "finished", '
            '"arguments": {"summary": "x"}}]</tool_call>',
            "",
            [("wait", {"ms": 1}, False), ("finished", {"summary": "x"}, False)],
        ),
        (  # an unterminated block at the end (the model stopped early) still counts
            'Done. <tool_call>{"name": "finished", "arguments": {"summary": "ok"}}',
            "Done. ",
            [("finished", {"summary": "ok"}, False)],
        ),
        (
            "Plain text, a < b and `code` and {braces}.",
            "Plain text, a < b and `code` and {braces}.",
            [],
        ),
    ],
)
def test_parse_table(
    text: str, visible: str, calls: list[tuple[str, dict[str, Any], bool]]
) -> None:
    shown, parsed = parse_tool_calls(text, KNOWN)
    assert shown == visible
    assert shape(parsed) == calls
    assert len({c.id for c in parsed}) == len(parsed)


@pytest.mark.parametrize(
    ("text", "name", "error"),
    [
        (
            '<tool_call>{"name": "click", "arguments": {"x": 1,}}</tool_call>',
            "click",
            "not valid JSON",
        ),
        (
            '<tool_call>{"name": "type", "arguments": {"text": "unterminated</tool_call>',
            "type",
            "not valid JSON",
        ),
        ("<tool_call>click(1, 2)</tool_call>", "unknown", "not valid JSON"),
        ('<tool_call>{"arguments": {}}</tool_call>', "unknown", 'no "name"'),
        (
            '<tool_call>{"name": "click", "arguments": [1, 2]}</tool_call>',
            "click",
            "must be a JSON object",
        ),
        (
            '<tool_call>{"name": "click", "arguments": "{broken"}</tool_call>',
            "click",
            "not valid JSON",
        ),
        ('```tool_call\n{"name": "wait", "arguments": {"ms": }\n```', "wait", "not valid JSON"),
        ("<tool_call>42</tool_call>", "unknown", "must be a JSON object"),
    ],
)
def test_broken_calls_carry_parse_errors(text: str, name: str, error: str) -> None:
    shown, (bad,) = parse_tool_calls(text, KNOWN)
    assert shown == ""
    assert bad.name == name and bad.arguments == {}
    assert bad.parse_error is not None and error in bad.parse_error


def stream(text: str, cuts: list[int], known: list[str] = KNOWN) -> tuple[str, list[ToolCall]]:
    filt = BlockFilter(known)
    shown: list[str] = []
    calls: list[ToolCall] = []
    points = sorted({c for c in cuts if 0 < c < len(text)})
    for start, end in zip([0, *points], [*points, len(text)], strict=True):
        shown.append(filt.feed(text[start:end]))
        calls += filt.take_calls()
    shown.append(filt.flush())
    calls += filt.take_calls()
    return "".join(shown), calls


def test_filter_withholds_block_starts_across_chunks() -> None:
    text = 'ab <tool_call>{"name": "wait", "arguments": {}}</tool_call> cd'
    filt = BlockFilter(KNOWN)
    assert filt.feed("ab <tool_") == "ab "
    assert filt.feed('call>{"name": "wait"') == ""
    assert filt.feed(', "arguments": {}}</tool_call> c') == " c"
    assert shape(filt.take_calls()) == [("wait", {}, False)]
    assert filt.feed("d") + filt.flush() == "d"
    assert stream(text, list(range(len(text))))[0] == "ab  cd"


plain = st.text(alphabet=st.sampled_from(list("ab <>{}`\"':\n_xyz,[]tool_call/")), max_size=30)
args = st.dictionaries(
    st.sampled_from(["x", "y", "text", "ms", "keys"]),
    st.one_of(st.integers(-5000, 5000), st.text(max_size=12), st.booleans()),
    max_size=3,
)
call_st = st.tuples(st.sampled_from(KNOWN), args)


def render(name: str, arguments: dict[str, Any], form: int) -> str:
    body = json.dumps({"name": name, "arguments": arguments})
    return [
        f"<tool_call>{body}</tool_call>",
        f"\n```tool_call\n{body}\n```\n",
        f"\n```json\n{body}\n```\n",
        f" {body} ",
    ][form]


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(st.one_of(plain, st.tuples(call_st, st.integers(0, 3))), max_size=6),
    cuts=st.lists(st.integers(0, 400), max_size=25),
)
def test_streaming_equals_whole_parse_for_any_chunking(pieces: list[Any], cuts: list[int]) -> None:
    text = "".join(p if isinstance(p, str) else render(p[0][0], p[0][1], p[1]) for p in pieces)
    whole_text, whole_calls = parse_tool_calls(text, KNOWN)
    streamed_text, streamed_calls = stream(text, cuts)
    assert streamed_text == whole_text
    assert shape(streamed_calls) == shape(whole_calls)


safe_text = st.text(alphabet=st.sampled_from(list("abc XYZ.,!?\n-()")), max_size=25)


@settings(max_examples=200, deadline=None)
@given(
    pieces=st.lists(st.one_of(safe_text, st.tuples(call_st, st.integers(0, 3))), max_size=6),
    cuts=st.lists(st.integers(0, 400), max_size=10),
)
def test_calls_round_trip_and_text_survives(pieces: list[Any], cuts: list[int]) -> None:
    text = "".join(p if isinstance(p, str) else render(p[0][0], p[0][1], p[1]) for p in pieces)
    expected_calls = [(p[0][0], p[0][1], False) for p in pieces if not isinstance(p, str)]
    shown, calls = stream(text, cuts)
    assert shape(calls) == expected_calls
    plain_text = "".join(p for p in pieces if isinstance(p, str))
    assert "".join(shown.split()) == "".join(plain_text.split())  # blocks add only whitespace


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80), st.lists(st.integers(0, 100), max_size=10))
def test_never_raises_on_arbitrary_text(noise: str, cuts: list[int]) -> None:
    for text in (noise, f"<tool_call>{noise}</tool_call>", f"```tool_call\n{noise}", "{" + noise):
        shown, calls = stream(text, cuts)
        assert (shown, shape(calls)) == (lambda r: (r[0], shape(r[1])))(
            parse_tool_calls(text, KNOWN)
        )
        assert all(c.parse_error is None or c.arguments == {} for c in calls)


def test_render_tools_prompt_lists_tools_and_protocol() -> None:
    tools = [
        ToolSpec(
            name="click",
            description="Click at a point.",
            parameters={"type": "object", "properties": {"x": {"type": "integer"}}},
        ),
        ToolSpec(
            name="screenshot", description="Take a screenshot.", parameters={"type": "object"}
        ),
    ]
    prompt = render_tools_prompt(tools)
    assert "<tool_call>" in prompt and "</tool_call>" in prompt
    assert "## click" in prompt and "Click at a point." in prompt
    assert '"x":{"type":"integer"}' in prompt
    assert "## screenshot" in prompt
    # the example in the prompt is itself a well-formed block
    assert shape(parse_tool_calls(prompt.split("\n")[3], ["TOOL_NAME"])[1]) == [
        ("TOOL_NAME", {"ARG": "VALUE"}, False)
    ]


def test_history_goes_back_as_text() -> None:
    shot = ImagePart(media_type="image/png", data_b64="aGk=")
    call = ToolCall(id="call_1", name="click", arguments={"x": 1, "y": 2})
    messages = [
        Message.user("task"),
        Message.assistant("Clicking.", [call]),
        Message(
            role="user",
            content=[
                ToolResultPart(call_id="call_1", name="click", ok=False, content="missed"),
                shot,
            ],
        ),
    ]
    out = messages_to_text(messages)
    assert out[0] is messages[0]
    assert out[1].tool_calls == [] and out[1].text == "Clicking.\n" + format_tool_call(call)
    assert parse_tool_calls(out[1].text, KNOWN)[1][0].arguments == {"x": 1, "y": 2}
    result, image = out[2].content
    assert isinstance(result, TextPart) and image == shot
    assert result.text.startswith('<tool_result name="click" call_id="call_1" ok="false">')
    assert "missed" in result.text

    req = text_request(LLMRequest(system="Base.", messages=messages, tools=[]))
    assert req.system == "Base." and req.tools == []
