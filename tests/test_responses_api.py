"""OpenAI's Responses API `computer` tool, through the real openai SDK against a loopback
server that speaks that API, on Xvfb with the Tk app.

A task ends verified; a call with a pending safety check waits for the approver (nothing
runs meanwhile), and once approved the check goes back as acknowledged_safety_checks.
Unattended (the default approver), the check is denied and the task asks for the user.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from jarvis.agent.factory import build_agent
from jarvis.desktop.screen import Size, fit_size, screen_to_model
from jarvis.desktop.x11 import XDisplay
from jarvis.events import EventBus
from jarvis.llm.factory import make_provider
from jarvis.llm.openai_actions import SafetyCheck, map_action
from jarvis.llm.openai_responses import OpenAIResponsesProvider, build_params, to_input
from jarvis.llm.types import ImagePart, LLMRequest, Message, ToolCall, ToolResultPart
from tests.agent_harness import TEST_KEY, agent_settings
from tests.fake_model import FakeModel, Reply, call
from tests.tkdriver import TkApp

TASK = "type hello in the box and press OK"
CHECK = {"id": "cu_sc_1", "code": "malicious_instructions", "message": "the page asks to click"}


def point(app: TkApp, widget: str) -> dict[str, int]:
    screen = Size(*app.screen)
    x, y = screen_to_model(*app.widget_center(widget), fit_size(screen, 1280), screen)
    return {"x": x, "y": y}


def computer_call(call_id: str, actions: list[dict[str, Any]], checks=()) -> dict[str, Any]:
    return {
        "type": "computer_call",
        "id": f"cu_{call_id}",
        "call_id": call_id,
        "actions": actions,
        "pending_safety_checks": list(checks),
        "status": "completed",
    }


def script(app: TkApp, checks=()) -> list[Reply]:
    box, ok = point(app, "box"), point(app, "ok")
    return [
        Reply(
            output=[
                computer_call(
                    "call_a",
                    [{"type": "click", "button": "left", **box}, {"type": "type", "text": "hello"}],
                )
            ]
        ),
        Reply(
            output=[computer_call("call_b", [{"type": "click", "button": "left", **ok}], checks)]
        ),
        Reply(tool_calls=[call("finished", summary="typed hello and pressed OK")]),
        Reply(text='{"done": true, "reason": "hello is in the box"}'),
    ]


async def run(settings, provider) -> Any:
    bus = EventBus()
    async with build_agent(settings, bus, provider=provider, where=XDisplay.from_env()) as agent:
        return await asyncio.wait_for(agent.run(TASK), timeout=120)


@pytest.mark.usefixtures("xserver")
@pytest.mark.slow
async def test_computer_tool_task_ends_verified_after_an_approved_safety_check(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, provider="openai", openai_model="gpt-5.4"
    )
    fake_model.script(*script(tkapp, [CHECK]))
    asked: list[SafetyCheck] = []
    waiting, answer = asyncio.Event(), asyncio.Event()

    async def approve(check: SafetyCheck) -> bool:
        asked.append(check)
        waiting.set()
        await answer.wait()  # held until a person answers
        return True

    provider = OpenAIResponsesProvider(
        "gpt-5.4", api_key=TEST_KEY, base_url=fake_model.openai_base_url, approve=approve
    )
    task = asyncio.create_task(run(settings, provider))
    await asyncio.wait_for(waiting.wait(), timeout=60)
    held_requests = len(fake_model.requests)
    await asyncio.sleep(0)  # the loop is free to run anything else: nothing must happen
    assert tkapp.ok_pressed() is None and tkapp.entry_text() == "hello"
    assert len(fake_model.requests) == held_requests == 2
    assert asked == [
        SafetyCheck(
            "cu_sc_1", "malicious_instructions", "the page asks to click", "call_b", ("click",)
        )
    ]
    answer.set()
    outcome = await task
    await provider.aclose()

    assert outcome.status == "finished", outcome.summary
    assert tkapp.ok_pressed() == "hello"
    first, after_ok = fake_model.requests[0], fake_model.requests[2]
    assert {r.api for r in fake_model.requests} == {"responses"}
    assert first.body["tools"][0] == {"type": "computer"}
    assert "click" not in [t.get("name") for t in first.body["tools"]]
    assert "finished" in [t.get("name") for t in first.body["tools"]]
    outputs = [i for i in after_ok.body["input"] if i.get("type") == "computer_call_output"]
    assert [o["call_id"] for o in outputs] == ["call_a", "call_b"]
    assert outputs[0]["acknowledged_safety_checks"] == []
    assert outputs[1]["acknowledged_safety_checks"] == [CHECK]
    assert outputs[1]["output"]["image_url"].startswith("data:image/jpeg;base64,")
    calls = [i for i in after_ok.body["input"] if i.get("type") == "computer_call"]
    assert [c["call_id"] for c in calls] == ["call_a", "call_b"]
    assert calls[1]["pending_safety_checks"] == [CHECK]


@pytest.mark.usefixtures("xserver")
@pytest.mark.slow
async def test_unattended_safety_check_is_denied_and_nothing_runs(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, provider="openai", openai_model="computer-use-preview"
    )
    replies = script(tkapp, [CHECK])
    fake_model.script(replies[0], replies[1])
    provider = make_provider(settings)  # the default approver: nobody is there
    assert isinstance(provider, OpenAIResponsesProvider)
    outcome = await run(settings, provider)
    await provider.aclose()
    assert outcome.status == "needs_user"
    assert "malicious_instructions" in outcome.summary and "not approved" in outcome.summary
    assert tkapp.ok_pressed() is None  # the OK click never ran
    tool = fake_model.requests[0].body["tools"][0]
    assert tool == {
        "type": "computer_use_preview",
        "display_width": 1280,
        "display_height": 720,
        "environment": "linux",
    }


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ({"type": "click", "button": "left", "x": 5, "y": 6}, [("click", {"x": 5, "y": 6})]),
        ({"type": "click", "button": "right", "x": 5, "y": 6}, [("right_click", {"x": 5, "y": 6})]),
        ({"type": "double_click", "x": 1279, "y": 0}, [("double_click", {"x": 1279, "y": 0})]),
        ({"type": "keypress", "keys": ["CTRL", "S"]}, [("hotkey", {"keys": "ctrl+s"})]),
        ({"type": "keypress", "keys": ["ENTER"]}, [("press_key", {"key": "enter"})]),
        (
            {"type": "scroll", "x": 1, "y": 2, "scroll_x": 0, "scroll_y": 300},
            [("scroll", {"x": 1, "y": 2, "direction": "down", "amount": 3})],
        ),
        (
            {"type": "drag", "path": [{"x": 1, "y": 2}, {"x": 9, "y": 9}, {"x": 30, "y": 40}]},
            [("drag", {"startX": 1, "startY": 2, "endX": 30, "endY": 40})],
        ),
        ({"type": "wait"}, [("wait", {"ms": 2000})]),
        ({"type": "screenshot"}, [("screenshot", {})]),
    ],
)
def test_action_mapping(action: dict, expected: list) -> None:
    assert map_action(action, Size(1280, 720)) == expected


@pytest.mark.parametrize(
    ("action", "error"),
    [
        ({"type": "click", "button": "wheel", "x": 1, "y": 1}, "wheel button"),
        ({"type": "click", "button": "left", "x": 1, "y": 1, "keys": ["SHIFT"]}, "holding keys"),
        ({"type": "click", "button": "left", "x": "a", "y": 1}, "numeric"),
        ({"type": "drag", "path": [{"x": 1, "y": 2}]}, "two points"),
        ({"type": "teleport"}, "not supported"),
        # one out-of-screen rule for every profile: refused, never clamped (README)
        ({"type": "double_click", "x": 2000, "y": -4}, "outside the 1280x720 picture"),
    ],
)
def test_unmappable_actions_are_errors(action: dict, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        map_action(action, Size(1280, 720))


def test_history_with_a_pruned_screenshot_goes_as_text_and_every_call_is_answered() -> None:
    buf = io.BytesIO()
    Image.new("RGB", (64, 40)).save(buf, "PNG")
    shot = ImagePart.from_bytes(buf.getvalue(), "image/png")
    origin = {
        "id": "c1",
        "name": "computer",
        "input": {"item": computer_call("c1", [{"type": "wait"}]), "acknowledged": []},
    }
    messages = [
        Message.user("task"),
        Message.assistant(
            "", [ToolCall(id="c1", name="wait", arguments={"ms": 2000}, origin=origin)]
        ),
        Message(
            role="user",
            content=[
                ToolResultPart(call_id="c1", name="wait", ok=True, content="ok"),
                *Message.user("next").content,
            ],
        ),
        Message.assistant("", [ToolCall(id="f1", name="remember", arguments={"text": "x"})]),
        Message(role="user", content=[shot, *Message.user("now").content]),
    ]
    items = to_input(messages)
    assert not any(i.get("type") == "computer_call" for i in items)  # no screenshot after it
    assert any("[computer call c1" in str(i.get("content")) for i in items)
    answered = [i for i in items if i.get("type") == "function_call_output"]
    assert answered == [
        {"type": "function_call_output", "call_id": "f1", "output": "not run: the call was skipped"}
    ]
    params = build_params(LLMRequest(system="s", messages=messages), "gpt-5.4")
    assert params["instructions"] == "s" and "tools" not in params
