"""The wlroots desktop on a real headless sway with two outputs (scale 1 and scale 2):
screenshot sizes per output and of the whole layout, pointer events landing where they
were sent on both outputs (read back from ``wev``), and text typed byte for byte into
``foot``."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jarvis.desktop.errors import InputError, InputInterrupted
from jarvis.desktop.wlroots.input import WlInput
from jarvis.desktop.wlroots.screen import WlScreen
from jarvis.desktop.wlroots.session import swaymsg
from jarvis.geometry import Size
from jarvis.safety.wayland_sandbox import PrivateSway
from tests.wayland import Wev, needs_sway, start_sway, wait_window

pytestmark = needs_sway


@pytest.fixture(scope="module")
def sway() -> Iterator[PrivateSway]:
    with start_sway() as running:
        yield running


@pytest.fixture(scope="module")
def pointer(sway: PrivateSway) -> Iterator[WlInput]:
    assert sway.where is not None
    wl = WlInput(sway.where)
    yield wl
    wl.close()


def test_outputs_are_read_back_with_their_scales(sway: PrivateSway) -> None:
    got = [(o.name, o.box, o.scale) for o in sway.outputs]
    assert got == [
        ("HEADLESS-1", (0, 0, 1280, 720), 1.0),
        ("HEADLESS-2", (1280, 0, 800, 450), 2.0),
    ]


@pytest.mark.parametrize(
    ("monitor", "logical", "device"),
    [(1, (1280, 720), (1280, 720)), (2, (800, 450), (1600, 900)), (0, (2080, 720), (4160, 1440))],
)
def test_screenshot_sizes(
    sway: PrivateSway, monitor: int, logical: tuple[int, int], device: tuple[int, int]
) -> None:
    assert sway.where is not None
    with WlScreen(sway.where, monitor=monitor, max_side=1280, image_format="png") as screen:
        assert (screen.size.width, screen.size.height) == logical
        assert screen.logical_image().size == logical
        shot = screen.capture()
        assert shot.physical_size is not None
        assert (shot.physical_size.width, shot.physical_size.height) == device
        assert shot.screen_size == screen.size
        assert shot.image.size == (shot.model_size.width, shot.model_size.height)
        assert max(shot.image.size) == min(1280, max(logical))
        size, raw = screen.grab_raw()
        assert len(raw) == size.width * size.height * 4


@pytest.mark.parametrize(
    ("output", "targets"),
    [
        ("HEADLESS-1", [(37, 411), (1279, 719), (640, 0)]),
        ("HEADLESS-2", [(1290, 5), (2079, 449), (1701, 233)]),
    ],
)
def test_clicks_land_within_a_pixel_on_each_output(
    sway: PrivateSway, pointer: WlInput, output: str, targets: list[tuple[int, int]]
) -> None:
    with Wev(sway, output) as wev:
        ox, oy = wev.origin
        for x, y in targets:
            pointer.click(x, y)
            button, (sx, sy) = wev.next_press()
            assert button == 272
            assert abs(sx - (x - ox)) <= 1 and abs(sy - (y - oy)) <= 1, (x, y, ox, oy, sx, sy)


def test_right_double_click_scroll_and_drag(sway: PrivateSway, pointer: WlInput) -> None:
    with Wev(sway, "HEADLESS-2") as wev:
        ox, oy = wev.origin
        pointer.right_click(1500, 300)
        assert wev.next_press() == (273, (1500 - ox, 300 - oy))
        pointer.double_click(1400, 100)
        assert [wev.next_press() for _ in range(2)] == [(272, (1400 - ox, 100 - oy))] * 2
        pointer.scroll(1400, 100, "up", 2)
        assert wev.next_axis() == (0, -30.0)
        pointer.scroll(1400, 100, "right", 1)
        assert wev.next_axis() == (1, 15.0)
        pointer.drag(1300, 50, 1900, 400)
        assert wev.next_press() == (272, (1300 - ox, 50 - oy))
        wev.next_event(re.compile(r"button: .*state: 0"))
        assert wev.position == (1900 - ox, 400 - oy)


def test_a_point_off_the_layout_is_refused(pointer: WlInput) -> None:
    with pytest.raises(Exception, match="outside the screen"):
        pointer.click(2080, 10)
    with pytest.raises(Exception, match="outside the screen"):
        pointer.click(1500, 450)  # below HEADLESS-2, inside the layout box: not on an output


def _red(pixel: tuple[int, ...]) -> bool:
    return pixel[0] > 200 and pixel[1] < 60 and pixel[2] < 60


def test_the_layout_picture_puts_each_output_at_its_logical_place(sway: PrivateSway) -> None:
    """A red window filling HEADLESS-2 (scale 2) shows at its logical place in the
    layout's logical picture, and over all its device pixels in the output's capture."""
    assert sway.where is not None
    with WlScreen(sway.where, monitor=0) as layout, WlScreen(sway.where, monitor=2) as right:
        before = layout.frame_digest()
        assert layout.frame_digest() == before  # nothing moved: the same fingerprint
        swaymsg(sway.where, "focus output HEADLESS-2")
        sway.run_app(["foot", "-a", "jarvis-red", "-o", "colors.background=ff0000", "sleep", "60"])
        wait_window(sway, lambda n: n.get("app_id") == "jarvis-red")
        deadline = time.monotonic() + 15
        while not _red((picture := layout.logical_image()).getpixel((1680, 300))):  # type: ignore[arg-type]
            assert time.monotonic() < deadline, "the red window never showed"
        assert picture.size == (2080, 720)
        assert _red(picture.getpixel((1300, 440)))  # type: ignore[arg-type]
        assert not _red(picture.getpixel((640, 360)))  # type: ignore[arg-type]
        device = right.capture()
        assert device.physical_size == Size(1600, 900)
        whole = layout._grab_image()
        assert whole.size == (4160, 1440)
        assert _red(whole.getpixel((3360, 600)))  # type: ignore[arg-type]
        assert not _red(whole.getpixel((1280, 720)))  # type: ignore[arg-type]
        assert layout.frame_digest() != before
    swaymsg(sway.where, "[app_id=jarvis-red] kill")


TEXT = "yz@#/-{} ä€ß Привет"


def _wait_for_line(path: Path) -> bytes:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().endswith(b"\n"):
            return path.read_bytes()
        time.sleep(0.02)
    raise AssertionError(
        f"nothing arrived in {path}: {path.read_bytes() if path.exists() else b''!r}"
    )


@pytest.mark.parametrize(
    ("layout", "text"), [("us", TEXT), ("de", TEXT + " 漢字かな 😀👍"), ("fr", TEXT + " 中文 🎉")]
)
def test_text_is_typed_byte_for_byte_into_foot(
    sway: PrivateSway, pointer: WlInput, layout: str, text: str
) -> None:
    assert sway.where is not None
    swaymsg(sway.where, f"input type:keyboard xkb_layout {layout}")
    swaymsg(sway.where, "focus output HEADLESS-1")
    name = f"jarvis-typing-{layout}"
    out = sway.runtime_dir.parent / f"{name}.txt"
    term = sway.run_app(["foot", "-a", name, "sh", "-c", f"stty -echo; cat > {out}"])
    node = wait_window(sway, lambda n: n.get("app_id") == name)
    assert node["pid"] == term.pid
    typed = pointer.type_text(text + "\n")
    assert (typed.chars, typed.target) == (len(text) + 1, name)
    assert _wait_for_line(out) == (text + "\n").encode()
    swaymsg(sway.where, f"[app_id={name}] kill")


def test_text_with_no_focused_window_is_refused(sway: PrivateSway, pointer: WlInput) -> None:
    assert sway.where is not None
    swaymsg(sway.where, "focus output HEADLESS-1")
    swaymsg(sway.where, "workspace jarvis-empty")
    try:
        with pytest.raises(InputError, match="no window has the keyboard focus"):
            pointer.type_text("lost")
    finally:
        swaymsg(sway.where, "workspace back_and_forth")


def test_a_held_or_stopped_input_refuses_and_sends_nothing(sway: PrivateSway) -> None:
    """While a person holds the screen (or the task is stopped) every action is refused;
    the next press wev sees is the one made after the hold ended."""
    assert sway.where is not None
    hold, stop = threading.Event(), threading.Event()
    held = WlInput(sway.where, stop=stop, hold=hold)
    try:
        with Wev(sway, "HEADLESS-1") as wev:
            ox, oy = wev.origin
            hold.set()
            with pytest.raises(InputInterrupted, match="took over"):
                held.click(100, 100)
            with pytest.raises(InputInterrupted, match="took over"):
                held.type_text("no")
            hold.clear()
            stop.set()
            with pytest.raises(InputInterrupted, match="cancelled"):
                held.scroll(100, 100, "down")
            stop.clear()
            held.click(300, 200)
            assert wev.next_press() == (272, (300 - ox, 200 - oy))
    finally:
        held.close()


def test_holding_a_key_is_refused_not_faked(pointer: WlInput) -> None:
    with pytest.raises(InputError, match="not built for Wayland"):
        pointer.hold_key("shift")
