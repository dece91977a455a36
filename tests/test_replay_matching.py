"""The replay's measures on synthetic pictures: pHash distance, template matches, shifts."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from jarvis.runs.markers import to_picture
from jarvis.runs.matching import find_target, global_shift, has_contrast, phash_distance
from jarvis.runs.step_file import Monitor, StepFile, call_points


def scene(dx: int = 0, dy: int = 0, size: tuple[int, int] = (640, 400)) -> Image.Image:
    """A busy picture: random blocks, drawn shifted by (dx, dy)."""
    rng = np.random.default_rng(7)
    image = Image.new("RGB", size, "#dfe6ee")
    draw = ImageDraw.Draw(image)
    for _ in range(120):
        x, y = int(rng.integers(0, size[0])), int(rng.integers(0, size[1]))
        w, h = int(rng.integers(5, 40)), int(rng.integers(5, 40))
        colour = tuple(int(c) for c in rng.integers(0, 255, 3))
        draw.rectangle((x + dx, y + dy, x + dx + w, y + dy + h), fill=colour)
    return image


BOX = (200, 150, 296, 246)
FULL = (0, 0, 640, 400)


@pytest.mark.parametrize(
    ("a", "b", "bits"),
    [
        ("0" * 16, "0" * 16, 0),
        ("f" * 16, "0" * 16, 64),
        ("00000000000000ff", "0" * 16, 8),
        ("", "0", 64),
        ("zz", "00", 64),
    ],
)
def test_phash_distance(a: str, b: str, bits: int) -> None:
    assert phash_distance(a, b) == bits


@pytest.mark.parametrize("shift", [(0, 0), (40, 40), (-25, 13), (120, -60)])
def test_a_moved_crop_is_found_with_its_offset(shift: tuple[int, int]) -> None:
    crop = scene().crop(BOX)
    match = find_target(scene(*shift), FULL, crop, BOX, 0.9, bounds=FULL)
    assert match is not None and match.offset == shift and match.score > 0.99
    assert not match.ambiguous


def test_no_match_below_the_score_is_none() -> None:
    crop = scene().crop(BOX)
    other = Image.new("RGB", (640, 400), "white")
    ImageDraw.Draw(other).ellipse((100, 100, 300, 300), fill="black")
    assert find_target(other, FULL, crop, BOX, 0.9, bounds=FULL) is None


def test_a_repeating_pattern_is_ambiguous_and_the_expected_place_wins() -> None:
    stripes = Image.new("RGB", (640, 400), "white")
    draw = ImageDraw.Draw(stripes)
    for x in range(0, 640, 32):
        draw.rectangle((x, 0, x + 8, 400), fill="black")
    crop = stripes.crop(BOX)
    assert has_contrast(crop)
    match = find_target(stripes, FULL, crop, BOX, 0.9, expected=(64, 0), bounds=FULL)
    assert match is not None and match.ambiguous
    assert match.offset == (64, 0)
    assert match.nearest((0, 0)).offset == (0, 0)


def test_a_best_match_on_an_open_edge_of_the_search_is_ambiguous() -> None:
    crop = scene().crop(BOX)
    moved = scene(60, 0)
    region_box = (150, 100, 356, 296)  # reaches only 60 px to the right of the crop
    region = moved.crop(region_box)
    match = find_target(region, region_box, crop, BOX, 0.9, bounds=FULL)
    assert match is not None and match.offset == (60, 0) and match.at_edge and match.ambiguous


def test_flat_crops_have_no_contrast() -> None:
    assert not has_contrast(Image.new("RGB", (96, 96), "white"))


def test_global_shift_finds_how_the_picture_moved() -> None:
    shift = global_shift(scene(), scene(30, -12))
    assert shift is not None
    assert abs(shift[0] - 30) < 1 and abs(shift[1] + 12) < 1
    assert global_shift(scene(), scene(size=(320, 200))) is None


def test_markers_map_screen_points_to_the_picture() -> None:
    step = StepFile(
        task_id="t",
        step=1,
        started=0.0,
        monitor=Monitor(origin=(1920, 0), screen=(1920, 1080), model=(1280, 720)),
        scale=(1.5, 1.5),
    )
    assert to_picture(step, 1920, 0) == (0.5 / 1.5, 0.5 / 1.5)
    assert to_picture(step, 1920 + 1919, 1079) == (1919.5 / 1.5, 1079.5 / 1.5)


@pytest.mark.parametrize(
    ("name", "args", "points"),
    [
        ("click", {"x": 3, "y": 4}, [(3, 4)]),
        ("drag", {"startX": 1, "startY": 2, "endX": 5, "endY": 6}, [(1, 2), (5, 6)]),
        ("scroll", {"x": 9, "y": 8, "direction": "up"}, [(9, 8)]),
        ("type", {"text": "x"}, []),
        ("click", {"x": "bad"}, []),
    ],
)
def test_call_points(name: str, args: dict, points: list) -> None:
    assert call_points(name, args) == points
