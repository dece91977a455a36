"""Capturing the real (Xvfb) screen in model space, with the Tk app on it."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from jarvis.config import load_settings
from jarvis.desktop.screen import Screen, Size, phash_hex, resize_image
from tests.tkdriver import TkApp

RED = (0xC0, 0x39, 0x2B)  # the app's animated square
BACKGROUND = (0xDF, 0xE6, 0xEE)  # the app's canvas


@pytest.fixture
def screen(xserver: object) -> Iterator[Screen]:
    with Screen() as s:
        yield s


def _close(a: object, b: tuple[int, ...], tolerance: int = 12) -> bool:
    assert isinstance(a, tuple), a
    return all(abs(x - y) <= tolerance for x, y in zip(a, b, strict=False))


def test_geometry_of_the_session_screen(screen: Screen) -> None:
    assert screen.size == Size(1920, 1080)
    assert screen.model_size == Size(1280, 720)
    assert screen.origin == (0, 0)
    assert screen.to_screen(1279, 719) == (1919, 1079)
    assert screen.to_model(960, 540) == (640, 360)
    assert screen.contains_model_point(1279, 719)
    assert not screen.contains_model_point(1280, 0)
    with pytest.raises(ValueError, match="outside"):
        screen.to_screen(-1, 0)


def test_capture_is_in_model_space_with_the_right_colours(tkapp: TkApp, screen: Screen) -> None:
    tkapp.animate(1)  # one frame: the square ends at its final place
    tkapp.wait_kind("animate_done")
    tkapp.sync()
    obs = screen.capture()
    assert obs.image.size == (1280, 720)
    assert (obs.model_size, obs.screen_size, obs.origin) == (
        Size(1280, 720),
        Size(1920, 1080),
        (0, 0),
    )
    assert obs.physical_size == Size(1920, 1080)
    assert obs.media_type == "image/jpeg"
    decoded = Image.open(io.BytesIO(obs.data))
    assert decoded.format == "JPEG" and decoded.size == (1280, 720)
    # The square is 80x80 at x = 0.8 * 1920, y = 540: its centre, seen in the model image.
    mx, my = screen.to_model(int(1920 * 0.8) + 40, 540 + 40)
    assert _close(obs.image.getpixel((mx, my)), RED), obs.image.getpixel((mx, my))
    assert _close(decoded.getpixel((mx, my)), RED)
    assert _close(obs.image.getpixel(screen.to_model(1750, 350)), BACKGROUND)
    assert len(obs.phash) == 16 and int(obs.phash, 16) >= 0
    assert set(obs.timings_ms) == {"capture", "downscale", "encode", "phash", "total"}
    assert all(v >= 0 for v in obs.timings_ms.values())


def test_png_is_lossless_and_phash_tracks_changes(tkapp: TkApp, xserver: object) -> None:
    with Screen(image_format="png", max_side=800) as screen:
        assert screen.model_size == Size(800, 450)
        first = screen.capture()
        assert first.media_type == "image/png"
        decoded = Image.open(io.BytesIO(first.data)).convert("RGB")
        assert decoded.tobytes() == first.image.tobytes()
        again = screen.capture()
        assert again.phash == first.phash  # the same screen hashes the same
        tkapp.focus("notes")
        tkapp.command("animate 1")
        tkapp.wait_kind("animate_done")
        tkapp.sync()
        moved = screen.capture()
        assert moved.phash != first.phash


def test_frame_digest_sees_a_one_pixel_change(tkapp: TkApp, screen: Screen) -> None:
    a, b = screen.frame_digest(), screen.frame_digest()
    assert a == b  # a still screen
    tkapp.focus("box")  # the caret appears: a 1-2 px wide line
    tkapp.sync()
    assert screen.frame_digest() != a


def test_settings_choose_monitor_size_and_format(xserver: object, tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path, max_side=1024, image_format="png", jpeg_quality=50)
    with Screen.from_settings(settings) as screen:
        assert screen.model_size == Size(1024, 576)
        assert screen.image_format == "png"
        assert screen.monitor == 1
    with pytest.raises(ValueError, match="monitor 7 does not exist"):
        Screen(monitor=7)
    with pytest.raises(ValueError, match="image format"):
        Screen(image_format="gif")  # type: ignore[arg-type]


def test_model_size_override(xserver: object) -> None:
    with Screen(model_size=Size(1280, 800)) as screen:  # a distorting choice, mapped per axis
        assert screen.to_screen(1279, 799) == (1919, 1079)
        assert screen.capture().image.size == (1280, 800)


def test_integer_factors_reduce() -> None:
    image = Image.effect_noise((2560, 1440), 64).convert("RGB")
    assert resize_image(image, Size(1280, 720)).tobytes() == image.reduce(2).tobytes()


def test_phash_hex_is_stable_and_sensitive() -> None:
    image = Image.effect_noise((1280, 720), 64).convert("RGB")
    assert phash_hex(image) == phash_hex(image.copy())
    other = Image.effect_noise((1280, 720), 64).convert("RGB").rotate(90)
    assert phash_hex(image) != phash_hex(other)
