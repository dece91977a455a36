"""The pyautogui grammar (OpenCUA, Aguvis, EvoCUA's S1 style), the Holo3 JSON step and
UI-Venus-1.5's actions: answers as the models' own data and prompts write them, in, tool
calls out (pure). The point function here is the identity on a 1000x1000 grid, so the
tool arguments are the numbers as written (scaled x1000 for 0..1 answers)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from jarvis.llm.profiles.grammars import parse_holo, parse_pyautogui, parse_venus
from jarvis.llm.types import ToolCall


def unit(values: Sequence[float]) -> tuple[int, int]:
    """0..1 answers onto a 1000x1000 grid."""
    return round(values[0] * 1000), round(values[1] * 1000)


def same(values: Sequence[float]) -> tuple[int, int]:
    return round(values[0]), round(values[1])


def calls(parsed: list[ToolCall]) -> list[tuple[str, dict]]:
    assert all(c.parse_error is None for c in parsed), [c.parse_error for c in parsed]
    return [(c.name, c.arguments) for c in parsed]


# xlang-ai/OpenCUA evaluation/agentnetbench/sample_data/s_5473959e0f6e21f7.json and
# s_7f27a11115e596eb.json (AgentNet steps); data/cot-generate/gen_cot_example/raw_example.jsonl
OPENCUA_DATA = [
    ("pyautogui.hotkey(keys=['ctrl', 'c'])", [("hotkey", {"keys": "ctrl+c"})]),
    ("pyautogui.hotkey(keys=['ctrl', 'v'])", [("hotkey", {"keys": "ctrl+v"})]),
    ("pyautogui.press(keys=['enter'])", [("press_key", {"key": "enter"})]),
    ("computer.terminate(status='success')", [("finished", {"summary": "the task is done"})]),
    ("pyautogui.click(x=0.5534, y=0.3984)", [("click", {"x": 553, "y": 398})]),
    (  # s_5473959e0f6e21f7.json step 0: moveTo and dragTo in one step
        "pyautogui.moveTo(x=0.328, y=0.4697)\npyautogui.dragTo(x=0.5025, y=0.6039, button='left')",
        [
            ("mouse_move", {"x": 328, "y": 470}),
            ("drag", {"startX": 328, "startY": 470, "endX": 502, "endY": 604}),
        ],
    ),
    (  # s_df0fd37049f470c2.json step 3: a scroll where moveTo put the pointer
        "pyautogui.moveTo(x=0.7792, y=0.4648)\npyautogui.scroll(-3)",
        [
            ("mouse_move", {"x": 779, "y": 465}),
            ("scroll", {"x": 779, "y": 465, "direction": "down", "amount": 3}),
        ],
    ),
    (  # s_7f27a11115e596eb.json step 6: 54 wheel clicks (Windows units), at most 50 here
        "pyautogui.moveTo(x=0.4496, y=0.7349)\npyautogui.scroll(-54)",
        [
            ("mouse_move", {"x": 450, "y": 735}),
            ("scroll", {"x": 450, "y": 735, "direction": "down", "amount": 50}),
        ],
    ),
    ("pyautogui.write(message='george orwell')", [("type", {"text": "george orwell"})]),
]


@pytest.mark.parametrize(("code", "expected"), OPENCUA_DATA)
def test_opencua_training_data_runs_as_written(code: str, expected: list) -> None:
    assert calls(parse_pyautogui(f"## Code:\n```python\n{code}\n```", unit)) == expected


# the forms OpenCUA's own evaluator reads (evaluation/agentnetbench/agent/opencua.py
# extract_actions: keys=[...], positional hotkey, press of a list, computer.triple_click)
# and pyautogui's own signatures (press presses each key of a list in turn)
VOCABULARY = [
    ("pyautogui.hotkey('ctrl', 'v')", [("hotkey", {"keys": "ctrl+v"})]),
    ("pyautogui.hotkey(['ctrl', 'shift', 't'])", [("hotkey", {"keys": "ctrl+shift+t"})]),
    ("pyautogui.press('enter')", [("press_key", {"key": "enter"})]),
    (
        "pyautogui.press(['down', 'down'])",
        [("press_key", {"key": "down"}), ("press_key", {"key": "down"})],
    ),
    (
        "pyautogui.press('tab', presses=3)",
        [("press_key", {"key": "tab"})] * 3,
    ),
    ("computer.triple_click(x=0.5, y=0.3)", [("triple_click", {"x": 500, "y": 300})]),
    ("pyautogui.tripleClick(x=0.5, y=0.3)", [("triple_click", {"x": 500, "y": 300})]),
    ("pyautogui.click(x=0.5, y=0.3, clicks=2)", [("double_click", {"x": 500, "y": 300})]),
    ("pyautogui.click(x=0.5, y=0.3, button='right')", [("right_click", {"x": 500, "y": 300})]),
    (
        "pyautogui.keyDown('shift')\npyautogui.press('tab')\npyautogui.keyUp('shift')",
        [("hotkey", {"keys": "shift+tab"})],
    ),
    (
        "pyautogui.keyDown('ctrl')\npyautogui.keyDown('shift')\npyautogui.press('esc')\n"
        "pyautogui.keyUp('shift')\npyautogui.keyUp('ctrl')",
        [("hotkey", {"keys": "ctrl+shift+esc"})],
    ),
    ("pyautogui.keyDown('shift')\npyautogui.keyUp('shift')", [("press_key", {"key": "shift"})]),
    (
        "pyautogui.scroll(-3, x=0.2, y=0.4)",
        [("scroll", {"x": 200, "y": 400, "direction": "down", "amount": 3})],
    ),
    (
        "pyautogui.hscroll(5, x=0.2, y=0.4)",
        [("scroll", {"x": 200, "y": 400, "direction": "right", "amount": 5})],
    ),
    (
        "pyautogui.mouseDown(x=0.1, y=0.1)\npyautogui.moveTo(x=0.3, y=0.3)\npyautogui.mouseUp()",
        [("drag", {"startX": 100, "startY": 100, "endX": 300, "endY": 300})],
    ),
    ("computer.wait(seconds=2)", [("wait", {"ms": 2000})]),
    ("computer.wait(seconds=20)", [("wait", {"ms": 10000})]),  # EvoCUA's S1 waits 20 s
    # meituan/EvoCUA mm_agents/evocua/prompts.py S1_SYSTEM_PROMPT: terminate with an answer
    (
        "computer.terminate(status=\"success\", answer='''42 files''')",
        [("finished", {"summary": "42 files"})],
    ),
    (
        "computer.terminate(status='failure')",
        [("call_user", {"message": "the model could not finish the task"})],
    ),
    # OpenCUA data/data-process/src/schema/action.py: answer('...') before terminate
    ("answer('Paris')\ncomputer.terminate(status='success')", [("finished", {"summary": "Paris"})]),
    ("answer('Paris')", [("finished", {"summary": "Paris"})]),
    ("time.sleep(1.5)", [("wait", {"ms": 1500})]),
]


@pytest.mark.parametrize(("code", "expected"), VOCABULARY)
def test_the_whole_vocabulary(code: str, expected: list) -> None:
    assert calls(parse_pyautogui(code, unit)) == expected


def test_press_of_a_listed_key_is_never_a_key_named_like_the_list() -> None:
    """The bug of issue 35: press(keys=['enter']) pressed a key named "['enter']"."""
    (call,) = parse_pyautogui("pyautogui.press(keys=['enter'])", unit)
    assert call.arguments == {"key": "enter"} and "[" not in str(call.arguments)


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("pyautogui.middleClick(x=0.1, y=0.1)", "middleClick is not available"),
        ("pyautogui.click(x=0.1, y=0.1, clicks=4)", "clicks=4"),
        ("pyautogui.keyDown('ctrl')\npyautogui.click(x=0.1, y=0.1)", "held down"),
        ("pyautogui.keyDown('ctrl')", "never released"),
        ("pyautogui.mouseUp(x=0.1, y=0.1)", "without a mouseDown"),
        ("pyautogui.hotkey()", "needs a key"),
        ("pyautogui.click()", "needs x and y"),
        ("computer.open_app('files')", "unsupported call"),
    ],
)
def test_what_cannot_run_is_told_to_the_model(code: str, error: str) -> None:
    parsed = parse_pyautogui(code, unit)
    assert any(c.parse_error and error in c.parse_error for c in parsed), parsed


# hub.hcompany.ai agent-loop page, "Output JSON": the example step, verbatim
HOLO_STEP = (
    '{\n  "note": "Submit succeeded; receipt URL is /orders/8421.",\n'
    '  "thought": "Recording the receipt URL before navigating away.",\n'
    '  "tool_call": {\n    "tool_name": "click",\n'
    '    "element": "Continue button at the bottom right",\n    "x": 932,\n    "y": 880\n  }\n}'
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (HOLO_STEP, [("click", {"x": 932, "y": 880})]),
        (f"```json\n{HOLO_STEP}\n```", [("click", {"x": 932, "y": 880})]),
        (
            '{"note": null, "thought": "t", "tool_call": {"tool_name": "write", "content": "hi",'
            ' "press_enter": true}}',
            [("type", {"text": "hi"}), ("press_key", {"key": "enter"})],
        ),
        (
            '{"note": null, "thought": "t", '
            '"tool_call": {"tool_name": "press", "keys": ["ctrl", "s"]}}',
            [("hotkey", {"keys": "ctrl+s"})],
        ),
        (
            '{"note": null, "thought": "t", "tool_call": {"tool_name": "answer", "content": "3"}}',
            [("finished", {"summary": "3"})],
        ),
        # Holo1's navigation step (the Parasail cookbook's ClickElementAction)
        (
            '{"note": "", "thought": "t", "action": {"action": "click_element", '
            '"element": "August 6th", "x": 657, "y": 318}}',
            [("click", {"x": 657, "y": 318})],
        ),
    ],
)
def test_holo3_steps(text: str, expected: list) -> None:
    assert calls(parse_holo(text, same)) == expected


def test_a_holo3_reply_without_a_step_is_told_the_format() -> None:
    (call,) = parse_holo("I will click Continue.", same)
    assert call.parse_error and "tool_call" in call.parse_error


# inclusionAI/UI-Venus models/navigation/utils.py WEB_USER_PROMPT: the action space and
# the <think>/<action>/<conclusion> output format
@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("Click(box=(512,300))", [("click", {"x": 512, "y": 300})]),
        ("DoubleClick(box=(10,20))", [("double_click", {"x": 10, "y": 20})]),
        ("Hover(box=(10,20))", [("mouse_move", {"x": 10, "y": 20})]),
        (
            "Drag(start=(10,20), end=(30,40))",
            [("drag", {"startX": 10, "startY": 20, "endX": 30, "endY": 40})],
        ),
        (
            "Scroll(direction='down')",
            [("scroll", {"x": 500, "y": 500, "direction": "down", "amount": 5})],
        ),
        (
            "Scroll(start=(500,800), end=(500,200))",  # a swipe up shows what is below
            [("scroll", {"x": 500, "y": 800, "direction": "down", "amount": 5})],
        ),
        ("Type(content='hello')", [("type", {"text": "hello"}), ("press_key", {"key": "enter"})]),
        ("Hotkey(keys=['ctrl', 'c'])", [("hotkey", {"keys": "ctrl+c"})]),
        ("PressEnter()", [("press_key", {"key": "enter"})]),
        ("Finished(content='done')", [("finished", {"summary": "done"})]),
        ("CallUser(content='the price is 3')", [("call_user", {"message": "the price is 3"})]),
    ],
)
def test_ui_venus_actions(action: str, expected: list) -> None:
    text = f"<think> the box </think>\n<action>{action}</action>\n<conclusion> ok </conclusion>"
    assert calls(parse_venus(text, same)) == expected


def test_ui_venus_phone_actions_are_refused_with_a_reason() -> None:
    (call,) = parse_venus("<action>PressBack()</action>", same)
    assert call.parse_error and "phone action" in call.parse_error
