"""The action grammars: each model's raw answer in, our tool calls out (pure).

Coordinates pass through an identity ``point`` here; their mapping is tested per profile
in tests/test_profiles.py. Hostile and broken answers become calls with ``parse_error``
(reported back to the model), never exceptions, and code is parsed, never run.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from jarvis.desktop.screen import Size
from jarvis.llm.profiles import qwen_tool
from jarvis.llm.profiles.adapter import collapse_origins, grammar_history
from jarvis.llm.profiles.grammars import parse_glm, parse_pyautogui, parse_uitars
from jarvis.llm.types import Message, ToolCall, ToolResultPart


def point(values: Sequence[float]) -> tuple[int, int]:
    if len(values) == 4:
        return round((values[0] + values[2]) / 2), round((values[1] + values[3]) / 2)
    return round(values[0]), round(values[1])


def pairs(calls: list[ToolCall]) -> list[tuple[str, dict]]:
    return [(c.name, c.arguments) for c in calls]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Thought: go\nAction: click(start_box='(10,20)')", [("click", {"x": 10, "y": 20})]),
        (
            "Thought: go\nAction: left_double(start_box='<|box_start|>(5,6)<|box_end|>')",
            [("double_click", {"x": 5, "y": 6})],
        ),
        ("Action: right_single(start_box='(1,2)')", [("right_click", {"x": 1, "y": 2})]),
        (
            "Action: drag(start_box='(1,2)', end_box='(30,40)')",
            [("drag", {"startX": 1, "startY": 2, "endX": 30, "endY": 40})],
        ),
        ("Action: hotkey(key='ctrl c')", [("hotkey", {"keys": "ctrl+c"})]),
        ("Action: hotkey(key='enter')", [("press_key", {"key": "enter"})]),
        (
            "Action: type(content='hello\\n')",
            [("type", {"text": "hello"}), ("press_key", {"key": "enter"})],
        ),
        (
            "Action: scroll(start_box='(5,5)', direction='up')",
            [("scroll", {"direction": "up", "amount": 5, "x": 5, "y": 5})],
        ),
        ("Action: wait()", [("wait", {"ms": 5000})]),
        ("Action: finished(content='all done')", [("finished", {"summary": "all done"})]),
        ("Action: click(start_box='[10,10,30,50]')", [("click", {"x": 20, "y": 30})]),
        (
            "Thought: two\nAction: click(start_box='(1,1)')\n\ntype(content='a (b) c')",
            [("click", {"x": 1, "y": 1}), ("type", {"text": "a (b) c"})],
        ),
    ],
)
def test_ui_tars(text: str, expected: list) -> None:
    calls = parse_uitars(text, point)
    assert pairs(calls) == expected
    assert all(c.parse_error is None for c in calls)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("Thought: I am unsure.", "no 'Action:' line"),
        ("Action: teleport(start_box='(1,2)')", "unknown action"),
        ("Action: click(start_box='(1,2,3)')", "point"),
        ("Action: click(start_box=__import__('os').system('id'))", "literals"),
        ("Action: click(start_box='(1,2)'", "never closed"),
    ],
)
def test_ui_tars_errors(text: str, error: str) -> None:
    calls = parse_uitars(text, point)
    assert len(calls) == 1 and calls[0].parse_error is not None
    assert error in calls[0].parse_error


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<|begin_of_box|>[100,200,300,400]<|end_of_box|>", [("click", {"x": 200, "y": 300})]),
        (
            "ok <|begin_of_box|>left_click(start_box='[7,8]')<|end_of_box|>",
            [("click", {"x": 7, "y": 8})],
        ),
        (
            "<|begin_of_box|>hover(start_box='[7,8]')<|end_of_box|>",
            [("mouse_move", {"x": 7, "y": 8})],
        ),
        ("<|begin_of_box|>key(keys='ctrl a')<|end_of_box|>", [("hotkey", {"keys": "ctrl+a"})]),
        ("<|begin_of_box|>done(content='ok')<|end_of_box|>", [("finished", {"summary": "ok"})]),
        (
            "<|begin_of_box|>fail(content='no login')<|end_of_box|>",
            [("call_user", {"message": "no login"})],
        ),
    ],
)
def test_glm(text: str, expected: list) -> None:
    assert pairs(parse_glm(text, point)) == expected


def test_glm_without_any_action_is_an_error() -> None:
    calls = parse_glm("I am not sure what to do here.", point)
    assert calls[0].parse_error is not None and "begin_of_box" in calls[0].parse_error


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("```python\npyautogui.click(x=5, y=6)\n```", [("click", {"x": 5, "y": 6})]),
        ("pyautogui.doubleClick(3, 4)", [("double_click", {"x": 3, "y": 4})]),
        ("pyautogui.click(x=5, y=6, clicks=2)", [("double_click", {"x": 5, "y": 6})]),
        ("pyautogui.rightClick(x=1, y=1)", [("right_click", {"x": 1, "y": 1})]),
        (
            "pyautogui.moveTo(1, 2)\npyautogui.dragTo(9, 8)",
            [
                ("mouse_move", {"x": 1, "y": 2}),
                ("drag", {"startX": 1, "startY": 2, "endX": 9, "endY": 8}),
            ],
        ),
        ("pyautogui.write(message='hi')", [("type", {"text": "hi"})]),
        ("pyautogui.hotkey('ctrl', 's')", [("hotkey", {"keys": "ctrl+s"})]),
        ("pyautogui.press('enter')", [("press_key", {"key": "enter"})]),
        (
            "pyautogui.scroll(-5, x=10, y=20)",
            [("scroll", {"x": 10, "y": 20, "direction": "down", "amount": 5})],
        ),
        ("computer.terminate(status='success')", [("finished", {"summary": "the task is done"})]),
        (
            "computer.terminate(status='failure')",
            [("call_user", {"message": "the model could not finish the task"})],
        ),
    ],
)
def test_pyautogui(text: str, expected: list) -> None:
    assert pairs(parse_pyautogui(text, point)) == expected


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("pyautogui.dragTo(9, 8)", "moveTo before"),
        ("pyautogui.screenshot()", "unsupported"),
        ("import os\nos.system('rm -rf /')", "no pyautogui call"),
        ("pyautogui.click(x=os.getenv('X'), y=1)", "literals"),
    ],
)
def test_pyautogui_errors(text: str, error: str) -> None:
    calls = parse_pyautogui(text, point)
    assert calls[0].parse_error is not None and error in calls[0].parse_error


def test_qwen_tool_calls_and_errors() -> None:
    grid = Size(1000, 1000)
    calls = qwen_tool.calls_from(
        [
            ToolCall(
                id="a",
                name="computer_use",
                arguments={"action": "mouse_move", "coordinate": [5, 6]},
            ),
            ToolCall(
                id="b",
                name="computer_use",
                arguments={"action": "left_click_drag", "coordinate": [9, 9]},
            ),
            ToolCall(
                id="c", name="computer_use", arguments={"action": "key", "keys": ["ctrl", "s"]}
            ),
            ToolCall(id="d", name="computer_use", arguments={"action": "scroll", "pixels": 4}),
            ToolCall(id="e", name="computer_use", arguments={"action": "fly"}),
            ToolCall(
                id="f",
                name="computer_use",
                arguments={"action": "left_click", "coordinate": ["a", 1]},
            ),
            ToolCall(id="g", name="remember", arguments={"text": "x"}),
        ],
        point,
        grid,
    )
    assert pairs(calls[:4]) == [
        ("mouse_move", {"x": 5, "y": 6}),
        ("drag", {"startX": 5, "startY": 6, "endX": 9, "endY": 9}),
        ("hotkey", {"keys": "ctrl+s"}),
        ("scroll", {"x": 9, "y": 9, "direction": "up", "amount": 4}),
    ]
    assert "not supported" in (calls[4].parse_error or "")
    assert "numbers" in (calls[5].parse_error or "")
    assert calls[6].name == "remember" and calls[6].origin is None
    assert all(c.origin and c.origin["name"] == "computer_use" for c in calls[:6])


def test_histories_go_back_as_the_model_wrote_them() -> None:
    origin = {"id": "q1", "name": "computer_use", "input": {"action": "type", "text": "hi\n"}}
    calls = [
        ToolCall(id="q1_1", name="type", arguments={"text": "hi"}, origin=origin),
        ToolCall(id="q1_2", name="press_key", arguments={"key": "enter"}, origin=origin),
    ]
    results = [
        ToolResultPart(call_id="q1_1", name="type", ok=True, content="typed"),
        ToolResultPart(call_id="q1_2", name="press_key", ok=False, content="no key"),
    ]
    messages = [
        Message.user("go"),
        Message.assistant("Action: type(content='hi\\n')", calls),
        Message(role="user", content=[*results, *Message.user("next").content]),
    ]
    native = collapse_origins(messages)
    assert pairs(native[1].tool_calls) == [("computer_use", origin["input"])]
    merged = [p for p in native[2].content if isinstance(p, ToolResultPart)]
    assert len(merged) == 1 and merged[0].call_id == "q1" and merged[0].ok is False
    assert merged[0].content == "typed\nno key"
    text = grammar_history(messages)
    assert text[1].tool_calls == [] and text[1].text == "Action: type(content='hi\\n')"
    assert "[press_key: failed] no key" in text[2].text
