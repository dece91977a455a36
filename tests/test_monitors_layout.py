"""Monitor layouts as data: what the model is told, and the model-to-screen mapping on
monitors at negative offsets (Windows and Wayland layouts have them; X11 root coordinates
start at 0,0). Pure functions, no display."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from jarvis.desktop.monitors import Monitor, list_monitors, monitor_note
from jarvis.geometry import Size, fit_size, model_to_screen, screen_to_model

# a 1280x1024 monitor left of and above a primary 1920x1080 at 0,0, as mss lists them
LAYOUT = [
    {"left": -1280, "top": -200, "width": 3200, "height": 1280},
    {"left": 0, "top": 0, "width": 1920, "height": 1080, "is_primary": True, "output": "DP-1"},
    {"left": -1280, "top": -200, "width": 1280, "height": 1024, "output": "HDMI-1"},
]


def monitors() -> list[Monitor]:
    return list_monitors(SimpleNamespace(monitors=LAYOUT))


def test_list_monitors_keeps_names_primaries_and_negative_offsets() -> None:
    listed = monitors()
    assert [m.line() for m in listed] == [
        "0: 3200x1280 at -1280,-200",
        "1: 1920x1080 at 0,0 (DP-1, primary)",
        "2: 1280x1024 at -1280,-200 (HDMI-1)",
    ]


def test_one_monitor_says_nothing() -> None:
    one = [Monitor(0, 0, 0, 1920, 1080), Monitor(1, 0, 0, 1920, 1080)]
    assert monitor_note(one, 1, Size(1280, 720)) == ""


@pytest.mark.parametrize(
    ("index", "expected"),
    [
        (1, "monitor 1 of 2 only (1920x1080)"),
        (2, "monitor 2 of 2 only (1280x1024)"),
        (0, "monitor 1 from (512, 80) to (1279, 511); monitor 2 from (0, 0) to (511, 409)"),
    ],
)
def test_the_note_names_the_monitor_or_where_each_is(index: int, expected: str) -> None:
    listed = monitors()
    model = fit_size(listed[index].size, 1280)
    assert expected in monitor_note(listed, index, model)


@pytest.mark.parametrize("index", [1, 2, 0])
def test_corners_map_onto_the_monitor_at_its_offset(index: int) -> None:
    m = monitors()[index]
    model = fit_size(m.size, 1280)
    corners = [(0, 0), (model.width - 1, 0), (0, model.height - 1)]
    corners.append((model.width - 1, model.height - 1))
    real = [model_to_screen(x, y, model, m.size, m.origin) for x, y in corners]
    right, bottom = m.left + m.width - 1, m.top + m.height - 1
    ends = [(m.left, m.top), (right, m.top), (m.left, bottom), (right, bottom)]
    span = m.width / model.width  # screen pixels per model pixel: a corner pixel's reach
    for (x, y), (cx, cy) in zip(real, ends, strict=True):
        assert abs(x - cx) <= span / 2 and abs(y - cy) <= span / 2, (real, ends)
        assert m.left <= x <= right and m.top <= y <= bottom
    assert [screen_to_model(x, y, model, m.size, m.origin) for x, y in real] == corners
