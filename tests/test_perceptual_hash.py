"""The pHash without SciPy (jarvis.desktop.perceptual_hash) gives imagehash's bits, so a
hash stays comparable with those already stored (screenshot names, step files, replays):
real screenshots, noise, flat, mirrored and boxed pictures, the way the screen path
calls it (phash_hex) and straight."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import imagehash
import numpy as np
import pytest
from PIL import Image, ImageDraw

from jarvis.desktop.perceptual_hash import phash
from jarvis.desktop.screen import phash_hex

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOTS = [*sorted(ROOT.glob("docs/*.png")), ROOT / "tests/data/tui_screen.png"]


def pictures(seed: int) -> Iterator[tuple[str, Image.Image]]:
    rng = np.random.default_rng(seed)
    for i in range(40):
        yield f"noise {i}", Image.fromarray(rng.integers(0, 256, (90, 140, 3), dtype=np.uint8))
    for grey in (0, 1, 37, 128, 254, 255):
        yield f"flat {grey}", Image.new("L", (160, 100), grey)
    for i in range(40):
        half = rng.integers(0, 256, (64, 32), dtype=np.uint8)
        yield f"mirrored {i}", Image.fromarray(np.concatenate([half, half[:, ::-1]], axis=1))
        top = rng.integers(0, 256, (32, 64), dtype=np.uint8)
        yield f"upside {i}", Image.fromarray(np.concatenate([top, top[::-1]], axis=0))
    for i in range(60):  # windows and buttons on a desktop's plain background
        image = Image.new("RGB", (320, 200), tuple(int(v) for v in rng.integers(0, 256, 3)))
        draw = ImageDraw.Draw(image)
        for _ in range(int(rng.integers(1, 6))):
            x0, x1 = sorted(int(v) for v in rng.integers(0, 320, 2))
            y0, y1 = sorted(int(v) for v in rng.integers(0, 200, 2))
            draw.rectangle((x0, y0, x1, y1), fill=tuple(int(v) for v in rng.integers(0, 256, 3)))
            draw.text((x0 + 2, y0 + 2), "Save as...", fill=(0, 0, 0))
        yield f"boxes {i}", image


def test_the_same_bits_as_imagehash_on_many_pictures() -> None:
    differ = [name for name, image in pictures(40) if phash(image) != str(imagehash.phash(image))]
    assert differ == []


@pytest.mark.parametrize("path", SCREENSHOTS, ids=lambda p: p.name)
def test_a_screenshot_hashes_as_before(path: Path) -> None:
    with Image.open(path) as opened:
        image = opened.convert("RGB")
    factor = max(1, min(image.width, image.height) // 180)  # as phash_hex reduces it
    small = image.reduce(factor) if factor > 1 else image
    assert phash_hex(image) == str(imagehash.phash(small))
    assert len(phash_hex(image)) == 16


def test_a_change_on_screen_changes_the_hash() -> None:
    image = Image.new("RGB", (320, 200), (240, 240, 240))
    dialog = image.copy()
    ImageDraw.Draw(dialog).rectangle((60, 40, 260, 160), fill=(40, 40, 40))
    distance = bin(int(phash(image), 16) ^ int(phash(dialog), 16)).count("1")
    assert distance > 10
