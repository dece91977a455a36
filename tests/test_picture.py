"""The picture a model gets from a BGRX array: OpenCV's JPEG is Pillow's, byte for byte."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from PIL import Image, ImageDraw

from jarvis.desktop.picture import (
    bgrx_image,
    encode_bgrx_jpeg,
    encode_image,
    encode_pixels,
    finish,
    phash_hex,
)


def desktop_like(width: int, height: int) -> Image.Image:
    """Gradients, a noisy photo-like area, text and boxes: what encoders meet on screens."""
    picture = Image.linear_gradient("L").resize((width, height)).convert("RGB")
    picture.paste(Image.effect_noise((width // 3, height // 3), 70).convert("RGB"), (9, 9))
    draw = ImageDraw.Draw(picture)
    draw.rectangle((width // 2, 10, width - 10, height // 2), fill="#f4f4f4", outline="#3b6ea5")
    for y in range(20, height // 2 - 10, 14):
        draw.text((width // 2 + 6, y), "the quick brown fox jumps", fill="#222")
    return picture


def as_bgrx(image: Image.Image) -> np.ndarray:
    rgb = np.asarray(image)
    x = np.full((*rgb.shape[:2], 1), 255, np.uint8)
    return np.ascontiguousarray(np.concatenate([rgb[..., ::-1], x], axis=2))


@pytest.mark.parametrize(("width", "height"), [(1280, 720), (1279, 719), (333, 101)])
@pytest.mark.parametrize("quality", [50, 80, 95])
def test_opencv_jpeg_is_pillows_byte_for_byte(width: int, height: int, quality: int) -> None:
    image = desktop_like(width, height)
    pixels = as_bgrx(image)
    assert bgrx_image(pixels).tobytes() == image.tobytes()
    assert encode_bgrx_jpeg(pixels, quality) == encode_image(image, "jpeg", quality)


def test_finish_gives_the_picture_its_encoding_and_hash_either_way() -> None:
    image = desktop_like(640, 360)
    pixels = as_bgrx(image)
    with ThreadPoolExecutor(1) as worker:
        from_array = finish(pixels, "jpeg", 80, worker)
        from_image = finish(image, "jpeg", 80, worker)
        png = finish(pixels, "png", 80, worker)
    for picture, data, digest, _ in (from_array, from_image):
        assert picture.tobytes() == image.tobytes()
        assert data == encode_image(image, "jpeg", 80)
        assert digest == phash_hex(image)
    assert png[1] == encode_image(image, "png") == encode_pixels(pixels, "png", 80)
