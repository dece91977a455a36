"""The edge rule (DESIGN.md section 13): a point out of range by at most 1 % of the model's
coordinate range lands on the nearest edge pixel and the tool result says so; anything
further is refused (-32602, naming the range). The same for every coordinate space and for
the vendor computer tools.

The table tests go through :func:`jarvis.geometry.place`; the end-to-end ones run a task on
Xvfb with the Tk app, the scripted model answering through the real SDK (OpenAI chat for
Jarvis's tools, UI-TARS and Qwen3-VL; Anthropic's computer tool; OpenAI's Responses
computer tool; Gemini's computer use), and check where the click landed (within 1 px of
the screen's edge pixel) and that the model's next request carries the note.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from jarvis.agent.factory import build_agent
from jarvis.desktop.x11 import XDisplay
from jarvis.events import EventBus
from jarvis.geometry import (
    PIXELS,
    REL_999,
    REL_1000,
    REL_UNIT,
    CoordSpace,
    OffScreen,
    Size,
    from_screen,
    place,
    to_screen,
)
from jarvis.llm.factory import make_provider
from jarvis.llm.openai_responses import OpenAIResponsesProvider
from jarvis.llm.profiles.catalog import PROFILES
from jarvis.llm.profiles.select import geometry
from tests.agent_harness import TEST_KEY, agent_settings, run_agent
from tests.fake_gemini import FakeGemini, fake_gemini_fixture, fc, text
from tests.fake_model import FakeModel, Reply, call
from tests.tkdriver import TkApp

__all__ = ["fake_gemini_fixture"]

SCREEN = Size(1920, 1080)
RESIZED = CoordSpace("pixel", resize=(28, 3136, 1003520))  # 1920x1080 -> 1316x728
PLAIN = CoordSpace("pixel", plain=True)  # UI-TARS-1.5, OpenCUA: int(x / w * W)


# ------------------------------------------------------------------ the rule, by table
@pytest.mark.parametrize(
    ("space", "image", "answer", "screen_point", "said"),
    [
        # 1370 on a 1366-wide screenshot: 5 px past the last pixel (1 % is 13.66)
        (PIXELS, "1366x768", [1370, 400], (1919, 563), "was 5 px off the screen"),
        (PIXELS, "1920x1080", [-3, -7], (0, 0), "was 7 px off the screen"),
        (PIXELS, "1280x720", [1279 + 12.7, 0], (1919, 0), "was 12.7 px off"),  # 1 % is 12.8
        # pixels of the model's own resize (holo1.5, gta1, jedi), on the 1316x728 image
        (RESIZED, "1920x1080", [1320, 727], (1919, 1079), "was 5 px off"),
        (PLAIN, "1316x728", [1320, -4], (1918, 0), "was 5 px off"),  # int(1315 / 1316 * 1920)
        (REL_1000, "1280x720", [1000, 1003], (1919, 1079), "was 3 off the screen"),
        (REL_999, "1280x720", [1008, 500], (1919, 540), "was 9 off"),
        (REL_UNIT, "1280x720", [1.01, 0.5], (1919, 540), "was 0.01 off"),
    ],
)
def test_a_point_just_off_the_picture_lands_on_the_nearest_edge_with_a_note(
    space: CoordSpace, image: str, answer: list[float], screen_point: tuple, said: str
) -> None:
    placed = place(answer, space, Size.parse(image))
    assert said in placed.note
    assert "so the nearest edge point" in placed.note
    assert to_screen(answer, space, Size.parse(image), SCREEN) == screen_point


@pytest.mark.parametrize(
    ("space", "image", "answer", "range_text"),
    [
        (PIXELS, "1366x768", [1380, 400], "x must be in 0..1365 and y in 0..767"),  # 15 > 13.66
        (PIXELS, "1280x720", [1279 + 12.9, 0], "x must be in 0..1279"),  # just over 1 %
        (PIXELS, "1920x1080", [5, -11], "y in 0..1079"),
        (RESIZED, "1920x1080", [1329, 5], "x must be in 0..1315"),
        (PLAIN, "1316x728", [5, 736], "y in 0..727"),
        (REL_1000, "1280x720", [1011, 5], "x and y must be in 0..1000"),
        (REL_UNIT, "1280x720", [0.5, -0.011], "x and y must be in 0..1"),
    ],
)
def test_a_point_further_off_is_refused_naming_the_range(
    space: CoordSpace, image: str, answer: list[float], range_text: str
) -> None:
    with pytest.raises(OffScreen, match="is outside") as caught:
        place(answer, space, Size.parse(image))
    assert range_text in str(caught.value)


def test_a_point_inside_has_no_note() -> None:
    for space, image in [(PIXELS, "1280x720"), (PLAIN, "1316x728"), (REL_1000, "1280x720")]:
        assert place([0, 0], space, Size.parse(image)).note == ""


# ------------------------------------------------------------- end to end, on Xvfb
VERIFIED = Reply(text='{"done": true, "reason": "the click was made"}')


def ok_row(app: TkApp, profile: str, settings: Any) -> tuple[float, int, Size]:
    """(the model's y for the OK button's row in the profile's space, its screen y, image)."""
    _, image = geometry(PROFILES[profile], SCREEN, settings)
    y_screen = app.widget_center("ok")[1]
    return from_screen(0, y_screen, PROFILES[profile].space, image, SCREEN)[1], y_screen, image


def left_clicks(app: TkApp) -> list[tuple[int, int]]:
    return [(e["x"], e["y"]) for e in app.events("click") if e["button"] == 1]


def near(point: tuple[int, int], target: tuple[int, int]) -> bool:
    return abs(point[0] - target[0]) <= 1 and abs(point[1] - target[1]) <= 1


async def run_openai(
    app: TkApp, fake: FakeModel, tmp_path: Path, monkeypatch, model: str, replies: list
) -> list[Any]:
    settings = agent_settings(tmp_path, fake, monkeypatch, provider="openai", openai_model=model)
    fake.script(*replies, VERIFIED)
    outcome, _ = await run_agent(settings, "click at the right edge")
    assert outcome.status == "finished", outcome.summary
    return fake.requests


@pytest.mark.usefixtures("xserver")
@pytest.mark.slow
@pytest.mark.parametrize(
    ("model", "profile", "x_answer", "expected_x", "off"),
    [
        ("gpt-4.1", "generic", 1285, 1919, "6 px off"),  # Jarvis's own click tool, 1280x720
        ("ByteDance-Seed/UI-TARS-1.5-7B", "ui-tars-1.5", 1320, 1918, "5 px off"),  # 1316x728
        ("Qwen/Qwen3-VL-8B-Instruct", "qwen3-vl", 1003, 1919, "3 off"),  # 0..1000
    ],
)
async def test_openai_compatible_profiles_click_the_edge_and_say_so(
    tkapp: TkApp,
    fake_model: FakeModel,
    tmp_path: Path,
    monkeypatch,
    model: str,
    profile: str,
    x_answer: int,
    expected_x: int,
    off: str,
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch, provider="openai")
    y, y_screen, _ = ok_row(tkapp, profile, settings)
    y = round(y, 1)
    if profile == "generic":
        replies = [Reply(tool_calls=[call("click", x=x_answer, y=round(y))])]
        replies.append(Reply(tool_calls=[call("finished", summary="clicked the edge")]))
    elif profile == "ui-tars-1.5":
        replies = [
            Reply(text=f"Thought: edge.\nAction: click(start_box='({x_answer},{round(y)})')"),
            Reply(text="Thought: done.\nAction: finished(content='clicked the edge')"),
        ]
    else:
        replies = [
            Reply(tool_calls=[call("computer_use", action="left_click", coordinate=[x_answer, y])]),
            Reply(tool_calls=[call("computer_use", action="terminate", status="success")]),
        ]
    requests = await run_openai(tkapp, fake_model, tmp_path, monkeypatch, model, replies)
    clicks = left_clicks(tkapp)
    assert len(clicks) == 1 and near(clicks[0], (expected_x, y_screen)), clicks
    after = json.dumps(requests[1].body)
    assert f"the point ({x_answer}, " in after and off in after
    assert "nearest edge point" in after


@pytest.mark.usefixtures("xserver")
@pytest.mark.slow
async def test_claude_computer_tool_clicks_the_edge_and_says_so(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    settings = agent_settings(tmp_path, fake_model, monkeypatch, native_computer_tool=True)
    y_screen = tkapp.widget_center("ok")[1]
    y = round(from_screen(0, y_screen, PIXELS, Size(1366, 768), SCREEN)[1])
    fake_model.script(
        Reply(tool_calls=[call("computer", action="left_click", coordinate=[1370, y])]),
        Reply(tool_calls=[call("finished", summary="clicked the edge")]),
        VERIFIED,
    )
    outcome, _ = await run_agent(settings, "click at the right edge")
    assert outcome.status == "finished", outcome.summary
    assert fake_model.requests[0].tools[0]["display_width_px"] == 1366
    clicks = left_clicks(tkapp)
    assert len(clicks) == 1 and near(clicks[0], (1919, y_screen)), clicks
    after = json.dumps(fake_model.requests[1].body)
    assert "the point (1370, " in after and "5 px off the screen" in after


def computer_call(call_id: str, action: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "computer_call",
        "id": f"cu_{call_id}",
        "call_id": call_id,
        "actions": [action],
        "pending_safety_checks": [],
        "status": "completed",
    }


@pytest.mark.usefixtures("xserver")
@pytest.mark.slow
async def test_openai_computer_tool_edge_click_lands_and_a_far_one_is_a_failed_call(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    """``click x=1283, y=-2`` on 1280x720 lands on the corner pixel; ``click x=1300, y=-2``
    (20 px off, more than 1 %) is a failed call the model reads beside its
    computer_call_output, and the task goes on to finish."""
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, provider="openai", openai_model="gpt-5.4"
    )
    near_corner = {"type": "click", "button": "left", "x": 1283, "y": -2}
    far_off = {"type": "click", "button": "left", "x": 1300, "y": -2}
    fake_model.script(
        Reply(output=[computer_call("call_a", near_corner)]),
        Reply(output=[computer_call("call_b", far_off)]),
        Reply(tool_calls=[call("finished", summary="clicked the corner")]),
        VERIFIED,
    )
    provider = OpenAIResponsesProvider(
        "gpt-5.4", api_key=TEST_KEY, base_url=fake_model.openai_base_url
    )
    async with build_agent(
        settings, EventBus(), provider=provider, where=XDisplay.from_env()
    ) as agent:
        outcome = await asyncio.wait_for(agent.run("click the corner"), timeout=120)
    await provider.aclose()
    assert outcome.status == "finished", outcome.summary
    assert left_clicks(tkapp) == [(1919, 0)]  # the far one moved nothing
    second, third = (json.dumps(r.body) for r in fake_model.requests[1:3])
    assert "the point (1283, -2) was 4 px off the screen" in second
    items = fake_model.requests[2].body["input"]
    outputs = [i for i in items if i.get("type") == "computer_call_output"]
    assert [o["call_id"] for o in outputs] == ["call_a", "call_b"]
    assert "[call_b: failed: " in third and "(1300, -2) is outside the 1280x720 picture" in third
    assert "x must be in 0..1279 and y in 0..719" in third and "unknown tool" not in third


@pytest.mark.usefixtures("xserver")
@pytest.mark.slow
async def test_gemini_computer_use_clicks_the_edge_and_says_so(
    tkapp: TkApp, fake_gemini: FakeGemini, tmp_path: Path, monkeypatch
) -> None:
    from tests.test_gemini_computer_use import gemini_settings

    settings = gemini_settings(tmp_path, fake_gemini, monkeypatch)
    y_screen = tkapp.widget_center("ok")[1]
    y = round((y_screen + 0.5) * 1000 / SCREEN.height)
    fake_gemini.script(
        [fc("click_at", "c2lnLTE=", x=1003, y=y)],
        [fc("finished", summary="clicked the edge")],
        [text('{"done": true, "reason": "the click was made"}')],
    )
    provider = make_provider(settings)
    async with build_agent(
        settings, EventBus(), provider=provider, where=XDisplay.from_env()
    ) as agent:
        outcome = await asyncio.wait_for(agent.run("click at the right edge"), timeout=120)
    await provider.aclose()
    assert outcome.status == "finished", outcome.summary
    clicks = left_clicks(tkapp)
    assert len(clicks) == 1 and near(clicks[0], (1919, int(y / 1000 * SCREEN.height))), clicks
    after = json.dumps(fake_gemini.requests[1].body)
    assert "the point (1003, " in after and "was 3 off the screen" in after


def test_a_grounder_answer_just_off_the_picture_lands_on_the_edge_with_a_note() -> None:
    from jarvis.llm.grounding import read_point
    from jarvis.llm.placer import Placer

    profile = PROFILES["uground"]  # answers '(x, y)' on 0..1000 (OSU-NLP-Group/UGround README)
    image = Size(1288, 728)
    placer = Placer(profile.space, image)
    gx, gy = read_point(profile, "(1004, 500)", image, placer)
    assert (gx, gy) == (9999, 5000)
    assert "the point (1004, 500) was 4 off the screen" in placer.notes[(gx, gy)]
    with pytest.raises(OffScreen):
        read_point(profile, "(1011, 500)", image)


def test_jarvis_profiles_test_shows_the_edge_note(tmp_path: Path, capsys) -> None:
    from jarvis.cli import main

    answer = "Thought: x\nAction: click(start_box='(1320,300)')"
    code = main(["profiles", "test", "ui-tars-1.5", "--screen", "1920x1080", answer, "--json",
                 "--data-dir", str(tmp_path / "data")])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    (action,) = out["actions"]
    assert action["screen"]["point"] == [1918, 445]  # int(1315 / 1316 * 1920), int(300 * ...)
    assert "the point (1320, 300) was 5 px off the screen" in action["note"]
