"""UI-TARS-1.5 and Doubao answers, written as their makers' sources write them, through the
real provider and profile path (the OpenAI SDK against the loopback FakeModel, the profile's
grammar and coordinate conversion, the tools) to the real input device on Xvfb, recorded by
the Tk app: within 1 px of the model's own conversion.

Answer forms: bytedance/UI-TARS ``codes/ui_tars/prompt.py`` (COMPUTER_USE_DOUBAO:
``drag(start_point='<point>x1 y1</point>', end_point='<point>x2 y2</point>')``,
``type(content='xxx')``, ``finished(content='xxx')``) and the key holds of its executor,
``codes/ui_tars/action_parser.py`` ``parsing_response_to_pyautogui_code`` (``press`` /
``keydown`` -> ``pyautogui.keyDown``, ``release`` / ``keyup`` -> ``pyautogui.keyUp``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from jarvis.desktop.screen import Size
from jarvis.geometry import from_screen
from jarvis.llm.profiles.catalog import PROFILES
from jarvis.llm.profiles.select import geometry
from tests.agent_harness import agent_settings, run_agent
from tests.fake_model import FakeModel, Reply
from tests.tkdriver import TkApp

pytestmark = [pytest.mark.usefixtures("xserver"), pytest.mark.slow]

VERIFIED = Reply(text='{"done": true, "reason": "it is on the screen"}')
DOUBAO = "doubao-1-5-ui-tars-250428"
UITARS = "ByteDance-Seed/UI-TARS-1.5-7B"


def answer(app: TkApp, at: tuple[int, int], profile: str, settings) -> tuple[int, int]:
    """The whole-number point a perfect model of ``profile`` answers for screen point ``at``."""
    screen = Size(*app.screen)
    _, image = geometry(PROFILES[profile], screen, settings)
    x, y = from_screen(*at, PROFILES[profile].space, image, screen)
    return round(x), round(y)


def near(a: list[int] | tuple[int, int], b: tuple[int, int]) -> bool:
    return abs(a[0] - b[0]) <= 1 and abs(a[1] - b[1]) <= 1


async def test_doubao_drag_cjk_text_and_a_multi_line_summary(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, provider="openai", openai_model=DOUBAO
    )
    pad = tkapp.widget_center("pad")
    start, end = (pad[0] - 200, pad[1] + 150), (pad[0] + 100, pad[1] + 250)
    (sx, sy), (ex, ey) = (answer(tkapp, p, "doubao", settings) for p in (start, end))
    box = tkapp.widget_center("box")
    bx, by = answer(tkapp, box, "doubao", settings)
    summary = "Dragged across the pad.\nTyped the order number: 订单号：（A-17）"
    fake_model.script(
        Reply(
            text="Thought: I'll drag across the pad first.\nAction: drag(start_point="
            f"'<point>{sx} {sy}</point>', end_point='<point>{ex} {ey}</point>')"
        ),
        Reply(text=f"Thought: Now the box.\nAction: click(point='<point>{bx} {by}</point>')"),
        Reply(
            text="Thought: I'll type the reply in Chinese."
            "\nAction: type(content='订单号：（A-17）')"
        ),
        Reply(text=f"Thought: It's done.\nAction: finished(content='{summary}')"),
        VERIFIED,
    )
    outcome, _ = await run_agent(settings, "drag across the pad, then type the order number")
    assert outcome.status == "finished", outcome.summary
    drags = tkapp.events("drag")
    assert len(drags) == 1 and near(drags[0]["start"], start) and near(drags[0]["end"], end)
    assert tkapp.entry_text() == "订单号：（A-17）"
    assert summary in outcome.summary
    assert "drag(start_point=" in fake_model.requests[1].all_text()  # history as written
    # Volcengine: GUI tasks must use the fixed prompt (ByteDance's COMPUTER_USE_DOUBAO)
    system = fake_model.requests[0].body["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("You are a GUI agent.")
    assert "## User Instruction\n" in system["content"] and "order number" in system["content"]


async def test_uitars_shift_held_over_a_click_and_let_go(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, provider="openai", openai_model=UITARS
    )
    pad = tkapp.widget_center("pad")
    first, second = (pad[0] - 150, pad[1] + 120), (pad[0] + 150, pad[1] + 120)
    (ax, ay), (cx, cy) = (answer(tkapp, p, "ui-tars-1.5", settings) for p in (first, second))
    fake_model.script(
        Reply(text="Thought: hold shift to extend the selection.\nAction: press(key='shift')"),
        Reply(text=f"Thought: shift-click the end.\nAction: click(start_box='({ax},{ay})')"),
        Reply(text="Thought: let shift go.\nAction: release(key='shift')"),
        Reply(text=f"Thought: a plain click.\nAction: click(start_box='({cx},{cy})')"),
        Reply(text="Thought: done.\nAction: finished(content='shift-clicked, then clicked')"),
        VERIFIED,
    )
    outcome, _ = await run_agent(settings, "shift-click the first point, click the second")
    assert outcome.status == "finished", outcome.summary
    clicks = [e for e in tkapp.events("click") if e["button"] == 1]
    assert [near((c["x"], c["y"]), p) for c, p in zip(clicks, [first, second], strict=True)] == [
        True,
        True,
    ]
    assert clicks[0]["state"] & 1 and not clicks[1]["state"] & 1  # Shift held, then not
    assert not shift_down()


async def test_a_key_held_at_the_end_of_a_task_is_let_go(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, provider="openai", openai_model=UITARS
    )
    fake_model.script(
        Reply(text="Thought: hold shift.\nAction: keydown(key='shift')"),
        Reply(text="Thought: done.\nAction: finished(content='held shift')"),
        VERIFIED,
    )
    subprocess.run(["xdotool", "keydown", "shift"], check=True)  # the check can see a key down
    assert shift_down()
    subprocess.run(["xdotool", "keyup", "shift"], check=True)
    assert not shift_down()
    outcome, _ = await run_agent(settings, "hold shift")
    assert outcome.status == "finished", outcome.summary
    assert any(e.get("keysym") == "Shift_L" for e in tkapp.events("key"))  # it went down
    assert not shift_down()


async def test_uitars_scroll_without_a_point_scrolls_where_the_pointer_is(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    """``scroll(direction='down')`` with no point, as recorded in bytedance/UI-TARS-desktop
    packages/ui-tars/action-parser/test/index.test.ts (``scroll(direction='left')``): five
    wheel clicks (ByteDance's executor: ``pyautogui.scroll(-5)``) where the pointer is."""
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, provider="openai", openai_model=UITARS
    )
    pad = tkapp.widget_center("pad")
    spot = (pad[0] + 200, pad[1] - 150)
    sx, sy = answer(tkapp, spot, "ui-tars-1.5", settings)
    fake_model.script(
        Reply(text=f"Thought: point at the list.\nAction: hover(start_box='({sx},{sy})')"),
        Reply(text="Thought: show more below.\nAction: scroll(direction='down')"),
        Reply(text="Thought: done.\nAction: finished(content='scrolled down')"),
        VERIFIED,
    )
    outcome, _ = await run_agent(settings, "scroll the list down")
    assert outcome.status == "finished", outcome.summary
    scrolls = tkapp.events("scroll")
    assert [e["direction"] for e in scrolls] == ["down"] * 5
    assert all(near((e["x"], e["y"]), spot) for e in scrolls)


