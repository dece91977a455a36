"""The on-screen sign (``desktop.indicator``) on a display like a person's: Xorg with the
dummy driver (a real RandR output, so ``auto`` turns the sign on), the real Tk app covering
the screen beneath it. Pixels are read with mss straight from the display (what a person
sees) and through the desktop's screen (what the model gets)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from jarvis.config import Settings
from jarvis.desktop.desktop import Desktop
from jarvis.desktop.hotkey import KillSwitch
from jarvis.desktop.indicator import COLOR, indicator_wanted
from jarvis.desktop.monitors import Monitor, mss_for
from jarvis.desktop.x11 import XDisplay, xdotool
from tests.tkdriver import TkApp
from tests.xservers import DummyXorg, Head, dummy_xorg_missing

pytestmark = pytest.mark.skipif(dummy_xorg_missing() is not None, reason=str(dummy_xorg_missing()))
HEAD = Head(1280, 1024, 0, 0)
BGR = np.array([COLOR & 0xFF, (COLOR >> 8) & 0xFF, COLOR >> 16], dtype=np.uint8)


def _monitors(name: str) -> list[Monitor]:
    return [Monitor(0, 0, 0, 800, 600), Monitor(1, 0, 0, 800, 600, name=name)]


@pytest.mark.parametrize(
    ("mode", "private", "output", "shown"),
    [
        ("auto", False, "DUMMY0", True),  # a person's display
        ("auto", False, "HDMI-1", True),
        ("auto", True, "DUMMY0", False),  # --sandbox's, a channel's
        ("auto", False, "screen", False),  # a bare Xvfb
        ("on", True, "screen", True),
        ("off", False, "HDMI-1", False),
    ],
)
def test_when_the_sign_is_shown(mode: str, private: bool, output: str, shown: bool) -> None:
    where = XDisplay(":9", private=private)
    assert indicator_wanted(mode, where, _monitors(output)) is shown


@pytest.fixture(scope="module")
def xorg() -> Iterator[DummyXorg]:
    with DummyXorg([HEAD]) as server:
        yield server


@pytest.fixture(scope="module")
def app(xorg: DummyXorg) -> Iterator[TkApp]:
    app = TkApp.start(env=xorg.env())
    try:
        yield app
    finally:
        app.close()


@pytest.fixture
def desktop(xorg: DummyXorg, app: TkApp, tmp_path: Path) -> Iterator[Desktop]:
    settings = Settings(data_dir=tmp_path, image_format="png", max_side=1280)
    with Desktop.open(settings, xorg.where) as desktop:
        yield desktop


def screen_now(xorg: DummyXorg) -> np.ndarray:
    """The display's pixels as a person sees them (BGR rows)."""
    with mss_for(xorg.where) as sct:
        shot = sct.grab(sct.monitors[1])
    return np.frombuffer(shot.bgra, np.uint8).reshape(shot.height, shot.width, 4)[:, :, :3]


def sign_pixels(pixels: np.ndarray, boxes: list[tuple[int, int, int, int]]) -> int:
    """How many pixels of ``boxes`` have the sign's colour."""
    return sum(int((pixels[y : y + h, x : x + w] == BGR).all(axis=2).sum()) for x, y, w, h in boxes)


def wait_gone(xorg: DummyXorg, boxes: list[tuple[int, int, int, int]], timeout: float) -> float:
    started = time.monotonic()
    while sign_pixels(screen_now(xorg), boxes):
        assert time.monotonic() - started < timeout, "the sign is still on the screen"
        time.sleep(0.02)
    return time.monotonic() - started


@pytest.mark.serial  # the sign is gone within 1 s of the task's end
def test_the_sign_shows_while_acting_and_never_in_the_models_pictures(
    xorg: DummyXorg, desktop: Desktop, app: TkApp
) -> None:
    indicator = desktop.indicator
    assert indicator is not None, "auto shows the sign on a display with a real output"
    size, before = desktop.screen.grab_raw()
    reference = np.frombuffer(before, np.uint8).reshape(size.height, size.width, 4)[:, :, :3]
    with desktop.acting():
        boxes = indicator.boxes
        covered = sum(w * h for _, _, w, h in boxes)
        assert sign_pixels(screen_now(xorg), boxes[:4]) == sum(w * h for _, _, w, h in boxes[:4])
        assert sign_pixels(screen_now(xorg), boxes[4:]) > 0  # the badge: its text is white
        for _ in range(3):
            size, raw = desktop.screen.grab_raw()
            seen = np.frombuffer(raw, np.uint8).reshape(size.height, size.width, 4)[:, :, :3]
            assert sign_pixels(seen, boxes) == 0
            for x, y, w, h in boxes:  # what lies beneath, pixel for pixel
                assert (seen[y : y + h, x : x + w] == reference[y : y + h, x : x + w]).all()
            shot = np.asarray(desktop.screen.capture().image)[:, :, ::-1]  # the model's
            assert shot.shape[:2] == (HEAD.height, HEAD.width)
            assert sign_pixels(shot, boxes) == 0
            assert sign_pixels(screen_now(xorg), boxes) >= covered // 2  # back after
        mark = app.mark()  # clicks on the border reach the window below
        desktop.input.click(1, 500)
        assert app.wait_kind("click", since=mark, button=1)["x"] == 1
    assert wait_gone(xorg, boxes, timeout=1) < 1  # the task ended: gone


@pytest.mark.serial  # gone within 2 s of the brake
def test_the_kill_switch_takes_the_sign_away_at_once(xorg: DummyXorg, desktop: Desktop) -> None:
    indicator = desktop.indicator
    assert indicator is not None
    with (
        KillSwitch("ctrl+alt+escape", desktop.stop.set, xorg.where) as switch,
        desktop.acting(),
    ):
        assert sign_pixels(screen_now(xorg), indicator.boxes) > 0
        xdotool("key", "ctrl+alt+Escape", where=xorg.where)
        took = wait_gone(xorg, indicator.boxes, timeout=2)
        assert switch.presses == 1 and desktop.stop.is_set()
        assert took < 2  # still inside the run: it went with the brake, not the end
    desktop.stop.clear()
