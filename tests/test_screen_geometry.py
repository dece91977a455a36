"""Coordinate arithmetic between model space, logical screen and physical pixels (pure)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jarvis.geometry import (
    Size,
    contains_point,
    fit_size,
    hidpi_factor,
    logical_to_physical,
    map_axis,
    model_to_screen,
    physical_to_logical,
    screen_to_model,
)

S = Size.parse


@pytest.mark.parametrize(
    ("screen", "max_side", "expected"),
    [
        ("1920x1080", 1280, "1280x720"),
        ("2560x1440", 1280, "1280x720"),
        ("1024x768", 1280, "1024x768"),  # never upscaled
        ("1280x800", 1280, "1280x800"),
        ("1920x1200", 1280, "1280x800"),
        ("2880x1800", 1280, "1280x800"),
        ("1366x768", 1280, "1280x720"),  # 719.6 rounds to 720
        ("3440x1440", 1280, "1280x536"),
        ("1080x1920", 1280, "720x1280"),  # portrait: the longest side is the height
        ("1920x1080", 1024, "1024x576"),
        ("1024x768", 800, "800x600"),
        ("5000x1", 100, "100x1"),  # a side never rounds down to zero
    ],
)
def test_fit_size_table(screen: str, max_side: int, expected: str) -> None:
    assert fit_size(S(screen), max_side) == S(expected)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 8000), st.integers(1, 8000), st.integers(16, 4000))
def test_fit_size_keeps_aspect_and_bound(w: int, h: int, max_side: int) -> None:
    fitted = fit_size(Size(w, h), max_side)
    assert max(fitted.width, fitted.height) <= max_side
    if max(w, h) <= max_side:
        assert fitted == Size(w, h)
    else:
        scale = max_side / max(w, h)
        assert max(fitted.width, fitted.height) == max_side
        assert abs(fitted.width - w * scale) <= 0.5 or fitted.width == 1
        assert abs(fitted.height - h * scale) <= 0.5 or fitted.height == 1


@pytest.mark.parametrize(
    ("model", "screen", "point", "expected"),
    [
        ("1280x720", "1920x1080", (0, 0), (0, 0)),
        ("1280x720", "1920x1080", (1279, 719), (1919, 1079)),  # the last pixel maps inside
        ("1280x720", "1920x1080", (640, 360), (960, 540)),
        ("1280x720", "1920x1080", (1, 1), (2, 2)),  # centre 1.5 * 1.5 = 2.25
        ("1280x720", "2560x1440", (0, 0), (1, 1)),  # centre of the 2x2 block's pixel 1
        ("1280x720", "2560x1440", (1279, 719), (2559, 1439)),
        ("1280x720", "2560x1440", (100, 50), (201, 101)),
        ("1024x768", "1024x768", (1023, 767), (1023, 767)),
        ("1024x768", "1024x768", (517, 3), (517, 3)),
        ("1280x800", "2880x1800", (1279, 799), (2878, 1798)),  # ratio 2.25: centre 2878.9
        ("1024x576", "1920x1080", (1023, 575), (1919, 1079)),
    ],
)
def test_model_to_screen_table(
    model: str, screen: str, point: tuple[int, int], expected: tuple[int, int]
) -> None:
    assert model_to_screen(*point, S(model), S(screen)) == expected


@pytest.mark.parametrize(
    ("origin", "point", "expected"),
    [
        ((1920, 0), (0, 0), (1920, 0)),  # second monitor to the right
        ((1920, 0), (1279, 719), (3839, 1079)),
        ((-1280, -200), (0, 0), (-1280, -200)),  # monitor left of and above the primary
        ((-1280, -200), (640, 360), (-320, 340)),
    ],
)
def test_monitor_origin_offsets(
    origin: tuple[int, int], point: tuple[int, int], expected: tuple[int, int]
) -> None:
    model, screen = S("1280x720"), S("1920x1080")
    assert model_to_screen(*point, model, screen, origin) == expected
    assert screen_to_model(*expected, model, screen, origin) == point


@pytest.mark.parametrize(
    ("model", "screen"),
    [
        ("1024x768", "1024x768"),
        ("1280x720", "1920x1080"),
        ("1280x720", "2560x1440"),
        ("1024x576", "1920x1080"),
        ("1280x800", "1440x900"),
        ("1280x800", "2560x1600"),
        ("1280x536", "3440x1440"),
    ],
)
def test_round_trips(model: str, screen: str) -> None:
    m, s = S(model), S(screen)
    ratio = max(s.width / m.width, s.height / m.height)
    bound = math.ceil(ratio / 2)
    # model -> screen -> model is exact on every pixel of each axis ...
    for x in range(m.width):
        assert map_axis(map_axis(x, m.width, s.width), s.width, m.width) == x
    for y in range(m.height):
        assert map_axis(map_axis(y, m.height, s.height), s.height, m.height) == y
    # ... and screen -> model -> screen lands within half a model pixel.
    for x in range(s.width):
        back = map_axis(map_axis(x, s.width, m.width), m.width, s.width)
        assert abs(back - x) <= bound


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 4000), st.integers(1, 8000), st.data())
def test_last_pixel_maps_inside_any_axis(src: int, dst: int, data: st.DataObject) -> None:
    value = data.draw(st.integers(0, src - 1))
    assert 0 <= map_axis(value, src, dst) <= dst - 1
    assert map_axis(0, src, dst) == 0 or dst >= 2 * src
    if dst <= 2 * src:
        assert map_axis(src - 1, src, dst) == dst - 1  # corners stay corners


@pytest.mark.parametrize(
    ("point", "inside"),
    [
        ((0, 0), True),
        ((1279, 719), True),
        ((1280, 0), False),
        ((0, 720), False),
        ((-1, 5), False),
        ((5, -1), False),
        ((640, 360), True),
    ],
)
def test_contains_point_and_outside_raises(point: tuple[int, int], inside: bool) -> None:
    model, screen = S("1280x720"), S("1920x1080")
    assert contains_point(*point, model) is inside
    if not inside:
        with pytest.raises(ValueError, match="outside the 1280x720 screenshot"):
            model_to_screen(*point, model, screen)


def test_screen_to_model_rejects_points_off_the_monitor() -> None:
    with pytest.raises(ValueError, match="outside the 1920x1080 monitor"):
        screen_to_model(1920, 10, S("1280x720"), S("1920x1080"))
    with pytest.raises(ValueError, match="outside"):
        screen_to_model(100, 100, S("1280x720"), S("1920x1080"), origin=(1920, 0))


@pytest.mark.parametrize(
    ("physical", "logical", "factor"),
    [("2880x1800", "1440x900", 2.0), ("2160x1350", "1440x900", 1.5), ("1920x1080", "1920x1080", 1)],
)
def test_hidpi_mapping(physical: str, logical: str, factor: float) -> None:
    p, lg = S(physical), S(logical)
    assert hidpi_factor(p, lg) == factor
    # corners and the last pixel
    assert logical_to_physical(0, 0, p, lg) == (math.floor(0.5 * factor),) * 2
    assert logical_to_physical(lg.width - 1, lg.height - 1, p, lg) == (p.width - 1, p.height - 1)
    assert physical_to_logical(p.width - 1, p.height - 1, p, lg) == (lg.width - 1, lg.height - 1)
    assert physical_to_logical(0, 0, p, lg) == (0, 0)
    # every logical pixel survives a trip through physical pixels
    for x in range(lg.width):
        px, _ = logical_to_physical(x, 0, p, lg)
        assert physical_to_logical(px, 0, p, lg)[0] == x
    # every physical pixel maps to the logical pixel that covers it
    for px in range(p.width):
        lx, _ = physical_to_logical(px, 0, p, lg)
        assert lx <= (px + 0.5) / factor < lx + 1


def test_hidpi_model_clicks_land_on_the_pixels_the_model_saw() -> None:
    """Capture 2880x1800 physical, input 1440x900 logical, model 1280x800 (from logical).

    A model pixel shows physical pixels around physical = model * 2880/1280; the click
    goes to the logical pixel covering them.
    """
    physical, logical = S("2880x1800"), S("1440x900")
    model = fit_size(logical, 1280)
    assert model == S("1280x800")
    for x in (0, 1, 333, 640, 1278, 1279):
        lx, _ = model_to_screen(x, 0, model, logical)
        shown_physical = (x + 0.5) * physical.width / model.width
        assert lx <= shown_physical / 2 < lx + 1


def test_size_validation_and_parse() -> None:
    assert S("1920x1080") == Size(1920, 1080)
    assert str(Size(1280, 720)) == "1280x720"
    with pytest.raises(ValueError, match="positive"):
        Size(0, 10)
    with pytest.raises(ValueError, match="positive"):
        fit_size(Size(10, 10), 0)
