"""Two monitors of different sizes on Xorg with the dummy driver (tests/xservers.py).

The layout: monitor 1 (DUMMY0, primary) 1920x1080 at 0,1024; monitor 2 (DUMMY1) 1280x1024
at 320,0, above the first and offset sideways. The root window is 1920x2104; the areas
beside monitor 2 belong to no monitor. The real Tk app covers the root window and reports
the root coordinates of every click, so a click's landing point is measured, not assumed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jarvis.config import Settings
from jarvis.desktop.desktop import Desktop
from jarvis.desktop.input import Input
from jarvis.geometry import Size, fit_size
from jarvis.tools.computer import build_registry
from jarvis.tools.context import ToolContext
from jarvis.tools.results import INVALID_PARAMS
from tests.tkdriver import TkApp
from tests.xserver import environment
from tests.xservers import DummyXorg, Head, dummy_xorg_missing

LOWER = Head(1920, 1080, 0, 1024)
UPPER = Head(1280, 1024, 320, 0)
HEADS = {1: LOWER, 2: UPPER, 0: Head(1920, 2104, 0, 0)}

pytestmark = pytest.mark.skipif(dummy_xorg_missing() is not None, reason=str(dummy_xorg_missing()))


@pytest.fixture(scope="module")
def xorg() -> Iterator[DummyXorg]:
    with DummyXorg([LOWER, UPPER]) as server:
        yield server


@pytest.fixture(scope="module")
def app(xorg: DummyXorg) -> Iterator[TkApp]:
    app = TkApp.start(env=xorg.env())
    try:
        assert app.screen == (1920, 2104)  # it covers the root window: both monitors
        yield app
    finally:
        app.close()


def open_desktop(xorg: DummyXorg, tmp_path: Path, monitor: int, **extra: Any) -> Desktop:
    settings = Settings(data_dir=tmp_path, monitor=monitor, image_format="png", **extra)
    return Desktop.open(settings, xorg.where)


def expected_landing(head: Head, model: Size, x: int, y: int) -> tuple[float, float]:
    """Where model pixel (x, y) is on the screen: the centre of its area on ``head``."""
    return (
        head.left + (x + 0.5) * head.width / model.width,
        head.top + (y + 0.5) * head.height / model.height,
    )


@pytest.mark.parametrize("monitor", [1, 2, 0])
def test_screenshot_sizes_and_pixels_per_monitor_and_of_all(
    xorg: DummyXorg, app: TkApp, tmp_path: Path, monitor: int
) -> None:
    head = HEADS[monitor]
    with open_desktop(xorg, tmp_path, monitor) as desktop:
        obs = desktop.screen.capture()
        assert obs.screen_size == Size(head.width, head.height)
        assert obs.physical_size == Size(head.width, head.height)
        assert obs.origin == (head.left, head.top)
        assert obs.model_size == fit_size(Size(head.width, head.height), 1280)
        assert obs.image.size == (obs.model_size.width, obs.model_size.height)
        size, raw = desktop.screen.grab_raw()
    with open_desktop(xorg, tmp_path, 0) as whole:
        all_size, all_raw = whole.screen.grab_raw()
    # the monitor's pixels are exactly the part of the whole root window it covers
    assert all_size == Size(1920, 2104)
    row = 4 * all_size.width
    crop = b"".join(
        all_raw[
            (head.top + y) * row + 4 * head.left : (head.top + y) * row
            + 4 * (head.left + size.width)
        ]
        for y in range(size.height)
    )
    assert crop == raw


@pytest.mark.parametrize("monitor", [1, 2, 0])
def test_clicks_land_within_one_pixel_on_each_monitor(
    xorg: DummyXorg, app: TkApp, tmp_path: Path, monitor: int
) -> None:
    head = HEADS[monitor]
    registry = build_registry(Settings(data_dir=tmp_path), presets=[])
    with open_desktop(xorg, tmp_path, monitor) as desktop:
        screen = desktop.screen
        model = screen.model_size
        ctx = ToolContext.for_task(
            Settings(data_dir=tmp_path), "t-monitors", screen=screen, input=desktop.input
        )
        if monitor == 0:  # points of the whole picture that lie on a monitor: one on each
            points = [(screen.to_model(330, 5)), screen.to_model(1900, 2090), (640, 900)]
        else:
            points = [
                (0, 0),
                (model.width - 1, model.height - 1),
                (model.width // 2, 3),
                (5, model.height // 2),
            ]
        for x, y in points:
            mark = app.mark()
            result = asyncio.run(registry.execute("click", {"x": x, "y": y}, ctx))
            assert result.ok, result.error
            event = app.wait_for(lambda e: e["kind"] == "click", since=mark)
            ex, ey = expected_landing(head, model, x, y)
            assert abs(event["x"] - ex) <= 1 and abs(event["y"] - ey) <= 1, (x, y, event, ex, ey)
            assert screen.to_screen(x, y) == (event["x"], event["y"])


def axis(value: int, src: int, dst: int) -> int:
    """Pixel ``value`` of an axis of ``src`` pixels on one of ``dst``: its centre's pixel."""
    return int((value + 0.5) * dst / src)


