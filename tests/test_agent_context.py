"""Pure parts of the loop: message building, thought parsing, verdicts, stall detection."""

from __future__ import annotations

import pytest

from jarvis.agent.context import Turn, build_messages, parse_thought, parse_verdict
from jarvis.agent.stall import StallDetector
from jarvis.llm.types import ImagePart, TextPart, ToolCall, ToolResultPart


def img(tag: str) -> ImagePart:
    return ImagePart.from_bytes(tag.encode(), "image/jpeg")


def turn(step: int) -> Turn:
    call = ToolCall(id=f"c{step}", name="click", arguments={"x": step, "y": step})
    return Turn(
        step=step,
        screenshot=img(f"s{step}"),
        prompt=f"step {step}",
        text=f"Thought: click {step}",
        tool_calls=[call],
        results=[ToolResultPart(call_id=f"c{step}", name="click", ok=True, content="{}")],
    )


def images(messages: list) -> list[str]:
    return [p.data_b64 for m in messages for p in m.content if isinstance(p, ImagePart)]


def test_first_step_is_one_user_message() -> None:
    msgs = build_messages("HEADER", [], img("now"), "step 1", keep_images=3)
    assert [m.role for m in msgs] == ["user"]
    assert msgs[0].content[0] == TextPart(text="HEADER")
    assert images(msgs) == [img("now").data_b64]


def test_turns_alternate_and_results_come_first() -> None:
    msgs = build_messages("H", [turn(1), turn(2)], img("now"), "step 3", keep_images=3)
    assert [m.role for m in msgs] == ["user", "assistant", "user", "assistant", "user"]
    assert msgs[1].tool_calls[0].id == "c1"
    assert isinstance(msgs[2].content[0], ToolResultPart)
    assert isinstance(msgs[4].content[0], ToolResultPart)
    assert msgs[4].content[0].call_id == "c2"


@pytest.mark.parametrize(("n_turns", "keep", "expected_images"), [(0, 3, 1), (2, 3, 3), (5, 3, 3)])
def test_only_recent_images_kept(n_turns: int, keep: int, expected_images: int) -> None:
    turns = [turn(i) for i in range(1, n_turns + 1)]
    msgs = build_messages("H", turns, img("now"), "p", keep_images=keep)
    kept = images(msgs)
    assert len(kept) == expected_images
    assert kept[-1] == img("now").data_b64


@pytest.mark.parametrize(
    ("text", "reflection", "thought"),
    [
        ("Reflection: it worked.\nThought: click OK.", "it worked.", "click OK."),
        ("**Reflection:** nope\n**Thought:** retry", "nope", "retry"),
        ("just clicking", "", "just clicking"),
        ("Thought: only a thought", "", "only a thought"),
        ("", "", ""),
    ],
)
def test_parse_thought(text: str, reflection: str, thought: str) -> None:
    assert parse_thought(text) == (reflection, thought)


@pytest.mark.parametrize(
    ("text", "done"),
    [
        ('{"done": true, "reason": "box shows hello"}', True),
        ('Here: {"done": false, "reason": "empty"}', False),
        ('```json\n{"done": "yes", "reason": "x"}\n```', True),
        ("Yes, it is done.", True),
        ("No.", False),
        ("", False),
        ("{broken", False),
    ],
)
def test_parse_verdict(text: str, done: bool) -> None:
    assert parse_verdict(text)[0] is done


def test_stall_warns_then_stuck() -> None:
    det = StallDetector()
    click = [ToolCall(id="a", name="click", arguments={"x": 1, "y": 2})]
    same_again = [ToolCall(id="b", name="click", arguments={"x": 1, "y": 2})]
    assert det.check("h1", click) == "ok"
    assert det.check("h1", same_again) == "warn"
    assert det.check("h1", click) == "stuck"


def test_stall_resets_when_screen_or_action_changes() -> None:
    det = StallDetector()
    click = [ToolCall(id="a", name="click", arguments={"x": 1, "y": 2})]
    other = [ToolCall(id="a", name="click", arguments={"x": 5, "y": 2})]
    assert det.check("h1", click) == "ok"
    assert det.check("h2", click) == "ok"  # the screen changed
    assert det.check("h2", other) == "ok"  # a different action
    assert det.check("h2", other) == "warn"
    assert det.check("h3", other) == "ok"
