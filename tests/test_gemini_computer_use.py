"""Gemini's computer use through the real google-genai SDK against a loopback server that
speaks the Gemini REST API, on Xvfb with the Tk app.

The scripted model answers as Gemini does: predefined actions with points on the 0..999
grid. Each click and the scroll land within 1 px of where Google's reference code puts
them (``int(x / 1000 * width)``). A call carrying ``safety_decision:
require_confirmation`` waits for the approver (nothing runs meanwhile) and, once allowed,
its function response carries ``safety_acknowledgement``; unattended it is denied.
"""

from __future__ import annotations

import asyncio
import base64
import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from jarvis.agent.factory import build_agent
from jarvis.config import Settings, load_settings
from jarvis.desktop.x11 import XDisplay
from jarvis.events import EventBus
from jarvis.geometry import REL_1000, Size
from jarvis.llm.factory import make_provider
from jarvis.llm.gemini import GeminiProvider
from jarvis.llm.gemini_actions import map_action
from jarvis.llm.openai_actions import SafetyCheck
from tests.fake_gemini import FakeGemini, fake_gemini_fixture, fc, text
from tests.tkdriver import TkApp

__all__ = ["fake_gemini_fixture"]

MODEL = "gemini-2.5-computer-use-preview-10-2025"
KEY = "AIza-test-gemini-0123456789abcdef"
TASK = "type hello in the box, scroll the notes and press OK"
SAFETY = {"decision": "require_confirmation", "explanation": "OK submits the form"}


def gemini_settings(tmp_path: Path, fake: FakeGemini, monkeypatch) -> Settings:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.setenv("GEMINI_BASE_URL", fake.base_url)
    return load_settings(
        tmp_path / "data",
        provider="gemini",
        gemini_model=MODEL,
        max_retries=0,
        settle_ceiling_ms=1500,
        long_term_memory=False,
    )


def answer(app: TkApp, widget: str) -> tuple[dict[str, int], tuple[int, int]]:
    """(Gemini's 0..999 point for the widget's centre, the pixel its reference code
    clicks for that point: ``int(x / 1000 * width)``)."""
    w, h = app.screen
    cx, cy = app.widget_center(widget)
    x, y = round((cx + 0.5) * 1000 / w), round((cy + 0.5) * 1000 / h)
    return {"x": x, "y": y}, (int(x / 1000 * w), int(y / 1000 * h))


def script(app: TkApp, safety: dict | None) -> tuple[list[Any], list, tuple[int, int]]:
    box, box_px = answer(app, "box")
    notes, notes_px = answer(app, "notes")
    ok, ok_px = answer(app, "ok")
    ok_args = {**ok, "safety_decision": safety} if safety else ok
    replies: list[Any] = [
        [
            text("I will type into the box."),
            fc("type_text_at", "c2lnLTE=", **box, text="hello", press_enter=False),
        ],
        [fc("scroll_at", "c2lnLTI=", **notes, direction="down", magnitude=300)],
        [fc("click_at", "c2lnLTM=", **ok_args)],
        [fc("finished", summary="typed hello, scrolled the notes and pressed OK")],
        [text('{"done": true, "reason": "the box says hello and OK was pressed"}')],
    ]
    return replies, [box_px, ok_px], notes_px


async def run(settings: Settings, provider: Any) -> Any:
    async with build_agent(
        settings, EventBus(), provider=provider, where=XDisplay.from_env()
    ) as agent:
        return await asyncio.wait_for(agent.run(TASK), timeout=120)


def near(point: tuple[int, int], target: tuple[int, int]) -> bool:
    return abs(point[0] - target[0]) <= 1 and abs(point[1] - target[1]) <= 1