def test_the_model_is_told_which_monitor_it_sees(
    xorg: DummyXorg, app: TkApp, tmp_path: Path
) -> None:
    from jarvis.llm.profiles.select import active_profile, system_prompt

    settings = Settings(data_dir=tmp_path)
    registry = build_registry(settings, presets=[])
    profile = active_profile(settings).profile
    for monitor in (1, 2):
        with open_desktop(xorg, tmp_path, monitor) as desktop:
            obs = desktop.screen.capture()
            head = HEADS[monitor]
            assert f"monitor {monitor} of 2 only ({head.width}x{head.height})" in obs.monitor_note
            ctx = ToolContext.for_task(settings, "t", screen=desktop.screen, input=desktop.input)
            answer = asyncio.run(registry.execute("screenshot", {}, ctx))
            assert answer.ok and answer.data["monitors"] == obs.monitor_note
            prompt = system_prompt(profile, obs.model_size, obs.model_size, obs.monitor_note)
            assert obs.monitor_note in prompt
    with open_desktop(xorg, tmp_path, 0) as desktop:
        obs = desktop.screen.capture()
    m = obs.model_size
    for index, head in ((1, LOWER), (2, UPPER)):
        x1, y1 = axis(head.left, 1920, m.width), axis(head.top, 2104, m.height)
        x2 = axis(head.left + head.width - 1, 1920, m.width)
        y2 = axis(head.top + head.height - 1, 2104, m.height)
        assert f"monitor {index} from ({x1}, {y1}) to ({x2}, {y2})" in obs.monitor_note


def test_doctor_lists_the_monitors(xorg: DummyXorg, tmp_path: Path) -> None:
    from jarvis.doctor import check_display

    with environment(xorg.env()):
        check = check_display(Settings(data_dir=tmp_path, monitor=2))
    assert check.ok, check.detail
    assert "captured monitor 2: 1280x1024" in check.detail
    assert (
        "2 monitor(s): 1: 1920x1080 at 0,1024 (DUMMY0, primary); 2: 1280x1024 at 320,0 (DUMMY1)"
        in check.detail
    )


def test_a_point_between_monitors_is_refused_not_moved(
    xorg: DummyXorg, app: TkApp, tmp_path: Path
) -> None:
    """The X server keeps the pointer on the monitors: (100, 100) of the root window (left
    of the upper monitor) would be clicked at (100, 1024). The tool says so instead."""
    settings = Settings(data_dir=tmp_path)
    registry = build_registry(settings, presets=[])
    with open_desktop(xorg, tmp_path, 0) as desktop:
        ctx = ToolContext.for_task(settings, "t", screen=desktop.screen, input=desktop.input)
        mx, my = desktop.screen.to_model(100, 100)
        mark = app.mark()
        result = asyncio.run(registry.execute("click", {"x": mx, "y": my}, ctx))
        assert not result.ok and result.error is not None
        assert result.error.code == INVALID_PARAMS
        assert "on no monitor" in result.error.message
        desktop.input.move(100, 100)  # what the click would have done: the pointer lands
        assert desktop.input.position() == (100, 1024)  # on the lower monitor's top edge
        app.sync()
        assert app.events("click", since=mark) == []


def test_the_failsafe_fires_at_a_corner_of_a_monitor(
    xorg: DummyXorg, app: TkApp, tmp_path: Path
) -> None:
    """The whole desktop's top corners are on no monitor (the pointer cannot reach them);
    a person slamming the pointer into the upper monitor's own corner stops Jarvis."""
    settings = Settings(data_dir=tmp_path)
    registry = build_registry(settings, presets=[])
    person = Input(failsafe=False, display=xorg.where)  # a hand of its own
    try:
        person.move(0, 0)
        assert person.position() != (0, 0)  # out of reach: a corner there could never fire
        with open_desktop(xorg, tmp_path, 2) as desktop:
            ctx = ToolContext.for_task(settings, "t", screen=desktop.screen, input=desktop.input)
            person.move(UPPER.left + UPPER.width - 1, UPPER.top)  # its top-right corner
            mark = app.mark()
            result = asyncio.run(registry.execute("click", {"x": 640, "y": 512}, ctx))
            assert not result.ok and result.error is not None
            assert "fail-safe" in result.error.message
            assert ctx.control is not None and ctx.control.kind == "aborted"
            app.sync()
            assert app.events("click", since=mark) == []
    finally:
        person.move(960, 1500)  # off every corner for the tests after this one
        person.close()
