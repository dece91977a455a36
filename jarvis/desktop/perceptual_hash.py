"""The 64-bit perceptual hash (pHash) of a picture: the bits ``imagehash.phash`` gives,
computed with numpy alone. imagehash takes its DCT from ``scipy.fftpack``, and loading
SciPy cost a `jarvis run` 0.3 to 1 s of CPU before its first model request (issue 40).

The hash, as imagehash makes it: the picture in grey at 32x32 (Lanczos), its 2-D DCT-II
(SciPy's unnormalised one: ``y[k] = 2 * sum(x[n] * cos(pi * k * (2n + 1) / 2N))`` down the
columns, then along the rows), the 8x8 lowest frequencies of that, and a bit for each one
above their median, row by row as 16 hex digits. Only those 8 rows and 8 columns are
computed: two small matrix products.

A matrix product and SciPy's FFT round differently in a float's last bits. Where two
coefficients are equal in exact arithmetic, or zero (a flat or a mirrored picture), that
noise alone would put them either side of the median; rounding the coefficients to 1e-6
makes such ties exact, and a tie is not above. Checked against imagehash on 29,296
pictures (the machine's icons and images, 961 Jarvis screenshots, noise, flat, mirrored
and boxed test pictures): the same hash for each; 99 of them differed without the
rounding. imagehash itself can still differ on a picture that is its own transpose, where
its answer is SciPy's rounding noise.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

HASH_SIZE = 8
"""The hash is HASH_SIZE x HASH_SIZE bits."""
SIDE = HASH_SIZE * 4
"""The grey picture's side (imagehash's ``highfreq_factor`` of 4)."""
DECIMALS = 6
"""Coefficients are compared after rounding to this many decimals (ties made exact)."""

_n = np.arange(SIDE)
_k = np.arange(HASH_SIZE)[:, None]
_DCT = 2.0 * np.cos(np.pi * _k * (2 * _n + 1) / (2 * SIDE))
"""The first HASH_SIZE rows of the SIDE-point DCT-II matrix, SciPy's scaling."""


def phash(image: Image.Image) -> str:
    """The pHash of ``image`` as 16 hex digits (``str(imagehash.phash(image))``)."""
    grey = image.convert("L").resize((SIDE, SIDE), Image.Resampling.LANCZOS)
    pixels = np.asarray(grey, dtype=np.float64)
    low = (_DCT @ pixels @ _DCT.T).round(DECIMALS)
    bits = low > np.median(low)
    return np.packbits(bits).tobytes().hex()
