"""GLM-4.5V answers with every action of its desktop action space, read into Jarvis's calls
(pure), with the box tokens and with them stripped by the server (vLLM's default).

The action space and call rules are zai-org/GLM-V ``examples/gui-agent/glm-45v/agent.md``
("Desktop Environment": left/right/middle_click, hover, left_double_click, left_drag, key,
type, scroll with step, WAIT, DONE, FAIL); the answers' shape (a plain-text explanation,
then the call, then ``Memory:``) is its ``USER_PROMPT_TAIL`` output format and the recorded
history in the same file ("Action: left_click(start_box='[586, 446]', element_info='OK
button')"). Points go through an identity mapper here.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from jarvis.llm.profiles.grammars import parse_glm
from jarvis.llm.types import ToolCall

AGENT_MD = "zai-org/GLM-V examples/gui-agent/glm-45v/agent.md"


def point(values: Sequence[float]) -> tuple[int, int]:
    if len(values) == 4:
        return round((values[0] + values[2]) / 2), round((values[1] + values[3]) / 2)
    return round(values[0]), round(values[1])


def pairs(calls: list[ToolCall]) -> list[tuple[str, dict]]:
    assert all(c.parse_error is None for c in calls), [c.parse_error for c in calls]
    return [(c.name, c.arguments) for c in calls]


ACTIONS = [
    (
        "left_click(start_box='[586, 446]', element_info='OK button')",
        [("click", {"x": 586, "y": 446})],
    ),
    ("right_click(start_box='[10,20]', element_info='')", [("right_click", {"x": 10, "y": 20})]),
    ("middle_click(start_box='[10,20]', element_info='')", [("middle_click", {"x": 10, "y": 20})]),
    ("hover(start_box='[30,40]', element_info='')", [("mouse_move", {"x": 30, "y": 40})]),
    (
        "left_double_click(start_box='[149, 70]', element_info='Image menu')",
        [("double_click", {"x": 149, "y": 70})],
    ),
    (
        "left_drag(start_box='[1,2]', end_box='[30,40]', element_info='')",
        [("drag", {"startX": 1, "startY": 2, "endX": 30, "endY": 40})],
    ),
    ("key(keys='ctrl+c')", [("hotkey", {"keys": "ctrl+c"})]),
    ("type(content='it's 北京 👍')", [("type", {"text": "it's 北京 👍"})]),
    (
        "scroll(start_box='[500,500]', direction='down', step=3, element_info='')",
        [("scroll", {"direction": "down", "amount": 3, "x": 500, "y": 500})],
    ),
    ("WAIT()", [("wait", {"ms": 5000})]),
    ("DONE()", [("finished", {"summary": "the task is done"})]),
    ("FAIL()", [("call_user", {"message": "the model needs the user's help"})]),
]


@pytest.mark.parametrize(("action", "expected"), ACTIONS, ids=[a for a, _ in ACTIONS])
def test_every_glm_action_in_box_tokens(action: str, expected: list) -> None:
    """Each call rule of ``AGENT_MD``'s desktop action space, as the model writes it."""
    text = f"I'll do it now.\n<|begin_of_box|>{action}<|end_of_box|>\nMemory:\n[]"
    assert pairs(parse_glm(text, point)) == expected


@pytest.mark.parametrize(("action", "expected"), ACTIONS, ids=[a for a, _ in ACTIONS])
def test_every_glm_action_with_box_tokens_stripped(action: str, expected: list) -> None:
    """The same with the tokens stripped by the server: left_double_click stays a double
    click (it was read as a single ``click`` before), middle_click a middle click."""
    text = f"Thought: I'll open it, the user's file.\nAction: {action}\nMemory:\n[]"
    assert pairs(parse_glm(text, point)) == expected


def test_glm_reasoning_is_not_read_for_calls() -> None:
    text = (
        "<think>maybe left_click(start_box='[1,1]')</think>"
        "<answer>The menu. left_double_click(start_box='[149, 70]', element_info='')</answer>"
    )
    assert pairs(parse_glm(text, point)) == [("double_click", {"x": 149, "y": 70})]


@pytest.mark.slow
@pytest.mark.usefixtures("xserver")
async def test_glm_double_and_middle_click_without_box_tokens_reach_the_screen(
    tkapp, fake_model, tmp_path, monkeypatch
) -> None:
    """Through the real OpenAI SDK, the glm-4.5v profile and the input device on Xvfb: the
    answers as vLLM returns them with special tokens stripped (``AGENT_MD``'s output format:
    explanation, call, Memory), a double click and a middle click within 1 px."""
    from jarvis.desktop.screen import Size
    from jarvis.geometry import from_screen
    from jarvis.llm.profiles.catalog import PROFILES
    from jarvis.llm.profiles.select import geometry
    from tests.agent_harness import agent_settings, run_agent
    from tests.fake_model import Reply

    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, provider="openai", openai_model="zai-org/GLM-4.5V"
    )
    screen = Size(*tkapp.screen)
    _, image = geometry(PROFILES["glm-4.5v"], screen, settings)
    pad = tkapp.widget_center("pad")
    first, second = (pad[0] - 120, pad[1] + 100), (pad[0] + 120, pad[1] + 100)
    (ax, ay), (bx, by) = (
        [round(v) for v in from_screen(*p, PROFILES["glm-4.5v"].space, image, screen)]
        for p in (first, second)
    )
    fake_model.script(
        Reply(
            text="I'll open the item.\nleft_double_click(start_box='"
            f"[{ax}, {ay}]', element_info='item')\nMemory:\n[]"
        ),
        Reply(text=f"Paste here.\nmiddle_click(start_box='[{bx}, {by}]', element_info='')"),
        Reply(text="All done.\nDONE()\nMemory:\n[]"),
        Reply(text='{"done": true, "reason": "both clicks arrived"}'),
    )
    outcome, _ = await run_agent(settings, "double-click the item, middle-click the other")
    assert outcome.status == "finished", outcome.summary
    doubles = [e for e in tkapp.events("double") if e["button"] == 1]
    middles = [e for e in tkapp.events("click") if e["button"] == 2]
    assert len(doubles) == 1 and len(middles) == 1
    for event, target in ((doubles[0], first), (middles[0], second)):
        assert abs(event["x"] - target[0]) <= 1 and abs(event["y"] - target[1]) <= 1
