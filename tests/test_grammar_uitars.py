"""UI-TARS-1.5 and Doubao answers as their makers write them, read into Jarvis's calls (pure).

Each answer's form comes from the model's own sources, named in its case:
bytedance/UI-TARS ``codes/ui_tars/prompt.py`` (the COMPUTER_USE_DOUBAO action space the
model is trained on), bytedance/UI-TARS ``codes/ui_tars/action_parser.py`` (what its
parser repairs), and bytedance/UI-TARS-desktop
``packages/ui-tars/action-parser/test/index.test.ts`` and
``packages/ui-tars/action-parser/test/actionParser.test.ts`` (recorded predictions).
Points go through an identity mapper here; a box reads as its centre.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from jarvis.llm.profiles.grammars import parse_uitars
from jarvis.llm.types import ToolCall

PROMPT_PY = "bytedance/UI-TARS codes/ui_tars/prompt.py"
PARSER_PY = "bytedance/UI-TARS codes/ui_tars/action_parser.py"
DESKTOP_TEST = "bytedance/UI-TARS-desktop packages/ui-tars/action-parser/test/index.test.ts"
DESKTOP_TEST2 = "bytedance/UI-TARS-desktop packages/ui-tars/action-parser/test/actionParser.test.ts"
NUTJS = "bytedance/UI-TARS-desktop packages/ui-tars/operators/nut-js/src/index.ts"


def point(values: Sequence[float]) -> tuple[int, int]:
    if len(values) == 4:
        return round((values[0] + values[2]) / 2), round((values[1] + values[3]) / 2)
    return round(values[0]), round(values[1])


def pairs(calls: list[ToolCall]) -> list[tuple[str, dict]]:
    assert all(c.parse_error is None for c in calls), [c.parse_error for c in calls]
    return [(c.name, c.arguments) for c in calls]


CASES = [
    pytest.param(  # the drag of the Doubao action space, start_point read
        "Thought: drag the slider.\nAction: drag(start_point='<point>458 328</point>', "
        "end_point='<point>350 309</point>')",
        [("drag", {"startX": 458, "startY": 328, "endX": 350, "endY": 309})],
        id=f"drag start_point/end_point ({PROMPT_PY})",
    ),
    pytest.param(  # click(point='<point>x1 y1</point>') of the same action space
        "Thought: Click the button\nAction: click(point='<point>510 150</point>')",
        [("click", {"x": 510, "y": 150})],
        id=f"click point ({PROMPT_PY})",
    ),
    pytest.param(  # an apostrophe in the Thought changes nothing in the Action's text
        "Thought: I'll type the reply in Chinese.\nAction: type(content='订单号：（A-17）')",
        [("type", {"text": "订单号：（A-17）"})],
        id="apostrophe in the thought, full-width text kept",
    ),
    pytest.param(  # an unescaped apostrophe, which ByteDance's parser escapes on purpose
        "Thought: type the title.\nAction: type(content='don't stop me now')",
        [("type", {"text": "don't stop me now"})],
        id=f"unescaped apostrophe ({PARSER_PY} escape_single_quotes)",
    ),
    pytest.param(  # escaped as the prompt asks ("Use escape characters \\', \\\"")
        "Thought: t\nAction: type(content='it\\'s \\\"fine\\\"')",
        [("type", {"text": 'it\'s "fine"'})],
        id=f"escaped quotes ({PROMPT_PY})",
    ),
    pytest.param(
        "Thought: done.\nAction: finished(content='Sent the report.\nTotal: 3 files\n"
        "Next: nothing')",
        [("finished", {"summary": "Sent the report.\nTotal: 3 files\nNext: nothing"})],
        id=f"finished with real line breaks ({PARSER_PY} replace('\\n', '\\\\n'))",
    ),
    pytest.param(
        "Thought: I need a password.\nAction: call_user(content='The site asks for a code.\n"
        "Which one should I use?')",
        [("call_user", {"message": "The site asks for a code.\nWhich one should I use?"})],
        id="call_user with real line breaks",
    ),
    pytest.param(  # each trailing newline is one Enter (nut-js types all but the last, then Enter)
        "Thought: total then two returns.\nAction: type(content='total\\n\\n')",
        [
            ("type", {"text": "total"}),
            ("press_key", {"key": "enter"}),
            ("press_key", {"key": "enter"}),
        ],
        id=f"two trailing newlines, two Enters ({NUTJS})",
    ),
    pytest.param(  # a real line break in the content, as recorded in UI-TARS-desktop's test
        "Thought: 我已经点击了地址栏，现在需要输入网址doubao.com。"
        "地址栏已经被激活，可以直接输入网址。"
        "\nAction: type(content='doubao.com\n')",
        [("type", {"text": "doubao.com"}), ("press_key", {"key": "enter"})],
        id=f"type with a real newline ({DESKTOP_TEST})",
    ),
    pytest.param(
        "Thought: swipe(start_box='(693,685)', end_box='(724,300)')"
        "\n\nAction: scroll(direction='left')",
        [("scroll_here", {"direction": "left", "amount": 5})],
        id=f"scroll without a point scrolls where the pointer is ({DESKTOP_TEST})",
    ),
    pytest.param(
        "Thought: select a range.\nAction: press(key='shift')",
        [("key_down", {"key": "shift"})],
        id=f"press holds the key ({NUTJS} case 'press')",
    ),
    pytest.param(
        "Thought: t\nAction: keydown(key='ctrl shift')",
        [("key_down", {"key": "ctrl"}), ("key_down", {"key": "shift"})],
        id=f"keydown holds each key ({PARSER_PY} keyDown)",
    ),
    pytest.param(
        "Thought: t\nAction: release(key='ctrl shift')",
        [("key_up", {"key": "shift"}), ("key_up", {"key": "ctrl"})],
        id=f"release lets go, last first ({NUTJS} case 'release')",
    ),
    pytest.param(
        "Thought: t\nAction: keyup(key='shift')",
        [("key_up", {"key": "shift"})],
        id=f"keyup ({PARSER_PY} keyUp)",
    ),
    pytest.param(
        "Reflection: 在桌面上我看到了Chrome浏览器的图标，"
        "根据任务要求需要打开Chrome浏览器，应该双击该图标来启动浏览器。"
        "\nAction_Summary: 在桌面上找到Chrome浏览器图标的位置，通过双击操作来打开浏览器。"
        "\nAction: left_double(start_box='21, 246, 21, 246')",
        [("double_click", {"x": 21, "y": 246})],
        id=f"Reflection/Action_Summary ({DESKTOP_TEST})",
    ),
    pytest.param(
        "\n\nAction：click(start_box='<bbox>191 21 191 21</bbox>')",
        [("click", {"x": 191, "y": 21})],
        id=f"full-width colon after Action ({DESKTOP_TEST2})",
    ),
    pytest.param(
        "Thought: 我需要先点击任务栏上的浏览器图标来启动浏览器。"
        "\nAction: click(start_box='[637,964,637,964]')",
        [("click", {"x": 637, "y": 964})],
        id=f"[x1,y1,x2,y2] box ({DESKTOP_TEST2})",
    ),
    pytest.param(
        "Thought: 在当前的界面中，我看到有多个窗口和文件。\nAction: click(start_box='(100,100)')"
        "\n\nAction: type(content='doubao.com')",
        [("type", {"text": "doubao.com"})],
        id=f"the last Action line is the action ({DESKTOP_TEST})",
    ),
    pytest.param(
        "Action_Summary: 粘贴使用 ctrl+v。\nAction: hotkey(key='ctrl v')",
        [("hotkey", {"keys": "ctrl+v"})],
        id=f"hotkey ({DESKTOP_TEST})",
    ),
    pytest.param(
        "Thought: two actions.\nAction: click(start_box='(1,1)')\n\ntype(content='it's (b), c')",
        [("click", {"x": 1, "y": 1}), ("type", {"text": "it's (b), c"})],
        id="several calls, the last with an apostrophe",
    ),
    pytest.param(
        "Thought: 点击。\nAction: click（start_box='（10，20）'）",
        [("click", {"x": 10, "y": 20})],
        id="full-width brackets of the call itself repaired",
    ),
    pytest.param(
        "Thought: emoji.\nAction: type(content='great 👍 — ok')",
        [("type", {"text": "great 👍 — ok"})],
        id="emoji kept",
    ),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_uitars_answers(text: str, expected: list) -> None:
    assert pairs(parse_uitars(text, point)) == expected


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("Thought: t\nAction: drag(start_point='<point>1 2</point>')", "end_box"),
        ("Thought: t\nAction: press(key='')", "needs a key"),
        ("Thought: t\nAction: type(content='never closed", "never closed"),
        ("Thought: t\nAction: open_app(app_name='Chrome')", "unknown action 'open_app'"),
    ],
)
def test_uitars_refusals_say_why_in_one_line(text: str, error: str) -> None:
    calls = parse_uitars(text, point)
    assert len(calls) == 1 and calls[0].parse_error is not None
    assert error in calls[0].parse_error and "\n" not in calls[0].parse_error


def test_doubao_fixed_prompt_is_bytedances_own_byte_for_byte() -> None:
    """Volcengine (https://www.volcengine.com/docs/82379/1536429) requires the fixed
    template; it is COMPUTER_USE_DOUBAO of bytedance/UI-TARS codes/ui_tars/prompt.py, which
    the pip package ui-tars ships as ui_tars.prompt."""
    from ui_tars.prompt import COMPUTER_USE_DOUBAO

    from jarvis.llm.profiles.grammar_prompts import fixed_prompt

    task = "Open the order 'A-17' and mark it paid"
    ours = fixed_prompt("doubao", task, language="Chinese")
    assert ours == COMPUTER_USE_DOUBAO.format(language="Chinese", instruction=task)
    assert fixed_prompt("ui-tars-1.5", task) is None
