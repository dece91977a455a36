"""The window under a point, as run records name it: the server's own hit test
(``XTranslateCoordinates``), checked against the stack on a bare X server with windows of
our own: the topmost one wins, an InputOnly window on top hides nothing, an unmapped
one is not there, and a point on no window is no window. A display of its own: the
worker's shared one may hold another test's windows."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from Xlib import X
from Xlib.display import Display

from jarvis.desktop.windows import Windows
from jarvis.desktop.x11 import XDisplay
from tests.xserver import start_xvfb


@pytest.fixture
def x() -> Iterator[Display]:
    with start_xvfb(1024, 768, set_env=True):
        display = Display()
        yield display
        display.close()


def window(
    d: Display, name: str, box: tuple[int, int, int, int], *, input_only: bool = False
) -> Any:
    x, y, w, h = box
    root = d.screen().root
    if input_only:
        win = root.create_window(x, y, w, h, 0, 0, X.InputOnly, X.CopyFromParent)
    else:
        win = root.create_window(x, y, w, h, 0, d.screen().root_depth)
        win.set_wm_name(name)
        win.set_wm_class(name.lower(), name)
    win.change_attributes(override_redirect=True)
    win.map()
    return win


def test_the_topmost_window_under_the_point_and_none_elsewhere(x: Display) -> None:
    lower = window(x, "Lower", (100, 100, 300, 300))
    upper = window(x, "Upper", (250, 250, 300, 300))  # mapped later: above Lower
    hidden = window(x, "Hidden", (600, 600, 100, 100))
    hidden.unmap()
    window(x, "", (0, 0, 200, 200), input_only=True)  # on top of all: shows no pixels
    x.sync()
    windows = Windows(XDisplay.from_env())
    try:
        assert windows.at(150, 150).id == lower.id  # under the InputOnly one
        on_both = windows.at(300, 300)
        assert on_both.id == upper.id
        assert (on_both.title, on_both.wm_class, on_both.box) == (
            "Upper",
            "Upper",
            (250, 250, 300, 300),
        )
        assert not windows.at(650, 650).known  # unmapped
        assert not windows.at(1000, 700).known  # nothing there
        upper.configure(stack_mode=X.Below)  # now under Lower where they overlap
        x.sync()
        assert windows.at(300, 300).id == lower.id
        assert windows.at(500, 500).id == upper.id
    finally:
        windows.close()
