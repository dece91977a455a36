"""From a screen's downscaled pixels to the picture a model gets: encoded, hashed.

The downscale (:mod:`jarvis.desktop.downscale`) leaves the small picture as OpenCV's BGRX
array on its fast paths. OpenCV encodes that array to JPEG straight away, with the same
libjpeg settings as Pillow (quality, 4:2:0, no optimisation), so the bytes are Pillow's,
byte for byte, and it lets go of the GIL while it encodes, where Pillow's encoder holds it.
So the worker thread makes the RGB picture and its pHash at the same time on the other
core, instead of waiting for the encoder to let it run.
"""

from __future__ import annotations

import io
import time
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from PIL import Image

from jarvis.desktop.downscale import downscale
from jarvis.desktop.perceptual_hash import phash
from jarvis.geometry import Size

ImageFormat = Literal["jpeg", "png"]
Pixels = np.ndarray | Image.Image
"""A small picture: an (h, w, 4) BGRX array, or a Pillow image."""


@dataclass
class Observation:
    """One screenshot in model space, ready to send, with its geometry and timings."""

    image: Image.Image
    data: bytes
    media_type: str
    phash: str
    model_size: Size
    screen_size: Size
    origin: tuple[int, int]
    timings_ms: dict[str, float] = field(default_factory=dict)
    physical_size: Size | None = None
    image_size: Size | None = None
    """The pixel size of ``image`` when it differs from ``model_size`` (a profile whose
    coordinates are relative puts them on a grid of their own; see jarvis.llm.profiles)."""
    tree: str = ""
    """The accessibility tree's text for the model, or a note that there is none (the
    ``observation`` setting; see jarvis.desktop.a11y.view)."""
    tree_seconds: float = 0.0
    monitor_note: str = ""
    """What the screenshot shows when the display has several monitors (which one, or
    where each is in the picture); "" with one monitor."""


def phash_hex(image: Image.Image) -> str:
    """The 64-bit perceptual hash of a screenshot as 16 hex digits.

    A box reduction to at most 320 px first makes it about 4x faster; use this
    function wherever screenshots are compared.
    """
    factor = max(1, min(image.width, image.height) // 180)
    small = image.reduce(factor) if factor > 1 else image
    return phash(small)


def encode_image(image: Image.Image, image_format: ImageFormat, jpeg_quality: int = 80) -> bytes:
    buf = io.BytesIO()
    if image_format == "jpeg":
        image.save(buf, "JPEG", quality=jpeg_quality)
    elif image_format == "png":
        image.save(buf, "PNG", compress_level=1)
    else:
        raise ValueError(f"unknown image format {image_format!r} (jpeg or png)")
    return buf.getvalue()


def resize_image(image: Image.Image, size: Size) -> Image.Image:
    """Downscale by area averaging (:func:`jarvis.desktop.downscale.downscale`): the picture
    a screenshot of these pixels gets."""
    return downscale(image, size)


def bgrx_image(pixels: np.ndarray) -> Image.Image:
    """The RGB picture of a BGRX array."""
    height, width = pixels.shape[:2]
    return Image.frombytes("RGB", (width, height), pixels.data, "raw", "BGRX")


def encode_bgrx_jpeg(pixels: np.ndarray, jpeg_quality: int) -> bytes:
    """A BGRX array as JPEG: the bytes :func:`encode_image` gives for its picture."""
    import cv2

    ok, data = cv2.imencode(".jpg", pixels, [cv2.IMWRITE_JPEG_QUALITY, jpeg_quality])
    if not ok:
        raise ValueError(f"OpenCV could not encode a {pixels.shape} picture as JPEG")
    return data.tobytes()


def encode_pixels(pixels: Pixels, image_format: ImageFormat, jpeg_quality: int) -> bytes:
    """The small picture encoded (an array to JPEG by OpenCV, anything else by Pillow)."""
    if isinstance(pixels, np.ndarray):
        if image_format == "jpeg":
            return encode_bgrx_jpeg(pixels, jpeg_quality)
        pixels = bgrx_image(pixels)
    return encode_image(pixels, image_format, jpeg_quality)


def _image_and_hash(pixels: np.ndarray) -> tuple[Image.Image, str]:
    image = bgrx_image(pixels)
    return image, phash_hex(image)


def finish(
    pixels: Pixels, image_format: ImageFormat, jpeg_quality: int, worker: Executor
) -> tuple[Image.Image, bytes, str, float]:
    """(the picture, its encoding, its pHash, when the encoding ended by
    ``time.perf_counter()``): the hash (and an array's RGB picture) made on ``worker``
    while this thread encodes."""
    if isinstance(pixels, np.ndarray) and image_format == "jpeg":
        both = worker.submit(_image_and_hash, pixels)
        data = encode_bgrx_jpeg(pixels, jpeg_quality)
        encoded = time.perf_counter()
        image, digest = both.result()
        return image, data, digest, encoded
    image = pixels if isinstance(pixels, Image.Image) else bgrx_image(pixels)
    hashing = worker.submit(phash_hex, image)
    data = encode_image(image, image_format, jpeg_quality)
    encoded = time.perf_counter()
    return image, data, hashing.result(), encoded
