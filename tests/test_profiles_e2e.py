"""One run per action format on Xvfb with the Tk app: the scripted model answers in the
profile's own grammar and coordinate space, and the clicks land within 1 px of the target.

The session display is 1920x1080. The model's answers are computed from the widgets'
screen positions with the profile's image rule and convention (what a perfect model of
that family would answer), then sent through the real SDKs: raw text for UI-TARS-1.5 and
GLM-4.5V, vLLM-style native ``computer_use`` tool calls for Qwen3-VL.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from jarvis.desktop.screen import Size
from jarvis.geometry import from_screen
from jarvis.llm.profiles.catalog import PROFILES
from jarvis.llm.profiles.select import geometry
from tests.agent_harness import agent_settings, run_agent
from tests.fake_model import FakeModel, Reply, call
from tests.tkdriver import TkApp

pytestmark = [pytest.mark.usefixtures("xserver"), pytest.mark.slow]

TASK = "type hello in the box and press OK"
VERIFIED = Reply(text='{"done": true, "reason": "the box says hello and OK was pressed"}')


def answer_for(app: TkApp, widget: str, profile: str, settings) -> tuple[list[int], tuple]:
    """(the whole-number answer a perfect model gives for the widget's centre, the centre)."""
    screen = Size(*app.screen)
    _, image = geometry(PROFILES[profile], screen, settings)
    target = app.widget_center(widget)
    return [round(v) for v in from_screen(*target, PROFILES[profile].space, image, screen)], target


def sent_image_size(request: Any) -> tuple[int, int]:
    urls = [
        b["image_url"]["url"]
        for m in request.messages
        if isinstance(m.get("content"), list)
        for b in m["content"]
        if b.get("type") == "image_url"
    ]
    data = base64.b64decode(urls[-1].split(",", 1)[1])
    with Image.open(io.BytesIO(data)) as image:
        return image.size


def assert_clicks_on(app: TkApp, targets: list[tuple[int, int]]) -> None:
    clicks = [(e["x"], e["y"]) for e in app.events("click") if e["button"] == 1]
    assert len(clicks) == len(targets), clicks
    for (x, y), (tx, ty) in zip(clicks, targets, strict=True):
        assert abs(x - tx) <= 1 and abs(y - ty) <= 1, (clicks, targets)


async def run_profile(
    app: TkApp, fake: FakeModel, tmp_path: Path, monkeypatch, model: str, script: Any
) -> tuple[Any, Any]:
    settings = agent_settings(tmp_path, fake, monkeypatch, provider="openai", openai_model=model)
    replies, targets = script(settings)
    fake.script(*replies, VERIFIED)
    outcome, _ = await run_agent(settings, TASK)
    assert outcome.status == "finished", outcome.summary
    assert app.ok_pressed() == "hello"
    assert_clicks_on(app, targets)
    return settings, fake.requests


async def test_ui_tars_text_with_smart_resized_pixels(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    def script(settings) -> tuple[list[Reply], list]:
        (bx, by), box = answer_for(tkapp, "box", "ui-tars-1.5", settings)
        (ox, oy), ok = answer_for(tkapp, "ok", "ui-tars-1.5", settings)
        replies = [
            Reply(text=f"Thought: click the box.\nAction: click(start_box='({bx},{by})')"),
            Reply(text="Thought: type the word.\nAction: type(content='hello')"),
            Reply(
                text=f"Thought: OK.\nAction: click(start_box='<|box_start|>({ox},{oy})<|box_end|>')"
            ),
            Reply(text="Thought: it is done.\nAction: finished(content='typed hello, pressed OK')"),
        ]
        return replies, [box, ok]

    _, requests = await run_profile(
        tkapp, fake_model, tmp_path, monkeypatch, "ByteDance-Seed/UI-TARS-1.5-7B", script
    )
    first = requests[0]
    assert first.tools == []  # the grammar goes in the prompt, not as tools
    assert "click(start_box='(x1,y1)')" in first.all_text()
    # the screenshot is sent at the smart-resized size (1920x1080 -> 1316x728)
    assert sent_image_size(first) == (1316, 728)
    assert "Action: click(start_box=" in requests[1].all_text()  # the history as written


async def test_qwen3_vl_relative_coordinates_through_tool_calls(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    def script(settings) -> tuple[list[Reply], list]:
        box_answer, box = answer_for(tkapp, "box", "qwen3-vl", settings)
        ok_answer, ok = answer_for(tkapp, "ok", "qwen3-vl", settings)
        replies = [
            Reply(
                text="I will click the box and type.",
                tool_calls=[
                    call("computer_use", action="left_click", coordinate=box_answer),
                    call("computer_use", action="type", text="hello"),
                ],
            ),
            Reply(tool_calls=[call("computer_use", action="left_click", coordinate=ok_answer)]),
            Reply(tool_calls=[call("computer_use", action="terminate", status="success")]),
        ]
        return replies, [box, ok]

    _, requests = await run_profile(
        tkapp, fake_model, tmp_path, monkeypatch, "Qwen/Qwen3-VL-8B-Instruct", script
    )
    first = requests[0]
    assert "computer_use" in first.tool_names
    assert "click" not in first.tool_names and "finished" in first.tool_names
    assert "0..1000" in str(first.tools)
    assert sent_image_size(first) == (1504, 832)  # Qwen3-VL's factor 32
    # the history goes back as the computer_use calls the model made
    second = requests[1].messages
    sent = [c["function"]["name"] for m in second for c in m.get("tool_calls", [])]
    assert sent == ["computer_use", "computer_use"]


async def test_glm_box_tokens(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    def script(settings) -> tuple[list[Reply], list]:
        (bx, by), box = answer_for(tkapp, "box", "glm-4.5v", settings)
        (ox, oy), ok = answer_for(tkapp, "ok", "glm-4.5v", settings)
        replies = [
            Reply(
                text=f"The box. <|begin_of_box|>left_click(start_box='[{bx},{by}]')<|end_of_box|>"
            ),
            Reply(text="<|begin_of_box|>type(content='hello')<|end_of_box|>"),
            Reply(text=f"<|begin_of_box|>[{ox - 3},{oy - 3},{ox + 3},{oy + 3}]<|end_of_box|>"),
            Reply(text="<|begin_of_box|>done(content='hello is in and OK pressed')<|end_of_box|>"),
        ]
        return replies, [box, ok]

    _, requests = await run_profile(
        tkapp, fake_model, tmp_path, monkeypatch, "zai-org/GLM-4.5V", script
    )
    assert requests[0].tools == []
    assert "<|begin_of_box|>" in requests[0].all_text()


async def test_claude_computer_20251124_with_a_zoom(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch, native_computer_tool=True)
    assert settings.model == "claude-sonnet-4-6"
    (bx, by), box = answer_for(tkapp, "box", "claude", settings)
    (ox, oy), ok = answer_for(tkapp, "ok", "claude", settings)
    computer = "computer"
    fake_model.script(
        Reply(
            text="Let me read the box first.",
            tool_calls=[call(computer, action="zoom", region=[bx - 40, by - 20, bx + 40, by + 20])],
        ),
        Reply(
            tool_calls=[
                call(computer, action="left_click", coordinate=[bx, by]),
                call(computer, action="type", text="hello"),
            ]
        ),
        Reply(tool_calls=[call(computer, action="left_click", coordinate=[ox, oy])]),
        Reply(tool_calls=[call("finished", summary="typed hello and pressed OK")]),
        VERIFIED,
    )
    outcome, _ = await run_agent(settings, TASK)
    assert outcome.status == "finished", outcome.summary
    assert tkapp.ok_pressed() == "hello"
    assert_clicks_on(tkapp, [box, ok])

    first, second = fake_model.requests[0], fake_model.requests[1]
    assert first.header("anthropic-beta") == "computer-use-2025-11-24"
    tool = {k: v for k, v in first.tools[0].items() if k != "cache_control"}
    assert tool == {
        "type": "computer_20251124",
        "name": "computer",
        "display_width_px": 1366,  # Anthropic's FWXGA for a 16:9 screen
        "display_height_px": 768,
        "enable_zoom": True,
    }
    assert "zoom" not in first.tool_names and "click" not in first.tool_names
    results = [b for m in second.messages for b in m["content"] if b.get("type") == "tool_result"]
    assert len(results) == 1 and isinstance(results[0]["content"], list)
    picture = next(b for b in results[0]["content"] if b["type"] == "image")
    data = base64.b64decode(picture["source"]["data"])
    with Image.open(io.BytesIO(data)) as image:
        assert image.size == (1366, 683)  # the 80x40 region, scaled up to fill the budget
    # the zoom came from the screen: the crop holds the box's white field, not the pad grey
    with Image.open(io.BytesIO(data)) as image:
        assert image.convert("L").getpixel((683, 341)) > 200