@pytest.mark.usefixtures("xserver")
@pytest.mark.slow
async def test_task_lands_within_1px_and_a_held_safety_decision_waits_for_approval(
    tkapp: TkApp, fake_gemini: FakeGemini, tmp_path: Path, monkeypatch
) -> None:
    settings = gemini_settings(tmp_path, fake_gemini, monkeypatch)
    replies, click_targets, scroll_target = script(tkapp, SAFETY)
    fake_gemini.script(*replies)
    asked: list[SafetyCheck] = []
    waiting, answer_given = asyncio.Event(), asyncio.Event()

    async def approve(check: SafetyCheck) -> bool:
        asked.append(check)
        waiting.set()
        await answer_given.wait()  # held until a person answers
        return True

    provider = make_provider(settings, approve=approve)  # the approver, made with it
    assert isinstance(provider, GeminiProvider)
    task = asyncio.create_task(run(settings, provider))
    await asyncio.wait_for(waiting.wait(), timeout=60)
    held_requests = len(fake_gemini.requests)
    await asyncio.sleep(0)  # the loop is free to run anything else: nothing must happen
    assert tkapp.ok_pressed() is None and tkapp.entry_text() == "hello"
    assert held_requests == 3 and len(fake_gemini.requests) == 3
    assert [(c.vendor, c.code, c.message, c.actions) for c in asked] == [
        ("Gemini", "require_confirmation", "OK submits the form", ("click_at",))
    ]
    answer_given.set()
    outcome = await task
    await provider.aclose()

    assert outcome.status == "finished", outcome.summary
    assert tkapp.ok_pressed() == "hello"
    clicks = [(e["x"], e["y"]) for e in tkapp.events("click") if e["button"] == 1]
    assert len(clicks) == 2 and all(map(near, clicks, click_targets)), (clicks, click_targets)
    scrolls = [(e["x"], e["y"]) for e in tkapp.events("scroll") if e["direction"] == "down"]
    assert len(scrolls) == 3, scrolls  # magnitude 300 of 1000: three wheel clicks
    assert all(near(s, scroll_target) for s in scrolls), (scrolls, scroll_target)

    first, after_ok = fake_gemini.requests[0], fake_gemini.requests[3]
    assert first.path.startswith(f"/v1beta/models/{MODEL}:generateContent")
    assert first.headers["x-goog-api-key"] == KEY
    computer = first.body["tools"][0]["computerUse"]
    assert computer["environment"] == "ENVIRONMENT_BROWSER"
    assert "navigate" in computer["excluded_predefined_functions"]
    declared = [d["name"] for d in first.body["tools"][1]["functionDeclarations"]]
    assert "finished" in declared and "click" not in declared
    # the model's turns go back as sent (thought signatures too), each call answered by
    # a function response with the screenshot taken after it
    model_turns = [c for c in after_ok.contents if c["role"] == "model"]
    assert [p.get("thoughtSignature") for t in model_turns for p in t["parts"]] == [
        None,
        "c2lnLTE=",
        "c2lnLTI=",
        "c2lnLTM=",
    ]
    responses = after_ok.function_responses()
    assert [r["name"] for r in responses] == ["type_text_at", "scroll_at", "click_at"]
    assert "safety_acknowledgement" not in responses[0]["response"]
    assert responses[2]["response"]["safety_acknowledgement"] == "true"
    shot = responses[2]["parts"][-1]["inline_data"]
    data = base64.urlsafe_b64decode(shot["data"] + "=" * (-len(shot["data"]) % 4))
    with Image.open(io.BytesIO(data)) as image:
        assert image.size == (1440, 810)  # 1920x1080 fitted to the profile's 1440


@pytest.mark.usefixtures("xserver")
@pytest.mark.slow
async def test_unattended_safety_decision_is_denied_and_nothing_runs(
    tkapp: TkApp, fake_gemini: FakeGemini, tmp_path: Path, monkeypatch
) -> None:
    settings = gemini_settings(tmp_path, fake_gemini, monkeypatch)
    replies, _, _ = script(tkapp, SAFETY)
    fake_gemini.script(replies[0], replies[2])
    provider = make_provider(settings)  # the default approver: nobody is there
    outcome = await run(settings, provider)
    await provider.aclose()
    assert outcome.status == "needs_user"
    assert "require_confirmation" in outcome.summary and "not approved" in outcome.summary
    assert tkapp.ok_pressed() is None  # the OK click never ran


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("click_at", {"x": 500, "y": 999}, [("click", {"x": 5000, "y": 9990})]),
        ("hover_at", {"x": 0, "y": 10}, [("mouse_move", {"x": 0, "y": 100})]),
        (
            "type_text_at",
            {"x": 1, "y": 2, "text": "hi", "press_enter": True, "clear_before_typing": False},
            [
                ("click", {"x": 10, "y": 20}),
                ("type", {"text": "hi"}),
                ("press_key", {"key": "enter"}),
            ],
        ),
        ("key_combination", {"keys": "Control+Shift+T"}, [("hotkey", {"keys": "control+shift+t"})]),
        ("key_combination", {"keys": "Enter"}, [("press_key", {"key": "enter"})]),
        (
            "scroll_at",
            {"x": 1, "y": 2, "direction": "up"},
            [("scroll", {"x": 10, "y": 20, "direction": "up", "amount": 8})],
        ),
        ("scroll_document", {"direction": "down"}, [("press_key", {"key": "pagedown"})]),
        (
            "drag_and_drop",
            {"x": 1, "y": 2, "destination_x": 3, "destination_y": 4},
            [("drag", {"startX": 10, "startY": 20, "endX": 30, "endY": 40})],
        ),
        ("wait_5_seconds", {}, [("wait", {"ms": 5000})]),
    ],
)
def test_action_mapping(name: str, args: dict, expected: list) -> None:
    assert map_action(name, args, REL_1000, Size(1440, 810)) == expected


@pytest.mark.parametrize(
    ("name", "args", "error"),
    [
        ("navigate", {"url": "https://example.com"}, "web browser"),
        ("click_at", {"x": "a", "y": 1}, "number x"),
        ("click_at", {"x": 1200, "y": 1}, "outside the picture"),
        ("scroll_at", {"x": 1, "y": 1, "direction": "sideways"}, "direction"),
        ("teleport", {}, "not supported"),
    ],
)
def test_unmappable_actions_are_errors(name: str, args: dict, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        map_action(name, args, REL_1000, Size(1440, 810))
