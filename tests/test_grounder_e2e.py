"""A planner and a grounding model on Xvfb with the Tk app, two scripted loopback models.

The planner (Claude's API through the real anthropic SDK) names targets in words with
`click_target`; the grounder (GTA1's profile through the real openai SDK, on its own
endpoint and key) answers each with a point in pixels of its own smart-resized
screenshot, computed from what it was sent: the image size and the words. The clicks land
within 1 px of the widgets' centres; a point the grounder puts outside its picture
clicks nothing and the planner is told why.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent_harness import agent_settings, run_agent
from tests.fake_model import FakeModel, RecordedRequest, Reply, call
from tests.test_profiles_e2e import TASK, VERIFIED, assert_clicks_on, sent_image_size
from tests.tkdriver import TkApp

pytestmark = [pytest.mark.usefixtures("xserver"), pytest.mark.slow]

GROUNDER_KEY = "sk-grounder-test-0123456789"
WIDGETS = {"the text box": "box", "the OK button": "ok"}


@pytest.fixture
def grounding_model() -> Iterator[FakeModel]:
    server = FakeModel().start()
    try:
        yield server
    finally:
        server.stop()


def gta1(app: TkApp, out_of_picture: bool = False):
    """A perfect GTA1: '(x,y)' in pixels of the image it was sent, for the named widget."""

    def answer(request: RecordedRequest) -> Reply:
        width, height = sent_image_size(request)
        assert f"height {height} and width {width}" in request.all_text()
        words = next(w for w in WIDGETS if w in request.all_text())
        tx, ty = app.widget_center(WIDGETS[words])
        sw, sh = app.screen
        x = math.floor((tx + 0.5) * width / sw)
        y = math.floor((ty + 0.5) * height / sh)
        if out_of_picture:
            x = width + 40
        return Reply(text=f"<think>it is ({x - 300},{y})?</think>({x},{y})")

    return answer


def settings_for(tmp_path: Path, planner: FakeModel, grounder: FakeModel, monkeypatch):
    monkeypatch.setenv("GROUNDER_KEY", GROUNDER_KEY)
    return agent_settings(
        tmp_path,
        planner,
        monkeypatch,
        grounder={
            "model": "HelloKKMe/GTA1-7B",
            "base_url": grounder.openai_base_url,
            "api_key_env": "GROUNDER_KEY",
        },
    )


async def test_the_planner_names_targets_and_the_grounder_points(
    tkapp: TkApp, fake_model: FakeModel, grounding_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    settings = settings_for(tmp_path, fake_model, grounding_model, monkeypatch)
    grounding_model.script(gta1(tkapp), gta1(tkapp))
    fake_model.script(
        Reply(
            tool_calls=[
                call("click_target", target="the text box"),
                call("type", text="hello"),
            ]
        ),
        Reply(tool_calls=[call("click_target", target="the OK button")]),
        Reply(tool_calls=[call("finished", summary="typed hello and pressed OK")]),
        VERIFIED,
    )
    outcome, _ = await run_agent(settings, TASK)
    assert outcome.status == "finished", outcome.summary
    assert tkapp.ok_pressed() == "hello"
    assert_clicks_on(tkapp, [tkapp.widget_center("box"), tkapp.widget_center("ok")])

    assert "click_target" in fake_model.requests[0].tool_names
    asked = grounding_model.requests
    assert len(asked) == 2 and asked[0].tools == []
    assert asked[0].header("authorization") == f"Bearer {GROUNDER_KEY}"
    # GTA1's processor on 1920x1080: multiples of 28 that its smart_resize leaves alone
    assert sent_image_size(asked[0]) == (1932, 1092)
    assert "the text box" in asked[0].all_text() and "the OK button" in asked[1].all_text()
    # the planner saw where its words landed, in its own screenshot's pixels
    results = [
        block
        for message in fake_model.requests[1].messages
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert any("the text box" in json.dumps(b) for b in results), results


async def test_a_point_outside_the_picture_clicks_nothing(
    tkapp: TkApp, fake_model: FakeModel, grounding_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    settings = settings_for(tmp_path, fake_model, grounding_model, monkeypatch)
    grounding_model.script(gta1(tkapp, out_of_picture=True))
    fake_model.script(
        Reply(tool_calls=[call("click_target", target="the OK button")]),
        Reply(tool_calls=[call("call_user", message="the grounder cannot find OK")]),
    )
    outcome, _ = await run_agent(settings, TASK)
    assert outcome.status != "finished"
    assert [e for e in tkapp.events("click") if e["button"] == 1] == []
    told = json.dumps(fake_model.requests[1].messages)
    assert "outside the" in told and "the OK button" in told
