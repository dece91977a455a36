"""Downscaling by area averaging: the two-tap positions, the picture's values, and where
things land (a pointer position maps as before)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from jarvis.desktop.downscale import axis_positions, downscale, downscale_bgrx, two_taps
from jarvis.geometry import Size, fit_size, screen_to_model


@pytest.mark.parametrize(
    ("n_src", "n_dst", "positions"),
    [
        (3, 2, [1 / 3, 5 / 3]),  # 1920 -> 1280: (2a + b) / 3, (b + 2c) / 3
        (4, 2, [0.5, 2.5]),  # by two: the mean of two
        (4, 3, [0.25, 1.5, 2.75]),  # 2560 -> 1920
        (5, 5, [0, 1, 2, 3, 4]),  # the same size
        (5, 3, None),  # a pixel covers parts of three: not two taps
        (2, 3, None),  # an upscale
    ],
)
def test_axis_positions(n_src: int, n_dst: int, positions: list[float] | None) -> None:
    got = axis_positions(n_src, n_dst)
    if positions is None:
        assert got is None
    else:
        assert got is not None
        assert np.allclose(got, positions, atol=1e-6)


def exact_area_mean(pixels: np.ndarray, dst: Size) -> np.ndarray:
    """The mean of the area each small pixel covers, in floats (the definition)."""
    h, w = pixels.shape[:2]

    def weights(n_src: int, n_dst: int) -> np.ndarray:
        m = np.zeros((n_dst, n_src))
        for i in range(n_dst):
            a, b = i * n_src / n_dst, (i + 1) * n_src / n_dst
            for j in range(int(a), min(n_src, int(np.ceil(b)))):
                m[i, j] = min(b, j + 1) - max(a, j)
        return m / m.sum(axis=1, keepdims=True)

    wy, wx = weights(h, dst.height), weights(w, dst.width)
    return np.einsum("yi,ijc,xj->yxc", wy, pixels.astype(float), wx)


def bgrx(image: Image.Image) -> bytearray:
    return bytearray(image.tobytes("raw", "BGRX"))


@pytest.mark.parametrize(
    ("src", "dst"),
    [("1920x1080", "1280x720"), ("2560x1440", "1280x720"), ("1366x768", "1280x720")],
)
def test_the_buffer_and_the_image_give_the_same_picture(src: str, dst: str) -> None:
    """From the captured BGRX buffer or from an RGB image of the same pixels: one picture."""
    s, d = Size.parse(src), Size.parse(dst)
    image = Image.effect_noise((s.width, s.height), 64).convert("RGB")
    from_buffer = downscale_bgrx(bgrx(image), s, d)
    assert from_buffer.mode == "RGB" and from_buffer.size == (d.width, d.height)
    assert from_buffer.tobytes() == downscale(image, d).tobytes()


@pytest.mark.parametrize(
    ("src", "dst"), [("48x27", "32x18"), ("64x36", "32x18"), ("96x54", "32x18")]
)
def test_the_picture_is_the_area_mean(src: str, dst: str) -> None:
    """Two taps (3:2), by two and by three: within one level of the exact area mean."""
    s, d = Size.parse(src), Size.parse(dst)
    image = Image.effect_noise((s.width, s.height), 64).convert("RGB")
    got = np.asarray(downscale_bgrx(bgrx(image), s, d)).astype(float)
    assert np.abs(got - exact_area_mean(np.asarray(image), d)).max() <= 1.01


def test_three_to_two_weights() -> None:
    """One row 0, 90, 180: area means 30 and 150 (Pillow's BOX gives 45 and 180)."""
    row = np.array([[[0, 0, 0], [90, 90, 90], [180, 180, 180]]] * 3, np.uint8)
    small = downscale(Image.fromarray(row, "RGB"), Size(2, 2))
    assert np.asarray(small)[0, :, 0].tolist() == [30, 150]
    assert two_taps(Size(1920, 1080), Size(1280, 720))
    assert not two_taps(Size(1366, 768), Size(1280, 720))


def test_a_screen_block_lands_where_the_pointer_mapping_puts_it() -> None:
    """A white block on a 1920x1080 screen is white in the picture exactly over the model
    pixels its screen pixels map to, and the colours stay in place (blue stays blue)."""
    screen = Size(1920, 1080)
    model = fit_size(screen, 1280)
    image = Image.new("RGB", (screen.width, screen.height), (0, 0, 255))
    image.paste((255, 255, 255), (300, 150, 600, 450))  # x 300..599, y 150..449
    small = np.asarray(downscale_bgrx(bgrx(image), screen, model))
    x0, y0 = screen_to_model(300, 150, model, screen)
    x1, y1 = screen_to_model(599, 449, model, screen)
    assert (x0, y0, x1, y1) == (200, 100, 399, 299)
    assert (small[y0 : y1 + 1, x0 : x1 + 1] == 255).all()
    assert small[y0 - 1, x0].tolist() == [0, 0, 255]
    assert small[y1 + 1, x1 + 1].tolist() == [0, 0, 255]
    assert small[0, 0].tolist() == small[-1, -1].tolist() == [0, 0, 255]