def shift_down() -> bool:
    """Whether the X server has a Shift key down now."""
    from Xlib import XK, display

    d = display.Display()
    try:
        keys = d.query_keymap()
        codes = [d.keysym_to_keycode(XK.string_to_keysym(n)) for n in ("Shift_L", "Shift_R")]
        return any(keys[c // 8] & (1 << (c % 8)) for c in codes if c)
    finally:
        d.close()


@pytest.mark.parametrize("xdotool", [True, False], ids=["xdotool", "xtest"])
def test_the_input_device_holds_keys_until_let_go(
    desktop_input, monkeypatch, xdotool: bool
) -> None:
    """Input.hold_key really holds the key on the X server, with xdotool and without it
    (XTEST on the Input's own connection); release_keys lets every held key go."""
    from jarvis.desktop import x11

    have = x11.have
    monkeypatch.setattr(x11, "have", lambda tool: xdotool and have(tool))
    desktop_input.hold_key("shift")
    desktop_input.hold_key("ctrl")
    assert shift_down() and desktop_input.held == ["shift", "ctrl"]
    desktop_input.hold_key("shift", down=False)
    assert not shift_down() and desktop_input.held == ["ctrl"]
    desktop_input.hold_key("shift")
    desktop_input.release_keys()
    assert not shift_down() and desktop_input.held == []


async def test_uitars_unescaped_apostrophe_and_two_trailing_newlines_reach_the_app(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    """``type(content='don't stop me now')``: ByteDance's parser (codes/ui_tars/
    action_parser.py) reads the content to its closing ``')``, apostrophe and all; each
    trailing ``\\n`` is an Enter (UI-TARS-desktop's executor types all but the last line
    break, then presses Enter): ``'total\\n\\n'`` leaves two line breaks in the notes."""
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, provider="openai", openai_model=UITARS
    )
    nx, ny = answer(tkapp, tkapp.widget_center("notes"), "ui-tars-1.5", settings)
    fake_model.script(
        Reply(text=f"Thought: click the notes.\nAction: click(start_box='({nx},{ny})')"),
        Reply(text="Thought: I'll type it.\nAction: type(content='don't stop me now\n')"),
        Reply(text="Thought: the total.\nAction: type(content='total\n\n')"),
        Reply(text="Thought: done.\nAction: finished(content='typed both lines')"),
        VERIFIED,
    )
    outcome, _ = await run_agent(settings, "type two lines in the notes")
    assert outcome.status == "finished", outcome.summary
    assert tkapp.notes_text() == "don't stop me now\ntotal\n\n"  # no line break lost
