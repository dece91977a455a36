"""UI-TARS-1.5's pixel answers land where ByteDance's own conversion puts them, up to 4K.

UI-TARS-1.5 answers in pixels of its ``smart_resize``'d image; ByteDance maps an answer back
with plain scaling: ``int(x / new_width * width)`` (bytedance/UI-TARS
README_coordinates.md), and codes/ui_tars/action_parser.py divides by the resized width
and multiplies by the screen's (``round(x / w * W, 3)``). At 3840x2160 one model pixel is
2.9 screen pixels: aiming at the model pixel's centre, as Jarvis did, lands 1 to 2 screen
pixels right of and below that point. The same plain scaling serves OpenCUA (its
``_coordinate_projection``, ``'qwen25'``: ``int(x / width * screen_width)``) and Qwen2.5-VL,
whose computer-use profiles share the smart-resize image rule.

The table checks every answer on a lattice across the picture on the four screens; the run
at 3840x2160 goes through the real openai SDK and the UI-TARS grammar to the Tk app on its
own Xvfb.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from jarvis.agent.factory import build_agent
from jarvis.desktop.x11 import XDisplay
from jarvis.events import EventBus
from jarvis.geometry import Size, to_screen
from jarvis.llm.profiles.catalog import PROFILES
from jarvis.llm.profiles.select import geometry
from tests.agent_harness import agent_settings
from tests.fake_model import FakeModel, Reply
from tests.tkdriver import TkApp
from tests.xserver import Xvfb, start_xvfb

SCREENS = ("1280x720", "1920x1080", "2560x1440", "3840x2160")
PROFILES_PLAIN = ("ui-tars-1.5", "opencua", "qwen2.5-vl")


def bytedance_resize(height: int, width: int, factor: int, low: int, high: int) -> Size:
    """The resized size by the rule of smart_resize in codes/ui_tars/action_parser.py:
    sides rounded to multiples of ``factor``, scaled down (floored) into ``high`` pixels or
    up (ceiled) to ``low``."""
    h = max(factor, round(height / factor) * factor)
    w = max(factor, round(width / factor) * factor)
    if h * w > high:
        beta = math.sqrt(height * width / high)
        h = math.floor(height / beta / factor) * factor
        w = math.floor(width / beta / factor) * factor
    elif h * w < low:
        beta = math.sqrt(low / (height * width))
        h = math.ceil(height * beta / factor) * factor
        w = math.ceil(width * beta / factor) * factor
    return Size(w, h)


def bytedance_point(x: float, y: float, image: Size, screen: Size) -> tuple[int, int]:
    """README_coordinates.md: ``int(x / new_width * width)``."""
    return int(x / image.width * screen.width), int(y / image.height * screen.height)


@pytest.mark.parametrize("profile", PROFILES_PLAIN)
@pytest.mark.parametrize("screen", SCREENS)
def test_pixel_answers_land_where_the_models_own_code_puts_them(
    profile: str, screen: str, tmp_path: Path
) -> None:
    from jarvis.config import Settings

    size = Size.parse(screen)
    spec = PROFILES[profile]
    _, image = geometry(spec, size, Settings(data_dir=tmp_path))
    rule = spec.image
    assert image == bytedance_resize(
        size.height, size.width, rule.factor, rule.min_pixels, rule.max_pixels
    )
    assert spec.space.plain
    xs = sorted({*range(0, image.width, 7), image.width - 1})
    ys = sorted({*range(0, image.height, 5), image.height - 1})
    for x in xs:
        for y in ys[:: max(1, len(ys) // 40)]:
            assert to_screen([x, y], spec.space, image, size) == bytedance_point(
                x, y, image, size
            ), (profile, screen, x, y)
    for y in ys:
        assert to_screen([xs[len(xs) // 2], y], spec.space, image, size)[1] == int(
            y / image.height * size.height
        )


def test_at_4k_the_pixel_centre_would_miss_bytedance_s_point_by_a_pixel_or_two() -> None:
    """Why plain scaling: the old aim (the model pixel's centre) is 1.45 screen pixels off
    ByteDance's point at 3840x2160, where a model pixel is 2.92 screen pixels."""
    screen = Size(3840, 2160)
    image = bytedance_resize(2160, 3840, 28, 3136, 1003520)
    assert image == Size(1316, 728) and screen.width / image.width > 2.9
    centre = [math.floor((x + 0.5) * screen.width / image.width) for x in range(image.width)]
    theirs = [bytedance_point(x, 0, image, screen)[0] for x in range(image.width)]
    assert max(c - t for c, t in zip(centre, theirs, strict=True)) == 2
    space = PROFILES["ui-tars-1.5"].space
    ours = [to_screen([x, 0], space, image, screen)[0] for x in range(image.width)]
    assert ours == theirs


# ----------------------------------------------------------- a run at 3840x2160
@pytest.fixture(scope="module")
def uhd(xserver: Xvfb) -> Iterator[tuple[Xvfb, TkApp]]:
    """A 3840x2160 Xvfb of its own with the Tk app (after the session's display, which must
    be the first one this process opens)."""
    with start_xvfb(3840, 2160) as server:
        app = TkApp.start(env=XDisplay(server.display, server.xauthority).env())
        try:
            yield server, app
        finally:
            app.close()


def answer(app: TkApp, widget: str, image: Size, screen: Size) -> tuple[int, int]:
    """The whole-number answer a perfect UI-TARS gives for the widget's centre."""
    cx, cy = app.widget_center(widget)
    return (
        round((cx + 0.5) * image.width / screen.width),
        round((cy + 0.5) * image.height / screen.height),
    )


@pytest.mark.slow
async def test_ui_tars_at_4k_clicks_where_bytedance_s_code_clicks(
    uhd: tuple[Xvfb, TkApp], fake_model: FakeModel, tmp_path: Path, monkeypatch
) -> None:
    server, app = uhd
    app.reset()
    screen = Size(*app.screen)
    assert screen == Size(3840, 2160)
    settings = agent_settings(
        tmp_path, fake_model, monkeypatch, provider="openai",
        openai_model="ByteDance-Seed/UI-TARS-1.5-7B",
    )  # fmt: skip
    _, image = geometry(PROFILES["ui-tars-1.5"], screen, settings)
    (bx, by), (ox, oy) = answer(app, "box", image, screen), answer(app, "ok", image, screen)
    fake_model.script(
        Reply(text=f"Thought: the box.\nAction: click(start_box='({bx},{by})')"),
        Reply(text="Thought: type.\nAction: type(content='hello')"),
        Reply(text=f"Thought: OK.\nAction: click(start_box='({ox},{oy})')"),
        Reply(text="Thought: done.\nAction: finished(content='typed hello, pressed OK')"),
        Reply(text='{"done": true, "reason": "the box says hello and OK was pressed"}'),
    )
    where = XDisplay(server.display, server.xauthority)
    async with build_agent(settings, EventBus(), where=where) as agent:
        outcome = await asyncio.wait_for(agent.run("type hello in the box and press OK"), 120)
    assert outcome.status == "finished", outcome.summary
    app.sync()
    assert app.ok_pressed() == "hello"
    clicks = [(e["x"], e["y"]) for e in app.events("click") if e["button"] == 1]
    theirs = [bytedance_point(bx, by, image, screen), bytedance_point(ox, oy, image, screen)]
    assert len(clicks) == 2, clicks
    for (x, y), (tx, ty) in zip(clicks, theirs, strict=True):
        assert abs(x - tx) <= 1 and abs(y - ty) <= 1, (clicks, theirs)


def test_the_prompt_still_speaks_of_pixels_of_the_image_sent(tmp_path: Path) -> None:
    from jarvis.config import Settings
    from jarvis.llm.profiles.select import system_prompt

    spec = PROFILES["ui-tars-1.5"]
    grid, image = geometry(spec, Size(3840, 2160), Settings(data_dir=tmp_path))
    assert grid == Size(1316 * 4096, 728 * 4096) and image == Size(1316, 728)
    prompt = system_prompt(spec, image, grid)
    assert "Instead of pixels" not in prompt and "1316" in prompt
