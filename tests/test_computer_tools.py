"""The 14 desktop tools, run through the registry on Xvfb against the real Tk test app.

The screen is 1920x1080 and the model sees it at 1280x720, so every coordinate the
tests send is in model space and must land at ``screen.to_screen`` of it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from jarvis.config import Settings
from jarvis.desktop.x11 import XDisplay
from jarvis.tools.context import ControlOutcome, ToolContext
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.results import INTERNAL, INVALID_PARAMS, ToolResult

if TYPE_CHECKING:
    from jarvis.desktop.input import Input
    from jarvis.desktop.screen import Screen
    from tests.tkdriver import TkApp

CONTRACT = {
    "click": ["x", "y"],
    "double_click": ["x", "y"],
    "triple_click": ["x", "y"],
    "right_click": ["x", "y"],
    "mouse_move": ["x", "y"],
    "drag": ["startX", "startY", "endX", "endY"],
    "scroll": ["x", "y", "direction", "amount"],
    "type": ["text"],
    "hotkey": ["keys"],
    "press_key": ["key"],
    "wait": ["ms"],
    "screenshot": [],
    "finished": ["summary"],
    "call_user": ["message", "risky"],  # risky (optional): issue 17's model-marked approval
}
INPUT_KINDS = ("click", "release", "motion", "drag", "scroll", "key", "text")


@pytest.fixture(scope="module")
def registry() -> ToolRegistry:
    from jarvis.tools.computer import build_registry

    return build_registry(Settings(data_dir=Path("unused")), presets=[])


# --- the wire contract (no display needed) ---------------------------------------------
def test_names_and_argument_names_are_the_wire_contract(registry: ToolRegistry) -> None:
    specs = {s.name: s.parameters for s in registry.specs()}
    assert {name: list(p["properties"]) for name, p in specs.items()} == CONTRACT
    for name, params in specs.items():
        assert params["additionalProperties"] is False, name
    scroll = specs["scroll"]
    assert scroll["required"] == ["x", "y", "direction"]
    assert specs["call_user"]["required"] == ["message"]  # call_user(message) as before
    assert scroll["properties"]["direction"]["enum"] == ["up", "down", "left", "right"]
    amount = scroll["properties"]["amount"]
    assert (amount["default"], amount["minimum"], amount["maximum"]) == (3, 1, 50)
    ms = specs["wait"]["properties"]["ms"]
    assert (ms["minimum"], ms["maximum"]) == (0, 10_000)
    assert specs["click"]["properties"]["x"]["minimum"] == 0
    assert all(s.description for s in registry.specs())


# --- on the display ------------------------------------------------------------------
@dataclass
class Desk:
    registry: ToolRegistry
    screen: Screen
    input: Input
    ctx: ToolContext
    app: TkApp

    def run(self, name: str, args: Any) -> ToolResult:
        return asyncio.run(self.registry.execute(name, args, self.ctx))

    def model_point(self, real: tuple[int, int]) -> tuple[int, int]:
        return self.screen.to_model(*real)

    def real_point(self, model: tuple[int, int]) -> tuple[int, int]:
        return self.screen.to_screen(*model)

    def click_box(self) -> None:
        mx, my = self.model_point(self.app.widget_center("box"))
        assert self.run("click", {"x": mx, "y": my}).ok
        self.app.wait_kind("click", button=1, widget="box")


@pytest.fixture
def desk(
    registry: ToolRegistry, tkapp: TkApp, desktop_input: Input, tmp_path: Path
) -> Iterator[Desk]:
    from jarvis.desktop import x11
    from jarvis.desktop.screen import Screen

    x11.xdotool("mousemove", "960", "540")  # away from the fail-safe corners
    tkapp.sync()  # its motion event is reported before any test takes a mark
    settings = Settings(data_dir=tmp_path)
    screen = Screen.from_settings(settings)
    assert (screen.size.width, screen.size.height) == (1920, 1080)
    assert (screen.model_size.width, screen.model_size.height) == (1280, 720)
    ctx = ToolContext.for_task(settings, "t-desk", screen=screen, input=desktop_input)
    try:
        yield Desk(registry, screen, desktop_input, ctx, tkapp)
    finally:
        screen.close()


def test_click_lands_at_the_mapped_point(desk: Desk) -> None:
    box = desk.app.widget_center("box")
    mx, my = desk.model_point(box)
    result = desk.run("click", {"x": mx, "y": my})
    assert result.ok and result.data == {"x": mx, "y": my}
    x, y = desk.real_point((mx, my))
    assert abs(x - box[0]) <= 1 and abs(y - box[1]) <= 1
    event = desk.app.wait_kind("click", button=1, x=x, y=y)
    assert event["widget"] == "box" and event["count"] == 1


def test_double_click(desk: Desk) -> None:
    mx, my = 700, 400
    x, y = desk.real_point((mx, my))
    assert desk.run("double_click", {"x": mx, "y": my}).ok
    assert desk.app.wait_kind("click", button=1, x=x, y=y, count=2)
    assert desk.app.wait_kind("double", button=1, x=x, y=y)


def test_right_click(desk: Desk) -> None:
    x, y = desk.real_point((640, 360))
    assert desk.run("right_click", {"x": 640, "y": 360}).ok
    desk.app.wait_kind("click", button=3, x=x, y=y)
    assert desk.app.events("click", since=0)[-1]["button"] == 3


def test_mouse_move_moves_without_clicking(desk: Desk) -> None:
    x, y = desk.real_point((801, 333))
    assert desk.run("mouse_move", {"x": 801, "y": 333}).ok
    desk.app.wait_kind("motion", x=x, y=y)
    assert desk.input.position() == (x, y)
    desk.app.sync()
    assert desk.app.events("click") == []


def test_drag_endpoints(desk: Desk) -> None:
    start, end = (600, 300), (900, 500)
    result = desk.run("drag", {"startX": 600, "startY": 300, "endX": 900, "endY": 500})
    assert result.ok and result.data == {"start": [600, 300], "end": [900, 500]}
    event = desk.app.wait_kind("drag")
    assert event["start"] == list(desk.real_point(start))
    assert event["end"] == list(desk.real_point(end))
    assert event["motions"] > 0


@pytest.mark.parametrize("direction", ["up", "down", "left", "right"])
def test_scroll_direction_and_amount(desk: Desk, direction: str) -> None:
    x, y = desk.real_point((700, 450))
    result = desk.run("scroll", {"x": 700, "y": 450, "direction": direction, "amount": 2})
    assert result.ok
    desk.app.wait_kind("scroll", direction=direction, x=x, y=y)
    desk.app.sync()
    scrolls = desk.app.events("scroll")
    assert [e["direction"] for e in scrolls] == [direction, direction]


def test_scroll_amount_defaults_to_three(desk: Desk) -> None:
    assert desk.run("scroll", {"x": 700, "y": 450, "direction": "down"}).data["amount"] == 3
    desk.app.wait_kind("scroll", direction="down")
    desk.app.sync()
    assert len(desk.app.events("scroll")) == 3


def test_type_arrives_in_the_box(desk: Desk) -> None:
    desk.click_box()
    text = "Hello, <Jarvis> & ü!"
    result = desk.run("type", {"text": text})
    assert result.ok
    assert result.data == {"typed_chars": len(text), "method": "xdotool", "into": "Tk"}
    desk.app.wait_kind("text", widget="box", text=text)
    assert desk.app.entry_text() == text


def test_hotkey_arrives_as_a_chord(desk: Desk) -> None:
    assert desk.run("hotkey", {"keys": "ctrl+shift+s"}).ok
    event = desk.app.wait_for(lambda e: e["kind"] == "key" and e["keysym"] in ("s", "S"))
    assert {"ctrl", "shift"} <= set(event["mods"])


def test_press_key(desk: Desk) -> None:
    desk.click_box()
    assert desk.run("type", {"text": "ab"}).ok
    assert desk.run("press_key", {"key": "BackSpace"}).ok
    assert desk.run("press_key", {"key": "enter"}).ok
    desk.app.wait_kind("key", keysym="Return")
    assert desk.app.entry_text() == "a"


def test_wait_waits_at_least_ms(desk: Desk) -> None:
    started = time.perf_counter()
    result = desk.run("wait", {"ms": 150})
    assert time.perf_counter() - started >= 0.150
    assert result.ok and result.data == {"waited_ms": 150}


def test_screenshot_asks_for_a_fresh_observation(desk: Desk) -> None:
    assert desk.ctx.screenshot_requested is False
    result = desk.run("screenshot", {})
    assert result.ok and result.data == {"width": 1280, "height": 720}
    assert desk.ctx.take_screenshot_request() is True
    assert desk.ctx.take_screenshot_request() is False


@pytest.mark.parametrize(
    ("name", "args", "kind", "text"),
    [
        ("finished", {"summary": "The box says hi."}, "finished", "The box says hi."),
        ("call_user", {"message": "Which account?"}, "call_user", "Which account?"),
    ],
)
def test_control_tools_set_the_outcome_and_move_nothing(
    desk: Desk, name: str, args: dict[str, str], kind: str, text: str
) -> None:
    assert desk.run("mouse_move", {"x": 500, "y": 500}).ok
    desk.app.sync()
    before = desk.input.position()
    mark = desk.app.mark()
    result = desk.run(name, args)
    assert result.ok
    assert desk.ctx.control == ControlOutcome(kind=kind, text=text)  # type: ignore[arg-type]
    desk.app.sync()
    assert [e for e in desk.app.events(since=mark) if e["kind"] in INPUT_KINDS] == []
    assert desk.input.position() == before
    assert desk.ctx.take_control() is not None and desk.ctx.control is None


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        # further off than the edge rule's 1 % (12 px of 1280, 7 of 720; nearer: the edge)
        ("click", {"x": 1292, "y": 10}, "x: 1292 is outside the screenshot; x must be in 0..1279"),
        ("click", {"x": 10, "y": -8}, "y: -8 is outside the screenshot; y must be in 0..719"),
        ("mouse_move", {"x": 10, "y": 727}, "y must be in 0..719 (the screenshot is 1280x720)"),
        ("drag", {"startX": 1, "startY": 1, "endX": 5, "endY": 9999}, "endY: 9999 is outside"),
        ("press_key", {"key": "supr"}, "key: unknown key 'supr'"),
        ("hotkey", {"keys": "ctrl+bogus"}, "keys: unknown key 'bogus'"),
        ("scroll", {"x": 1, "y": 1, "direction": "sideways"}, "direction: Input should be 'up'"),
        ("wait", {"ms": 60_000}, "ms: Input should be less than or equal to 10000"),
        ("type", {"text": ""}, "text: String should have at least 1 character"),
        ("click", {"x": 1, "y": 1, "screen": "other"}, "screen: Extra inputs are not permitted"),
    ],
)
def test_model_errors_are_invalid_params_and_move_nothing(
    desk: Desk, name: str, args: dict[str, Any], expected: str
) -> None:
    mark = desk.app.mark()
    result = desk.run(name, args)
    assert result.error is not None and result.error.code == INVALID_PARAMS
    assert expected in result.error.message
    desk.app.sync()
    assert [e for e in desk.app.events(since=mark) if e["kind"] in INPUT_KINDS] == []


def test_the_fail_safe_stops_the_task(desk: Desk) -> None:
    from jarvis.desktop import x11

    x11.xdotool("mousemove", "0", "0")  # a person throws the pointer into a corner
    try:
        mark = desk.app.mark()
        result = desk.run("click", {"x": 640, "y": 360})
        assert result.error is not None and result.error.code == INTERNAL
        assert "fail-safe" in result.error.message
        assert desk.ctx.control is not None and desk.ctx.control.kind == "aborted"
        desk.app.sync()
        assert desk.app.events("click", since=mark) == []
    finally:
        x11.xdotool("mousemove", "960", "540")


@pytest.mark.serial  # some of the text is typed within the 0.5 s: not on a starved worker
def test_a_timed_out_type_stops_typing_before_the_next_call(desk: Desk, tmp_path: Path) -> None:
    import threading

    from jarvis.desktop.input import Input
    from jarvis.tools.computer import build_registry
    from jarvis.tools.results import TIMEOUT

    settings = Settings(
        data_dir=tmp_path,
        type_method="xdotool",
        tools={"limits": {"type": {"timeout_s": 0.5}}},
    )
    registry = build_registry(settings, presets=[])
    stop = threading.Event()
    ctx = ToolContext.for_task(
        settings, "t-timeout", screen=desk.screen,
        input=Input(type_method="xdotool", stop=stop, display=XDisplay.from_env()), stop=stop,
    )  # fmt: skip
    desk.click_box()
    long_text = "b" * 4000  # about ten seconds of typing

    async def type_then_click() -> tuple[ToolResult, str, ToolResult]:
        timed_out = await registry.execute("type", {"text": long_text}, ctx)
        desk.app.sync()
        typed = desk.app.entry_text()  # the typing thread has ended: nothing more will come
        mx, my = desk.model_point(desk.app.widget_center("box"))
        after = await registry.execute("click", {"x": mx, "y": my}, ctx)
        return timed_out, typed, after

    started = time.monotonic()
    timed_out, typed, after = asyncio.run(type_then_click())
    assert timed_out.error is not None and timed_out.error.code == TIMEOUT
    assert time.monotonic() - started < 5  # not the ten seconds the whole text takes
    assert 0 < len(typed) < len(long_text) and set(typed) == {"b"}
    desk.app.sync()
    assert desk.app.entry_text() == typed  # typing stopped with the timeout
    assert after.ok and not stop.is_set()  # the next call runs normally
