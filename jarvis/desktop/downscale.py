"""Downscaling a screen to the model's size by area averaging, fast.

Each pixel of the small picture is the mean of the screen area it covers (pixel ``i`` of
``n_dst`` covers ``[i * n_src / n_dst, (i + 1) * n_src / n_dst)`` of the source axis): the
pixel-centre convention of :mod:`jarvis.geometry`, so a pointer position maps the same way
whatever the filter.

Three ways, the fastest that is exact for the sizes:

- **two taps**: where every small pixel covers parts of at most two screen pixels on each
  axis (1920 -> 1280 is 3 -> 2: ``(2a + b) / 3`` and ``(b + 2c) / 3``), the area mean is a
  linear interpolation at a fixed position, so OpenCV's ``remap`` with precomputed maps does
  it in one pass straight from the captured BGRX buffer (1920x1080 -> 1280x720: about 4 ms
  of CPU, against 18 ms for Pillow's BOX resize, which at 1.5 samples rather than averages);
- **integer factors**: Pillow's ``reduce`` (3840x2160 -> 1280x720); by two (2560x1440 ->
  1280x720) straight from the buffer with OpenCV's area resize, which is the same mean;
- anything else: Pillow's BOX resize.

The maps depend only on the two sizes and are kept (a few MB for a 1280x720 picture).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from PIL import Image

from jarvis.geometry import Size

_RESAMPLE = Image.Resampling.BOX


def axis_positions(n_src: int, n_dst: int) -> np.ndarray | None:
    """For each of ``n_dst`` pixels, the source position whose linear interpolation is the
    mean of the area it covers; None where that is not exact (a pixel covering parts of
    three source pixels, or an upscale).

    Integer arithmetic on ``a = i * n_src`` and ``b = (i + 1) * n_src`` in units of
    ``1 / n_dst``: the area starts in pixel ``a // n_dst`` and ends in ``(b - 1) // n_dst``.
    """
    if n_dst <= 0 or n_dst > n_src:
        return None
    i = np.arange(n_dst, dtype=np.int64)
    a, b = i * n_src, (i + 1) * n_src
    first, last = a // n_dst, (b - 1) // n_dst
    if np.any(last - first > 1):
        return None
    w_first = (first + 1) * n_dst - a  # the part of the first pixel covered
    w_last = b - last * n_dst  # the part of the last one (the same pixel: no offset)
    offset = np.where(last > first, w_last / (w_first + w_last), 0.0)
    return (first + offset).astype(np.float32)


@functools.lru_cache(maxsize=8)
def _maps(src: Size, dst: Size) -> tuple[Any, Any] | None:
    xs, ys = axis_positions(src.width, dst.width), axis_positions(src.height, dst.height)
    if xs is None or ys is None:
        return None
    map_x = np.ascontiguousarray(np.broadcast_to(xs, (dst.height, dst.width)))
    map_y = np.ascontiguousarray(np.broadcast_to(ys[:, None], (dst.height, dst.width)))
    return map_x, map_y  # float maps: faster in remap than OpenCV's fixed-point ones


def two_taps(src: Size, dst: Size) -> bool:
    """Whether ``src -> dst`` is done by the two-tap remap."""
    return _maps(src, dst) is not None


def _integer_factor(src: Size, dst: Size) -> int | None:
    """The factor when ``dst`` is ``src`` divided by the same whole number on both axes
    (1: the same size)."""
    fx, fy = src.width / dst.width, src.height / dst.height
    return int(fx) if fx == fy and fx.is_integer() else None


def _remap(pixels: np.ndarray, maps: tuple[Any, Any]) -> np.ndarray:
    import cv2

    return cv2.remap(pixels, maps[0], maps[1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def downscale_bgrx_array(raw: Any, src: Size, dst: Size) -> np.ndarray | None:
    """The BGRX array of ``dst`` from a BGRX screen buffer of ``src`` (mss's ``raw``: any
    object with the buffer protocol, read in place) where OpenCV does it (two taps, or by
    two); None for the other sizes."""
    factor = _integer_factor(src, dst)
    maps = _maps(src, dst) if factor is None else None
    if factor != 2 and maps is None:
        return None
    import cv2

    pixels = np.frombuffer(raw, np.uint8).reshape(src.height, src.width, 4)
    if maps is not None:
        return _remap(pixels, maps)
    # OpenCV's area mean by two is Pillow's reduce(2), byte for byte, 4x faster
    return cv2.resize(pixels, (dst.width, dst.height), interpolation=cv2.INTER_AREA)


def downscale_bgrx(raw: Any, src: Size, dst: Size) -> Image.Image:
    """An RGB picture of ``dst`` from a BGRX screen buffer of ``src``; the same picture as
    :func:`downscale` of those pixels."""
    small = downscale_bgrx_array(raw, src, dst)
    if small is not None:
        return Image.frombytes("RGB", (dst.width, dst.height), small.data, "raw", "BGRX")
    image = Image.frombytes("RGB", (src.width, src.height), raw, "raw", "BGRX")
    return downscale(image, dst)


def downscale(image: Image.Image, dst: Size) -> Image.Image:
    """``image`` at ``dst`` by area averaging; ``image`` itself when it has that size."""
    src = Size(image.width, image.height)
    if src == dst:
        return image
    factor = _integer_factor(src, dst)
    if factor is not None:
        return image.reduce(factor)
    maps = _maps(src, dst)
    if maps is not None and image.mode in ("RGB", "L"):
        return Image.fromarray(_remap(np.asarray(image), maps), image.mode)
    return image.resize((dst.width, dst.height), _RESAMPLE)
