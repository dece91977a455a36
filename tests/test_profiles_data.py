# ruff: noqa: E501
"""Profiles as data: the shipped file, ``model_profiles`` overrides, the `jarvis profiles`
commands, and what real serving stacks do to answers (tokens stripped, reasoning before
the action, full-width punctuation, several actions), per profile, to screen pixels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jarvis.cli import main
from jarvis.config import ConfigError, load_settings
from jarvis.llm.profiles.catalog import PROFILES, build_catalog, choose_profile
from jarvis.llm.text_mode import STRAY_CALL_ERROR, parse_tool_calls, stray_calls

MATRIX = ["1024x768", "1366x768", "1440x900", "1920x1080", "2560x1600", "3440x1440"]


def profiles_test(tmp_path: Path, capsys, name: str, screen: str, answer: str) -> dict:
    code = main(["profiles", "test", name, "--screen", screen, answer, "--json",
                 "--data-dir", str(tmp_path / "data")])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    out["code"] = code
    return out


def expected(screen: str, fx: float, fy: float) -> tuple[int, int]:
    w, h = (int(v) for v in screen.split("x"))
    return int(fx * w), int(fy * h)


# (profile, answer with {x} {y} in its own units, what the serving stack did to it)
REAL = [  # one answer per line: the table reads better than wrapped strings
    ("glm-4.5v", "<think>left_click(start_box='[1,1]')</think><answer>left_click(start_box='[{x},{y}]')</answer>", "vLLM: box tokens stripped, reasoning kept"),
    ("glm-4.5v", "I click it. <|begin_of_box|>left_click(start_box='[{x},{y}]')<|end_of_box|>", "tokens present"),
    ("glm-4.5v", "[[{x},{y},{x},{y}]]", "vLLM: a bare box, tokens stripped"),
    ("ui-tars-1.5", "Thought: the box.\nReflection: none\nAction_Summary: click\nAction：click(start_box='（{x}，{y}）')", "full-width punctuation"),
    ("ui-tars-1.5", "Thought: x\nAction: click(start_box='<|box_start|>({x},{y})<|box_end|>')", "tokens present"),
    ("ui-tars-1.5", "Thought: x\nAction: click(start_box='({x},{y})')", "tokens stripped"),
    ("opencua", "<think>pyautogui.click(x=1, y=1)</think>```python\npyautogui.click(x={x}, y={y})\n```", "thinking block"),
    ("opencua-qwen2", "```python\npyautogui.click(x={x}, y={y})\n```", "0..1"),
    ("qwen3-vl", "I will think.</think><tool_call>{{\"name\": \"computer_use\", \"arguments\": {{\"action\": \"left_click\", \"coordinate\": [{x}, {y}]}}}}</tool_call>", "Thinking model, <think> opened by the template"),
    ("qwen2.5-vl", "<tool_call>{{'name': 'computer_use', 'arguments': {{'action': 'left_click', 'coordinate': [{x}, {y}]}}}}</tool_call>", "Python-literal dict, no hermes parser"),
    ("generic", "```json\n{{\"name\": \"click\", \"arguments\": {{\"x\": {x}, \"y\": {y}}}}}\n```", "fenced code"),
]  # fmt: skip


@pytest.mark.parametrize("screen", MATRIX)
@pytest.mark.parametrize(("profile", "template", "why"), REAL)
def test_real_answers_land_within_1px(profile, template, why, screen, tmp_path, capsys) -> None:
    """The model's own conversion: x / D * W for a relative scale, pixels of the image sent
    (its own smart_resize of it) for a pixel one; the target is at (0.37, 0.61) of the screen."""
    data = {"profile": profile}
    code = main(["profiles", "show", profile, "--json", "--data-dir", str(tmp_path / "d")])
    spec = json.loads(capsys.readouterr().out)
    assert code == 0
    w, h = (int(v) for v in screen.split("x"))
    target = expected(screen, 0.37, 0.61)
    probe = profiles_test(tmp_path, capsys, profile, screen, "x")  # the image size
    iw, ih = (int(v) for v in probe["image"].split("x"))
    coords = spec["coordinates"]
    if coords == "pixels":
        x, y = round((target[0] + 0.5) * iw / w), round((target[1] + 0.5) * ih / h)
    else:
        d = float(coords.split("..")[1])
        x, y = (round(v, 4) if d == 1 else round(v)
                for v in ((target[0] + 0.5) * d / w, (target[1] + 0.5) * d / h))  # fmt: skip
    data = profiles_test(tmp_path, capsys, profile, screen, template.format(x=x, y=y))
    assert data["code"] == 0, (why, data)
    clicks = [a for a in data["actions"] if a["tool"] == "click"]
    assert len(clicks) == 1, (why, data)  # the drafted click in the reasoning never runs
    px, py = clicks[0]["screen"]["point"]
    unit = (
        max(w / iw, h / ih)
        if coords == "pixels"
        else (max(w, h) / float(coords[3:]) if coords != "0..1" else 1)
    )
    assert abs(px - target[0]) <= max(1, unit) and abs(py - target[1]) <= max(1, unit), (why, data)


def test_several_actions_in_one_answer(tmp_path, capsys) -> None:
    text = (
        "Thought: x\nAction: click(start_box='(10,20)')\n\ntype(content='hi\\n')"
        "\n\nhotkey(key='ctrl s')"
    )
    data = profiles_test(tmp_path, capsys, "ui-tars-1.5", "1920x1080", text)
    assert [a["tool"] for a in data["actions"]] == ["click", "type", "press_key", "hotkey"]


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_the_out_of_screen_rule_is_the_same_for_every_profile(profile, tmp_path, capsys) -> None:
    space = PROFILES[profile].space
    far = 5000 if space.kind == "pixel" else space.denominator * 1.5
    answer = {
        "uitars": f"Action: click(start_box='({far},10)')",
        "glm": f"<|begin_of_box|>left_click(start_box='[{far},10]')<|end_of_box|>",
        "pyautogui": f"pyautogui.click(x={far}, y=0)",
        "qwen-computer-use": json.dumps({"action": "left_click", "coordinate": [far, 0]}),
        "holo": json.dumps(
            {"note": None, "thought": "t", "tool_call": {"tool_name": "click", "x": far, "y": 0}}
        ),
        "venus": f"<action>Click(box=({far},0))</action>",
    }.get(
        PROFILES[profile].action_format,
        json.dumps({"name": "click", "arguments": {"x": far, "y": 0}}),
    )
    data = profiles_test(tmp_path, capsys, profile, "1920x1080", answer)
    assert data["code"] == 1 and "outside the" in data["actions"][0]["error"], data


def test_list_and_show_with_a_settings_override(tmp_path, capsys) -> None:
    config = tmp_path / "data" / "config"
    config.mkdir(parents=True)
    (config / "settings.json").write_text(json.dumps({"model_profiles": {
        "qwen3-vl": {"image": {"max_pixels": 802816}},
        "my-qwen": {"extends": "qwen3-vl", "patterns": ["^my-qwen"], "coordinates": "0..999"},
    }}))  # fmt: skip
    assert main(["profiles", "list", "--json", "--data-dir", str(tmp_path / "data")]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert next(iter(rows)) == "my-qwen" and rows["my-qwen"]["from"] == "settings"
    assert rows["qwen3-vl"]["from"] == "shipped + settings"
    assert rows["my-qwen"]["coordinates"] == "0..999"
    assert (
        main(["profiles", "show", "qwen3-vl", "--json", "--data-dir", str(tmp_path / "data")]) == 0
    )
    shown = json.loads(capsys.readouterr().out)
    assert shown["image"]["max_pixels"] == 802816 and shown["image"]["factor"] == 32
    settings = load_settings(tmp_path / "data", provider="openai", openai_model="my-qwen-2b")
    from jarvis.llm.profiles.select import active_profile

    assert active_profile(settings).profile.name == "my-qwen"
    assert main(["profiles", "show", "nope", "--data-dir", str(tmp_path / "data")]) == 2


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gemini-2.5-computer-use-preview-10-2025", "gemini-computer-use"),  # not OpenAI's tool
        ("computer-use-preview", "openai-computer"),
        ("xlangai/OpenCUA-Qwen2-7B", "opencua-qwen2"),  # answers 0..1, not pixels
        ("xlangai/OpenCUA-7B", "opencua"),
    ],
)
def test_patterns_that_used_to_match_the_wrong_family(model: str, expected: str) -> None:
    assert choose_profile(model).profile.name == expected


def test_a_wrong_override_names_the_field(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^model_profiles.claude: api: action_format"):
        build_catalog({"claude": {"api": "openai-chat"}})
    config = tmp_path / "config"
    config.mkdir()
    (config / "settings.json").write_text('{"model_profiles": {"x": {"coordinates": "0..1"}}}')
    with pytest.raises(
        ConfigError, match=r"model_profiles\.x: coordinates: '0\.\.1' with action_format 'tools'"
    ):
        load_settings(tmp_path)


def test_text_calls_in_a_native_reply_are_run_or_reported() -> None:
    text = 'Sure. <tool_call>{"name": "click", "arguments": {"x": 3, "y": 4}}</tool_call>'
    run = stray_calls(text, ["click"], run=True)
    assert [(c.name, c.arguments, c.parse_error) for c in run] == [
        ("click", {"x": 3, "y": 4}, None)
    ]
    reported = stray_calls(text, ["click"], run=False)
    assert reported[0].parse_error == STRAY_CALL_ERROR
    thinking = (
        '<think><tool_call>{"name": "click", "arguments": {"x": 1, "y": 1}}</tool_call></think>'
    )
    assert parse_tool_calls(thinking + text, ["click"])[1][0].arguments == {"x": 3, "y": 4}
    assert len(parse_tool_calls(thinking + text, ["click"])[1]) == 1


@pytest.mark.parametrize("size", [1, 3, 7, 1000])
async def test_a_streamed_thinking_reply_runs_only_the_call_after_its_reasoning(size: int) -> None:
    """Qwen3 "Thinking" in text mode: the template opens <think>, the reply only closes it;
    a call drafted inside the reasoning must not run, however the stream is chunked."""
    from jarvis.llm.text_mode import parse_stream
    from jarvis.llm.types import LLMResponse, ResponseDone, TextDelta, ToolCallDone, ToolSpec

    reply = (
        'maybe <tool_call>{"name": "click", "arguments": {"x": 1, "y": 1}}</tool_call> no.'
        '</think>The OK button. <tool_call>{"name": "click", "arguments": {"x": 7, "y": 8}}'
        "</tool_call>"
    )

    async def events():
        for i in range(0, len(reply), size):
            yield TextDelta(text=reply[i : i + size])
        yield ResponseDone(response=LLMResponse(stop_reason="end_turn"))

    tools = [ToolSpec(name="click", description="click", parameters={"type": "object"})]
    seen = [e async for e in parse_stream(events(), tools)]
    done = [e.call for e in seen if isinstance(e, ToolCallDone)]
    final = seen[-1].response
    assert [c.arguments for c in done] == [{"x": 7, "y": 8}]
    assert [c.arguments for c in final.tool_calls] == [{"x": 7, "y": 8}]
    assert final.stop_reason == "tool_use"


@pytest.mark.parametrize(("setting", "expected"), [("report", STRAY_CALL_ERROR), ("run", None)])
async def test_a_call_left_as_text_in_a_native_reply_is_never_dropped(
    setting: str, expected: str | None, fake_model, monkeypatch, tmp_path: Path
) -> None:
    """Through the real openai SDK: a server without a tool parser leaves the call in the
    text; the profile's ``text_tool_calls`` says whether it runs or goes back as an error."""
    from jarvis.llm.base import complete
    from jarvis.llm.factory import make_provider
    from jarvis.llm.types import LLMRequest, Message, ToolSpec
    from tests.agent_harness import agent_settings
    from tests.fake_model import Reply

    config = tmp_path / "data" / "config"
    config.mkdir(parents=True)
    override = {"generic": {"text_tool_calls": setting}}
    (config / "settings.json").write_text(json.dumps({"model_profiles": override}))
    settings = agent_settings(tmp_path, fake_model, monkeypatch, "openai", openai_model="gpt-4o")
    fake_model.script(
        Reply(
            text='Clicking. <tool_call>{"name": "click", "arguments": {"x": 3, "y": 4}}</tool_call>'
        )
    )
    provider = make_provider(settings)
    try:
        tools = [ToolSpec(name="click", description="click", parameters={"type": "object"})]
        request = LLMRequest(
            system="s", messages=[Message.user("go")], tools=tools, tool_mode="native"
        )
        response = await complete(provider, request)
    finally:
        await provider.aclose()
    assert fake_model.requests[0].tool_names == ["click"]  # native tools were offered
    assert [c.name for c in response.tool_calls] == ["click"]
    assert response.tool_calls[0].parse_error == expected
    if expected is None:
        assert response.tool_calls[0].arguments == {"x": 3, "y": 4}


@pytest.mark.parametrize("setting", ["run", "report"])
async def test_every_adapter_takes_text_tool_calls_at_construction(setting: str) -> None:
    """What to do with a call written as text is a constructor argument of every adapter
    (issue 23, point 5), not an attribute set on it afterwards."""
    from jarvis.llm.anthropic import AnthropicProvider
    from jarvis.llm.gemini import GeminiProvider
    from jarvis.llm.openai import OpenAIProvider
    from jarvis.llm.openai_responses import OpenAIResponsesProvider

    for adapter in (AnthropicProvider, OpenAIProvider, OpenAIResponsesProvider, GeminiProvider):
        provider = adapter(
            "a-model", api_key="k", base_url="http://127.0.0.1:9/v1", text_tool_calls=setting
        )
        try:
            assert provider.text_tool_calls == setting, adapter.__name__
        finally:
            await provider.aclose()
