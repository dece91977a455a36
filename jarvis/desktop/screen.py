"""Screen capture in the model's pixel space, and the coordinate arithmetic around it.

Three coordinate spaces:

- *physical*: the pixels mss captures (on a HiDPI display, e.g. 2880x1800);
- *logical*: the coordinates input uses (the same display as 1440x900 points);
  mss reports a monitor's rectangle in logical units, so the ratio of the
  captured image to that rectangle is the HiDPI factor;
- *model*: the screenshot the model sees, the monitor scaled so that its longest
  side is at most ``max_side`` (aspect kept, never upscaled; chosen from the
  logical size, since a click cannot be finer than one logical pixel).

All mappings use the pixel-centre convention: pixel ``i`` of an axis of ``n``
pixels covers ``[i, i+1)`` and is represented by its centre ``i + 0.5``, so
``dst = floor((src + 0.5) * n_dst / n_src)``. This keeps corners on corners,
maps the last pixel inside, and round-trips exactly whenever the target axis is
at least as long as the source one. The arithmetic is integer-only and lives in
:mod:`jarvis.geometry`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from PIL import Image

from jarvis.desktop.downscale import downscale, downscale_bgrx_array
from jarvis.desktop.masks import ScreenMasks
from jarvis.desktop.monitors import capture_connection, list_monitors, monitor_note
from jarvis.desktop.picture import ImageFormat, Observation, Pixels, encode_pixels, finish
from jarvis.desktop.picture import encode_image as encode_image
from jarvis.desktop.picture import phash_hex as phash_hex
from jarvis.desktop.picture import resize_image as resize_image
from jarvis.desktop.x11 import XDisplay
from jarvis.geometry import Size, contains_point, fit_size, model_to_screen, screen_to_model

if TYPE_CHECKING:
    from jarvis.config import Settings
    from jarvis.desktop.indicator import Indicator

log = logging.getLogger(__name__)

MEDIA_TYPES: dict[str, str] = {"jpeg": "image/jpeg", "png": "image/png"}
_RESAMPLE = Image.Resampling.BOX
_WORKERS = ("screen-hash", "screen-settled")


# ------------------------------------------------------------------ capture


@dataclass(frozen=True)
class _Shot:
    """A BGRX frame as mss's shot gives it (its ``raw``, ``width``, ``height``)."""

    raw: bytes
    width: int
    height: int


class Screen:
    """One monitor: capture in model space and map coordinates between the spaces.

    ``monitor`` is an mss index (1 is the primary, 0 all monitors together).
    ``model_size`` overrides the model space (default: ``fit_size(size, max_side)``);
    ``sizer`` (a model profile's rule) gives (model space, image size) from the screen size.
    Safe to use from one worker thread at a time (mss serialises grabs).
    """

    def __init__(
        self,
        monitor: int = 1,
        max_side: int = 1280,
        image_format: ImageFormat = "jpeg",
        jpeg_quality: int = 80,
        model_size: Size | None = None,
        sizer: Callable[[Size], tuple[Size, Size]] | None = None,
        display: XDisplay | None = None,
        veil: Indicator | None = None,
    ) -> None:
        """``veil``: the on-screen sign, hidden around every picture for a model."""
        if image_format not in MEDIA_TYPES:
            raise ValueError(f"unknown image format {image_format!r} (jpeg or png)")
        self.monitor = monitor
        self.display = display
        self.veil = veil
        self._max_side = max_side
        self._model_override = model_size
        self._sizer = sizer
        self._open()
        self.image_format: ImageFormat = image_format
        self.jpeg_quality = jpeg_quality
        self._pool: list[ThreadPoolExecutor] | None = None
        self._pool_lock = threading.Lock()
        self._digest_size: Size | None = None
        """The size of the last frame :meth:`frame_digest` grabbed (X11's digest: the frame)."""
        self.masks = ScreenMasks()
        """Boxes every picture has painted over (a field a secret was typed into)."""

    def _open(self) -> None:
        """Connect to the display (``display``, else the process's), and take its geometry."""
        sct, self.backend = capture_connection(self.display)
        """mss's backend: ``default``, or ``xlib`` where the default fails (Xvnc)."""
        monitors = sct.monitors
        if not 0 <= self.monitor < len(monitors):
            sct.close()
            raise ValueError(f"monitor {self.monitor} does not exist (0..{len(monitors) - 1})")
        mon = monitors[self.monitor]
        self.monitors = list_monitors(sct)
        """Every monitor of the display when it was opened: [all together, 1, 2, ...]."""
        self._sct = sct
        self._take_box(tuple(int(mon[k]) for k in ("left", "top", "width", "height")))

    def _take_box(self, box: tuple[int, ...]) -> None:
        """Capture the region ``box`` (left, top, width, height) of ``self.monitors``:
        its size, the model space and image size for it, and the note on monitors."""
        left, top, width, height = box
        self._region = {"left": left, "top": top, "width": width, "height": height}
        self._size = Size(width, height)
        self._model = self._model_override or fit_size(self._size, self._max_side)
        self._image = self._model
        if self._sizer is not None and self._model_override is None:
            self._model, self._image = self._sizer(self._size)
        self._note = monitor_note(self.monitors, self.monitor, self._model)

    def reopen(self, display: XDisplay | None) -> None:
        """Move to ``display`` (a task's private display, and back), with its size and
        model space; between tasks only, never during a capture."""
        old = self._sct
        self.display = display
        self._open()
        try:
            old.close()
        except Exception as exc:  # its server may be gone (a private display stopped)
            log.debug("closing the capture of the last display: %s", exc)

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        sizer: Callable[[Size], tuple[Size, Size]] | None = None,
        display: XDisplay | None = None,
        veil: Indicator | None = None,
    ) -> Screen:
        """The screen the settings describe, on ``display``; ``sizer`` is the model
        profile's sizing rule (:func:`jarvis.llm.profiles.select.screen_sizer`), given by
        the caller."""
        return cls(
            display=display,
            monitor=settings.monitor,
            max_side=settings.max_side,
            image_format=settings.image_format,
            jpeg_quality=settings.jpeg_quality,
            sizer=sizer,
            veil=veil,
        )

    @property
    def size(self) -> Size:
        """The monitor's logical size (the space input coordinates live in)."""
        return self._size

    @property
    def model_size(self) -> Size:
        return self._model

    @property
    def origin(self) -> tuple[int, int]:
        """The monitor's top-left corner in absolute logical coordinates."""
        return self._region["left"], self._region["top"]

    @property
    def monitor_note(self) -> str:
        """Which monitor the screenshots show, for the model ("" on a one-monitor display)."""
        return self._note

    def reachable(self, x: int, y: int) -> bool:
        """Whether the absolute logical point is on a monitor: the X server keeps the
        pointer on its monitors, so a point between them (the black parts of a picture of
        all of them) would be hit somewhere else."""
        return any(
            m.left <= x < m.left + m.width and m.top <= y < m.top + m.height
            for m in self.monitors[1:]
        )

    def to_screen(self, x: int, y: int) -> tuple[int, int]:
        """Model pixel -> absolute logical screen pixel (ValueError if outside the model)."""
        return model_to_screen(x, y, self._model, self._size, self.origin)

    def to_model(self, x: int, y: int) -> tuple[int, int]:
        """Absolute logical screen pixel -> model pixel (ValueError if off this monitor)."""
        return screen_to_model(x, y, self._model, self._size, self.origin)

    def contains_model_point(self, x: int, y: int) -> bool:
        return contains_point(x, y, self._model)

    def grab_raw(self) -> tuple[Size, bytes]:
        """The monitor's physical pixels as BGRA bytes, with their size (masks painted; the
        on-screen sign hidden while it is taken)."""
        with self._unveiled():
            shot = self._sct.grab(self._region)
        size, raw = Size(shot.width, shot.height), bytes(shot.raw)
        if self.masks.active():
            image = Image.frombytes("RGBA", (size.width, size.height), raw, "raw", "BGRA")
            self.masks.paint(image, self.origin, (self._size.width, self._size.height))
            raw = image.tobytes("raw", "BGRA")
        return size, raw

    def frame_digest(self) -> bytes:
        """The whole frame's pixels, for settle to compare with the last (equal frames:
        equal values).

        The frame itself rather than a digest of it: comparing two frames is a memcmp
        (about 1 ms at 1920x1080), cheaper than a CRC-32 of either (4 to 5 ms) or any
        downscale, and exact: a one-pixel change counts, where a thumbnail could average
        it away.
        """
        shot = self._sct.grab(self._region)
        self._digest_size = Size(shot.width, shot.height)
        frame: bytes = shot.raw  # a bytearray: compared in place
        return frame

    def prepare(self, frame: bytes) -> Future[Observation] | None:
        """The observation of a frame :meth:`frame_digest` gave, made on a worker thread
        (settle makes the one of a still screen while it waits for the next frame); None
        where that frame is not a picture for a model (the on-screen sign was on it, or a
        backend's digest is a fingerprint)."""
        size = self._digest_size
        if size is None or len(frame) != size.width * size.height * 4:
            return None
        if self.veil is not None and self.veil.where == self.display:
            return None  # settle's frames have the on-screen sign on them
        shot = _Shot(frame, size.width, size.height)
        return self._worker(1).submit(self._observation, shot, time.perf_counter())

    def _grab_image(self) -> Image.Image:
        """The monitor now, at its physical size."""
        shot = self._sct.grab(self._region)
        image = Image.frombytes("RGB", (shot.width, shot.height), shot.raw, "raw", "BGRX")
        self.masks.paint(image, self.origin, (self._size.width, self._size.height))
        return image

    def _grab_frame(self) -> Any:
        """The monitor now as the capture's first phase takes it: mss's shot here (a
        BGRX buffer, scaled in place); a backend that grabs pictures gives its
        ``_grab_image()``. Either has ``width`` and ``height`` (physical pixels)."""
        return self._sct.grab(self._region)

    def _pixels(self, frame: Any) -> Pixels:
        """A frame of :meth:`_grab_frame` at the picture's size, masks painted: an mss
        shot straight from its BGRX buffer to a BGRX array (no full-size RGB copy) where
        OpenCV scales it and no mask must be painted at full size first; else a picture."""
        if isinstance(frame, Image.Image):
            return downscale(frame, self._image)  # its _grab_image painted the masks
        physical = Size(frame.width, frame.height)
        if not self.masks.active():
            small = downscale_bgrx_array(frame.raw, physical, self._image)
            if small is not None:
                return small
        image = Image.frombytes("RGB", (frame.width, frame.height), frame.raw, "raw", "BGRX")
        self.masks.paint(image, self.origin, (self._size.width, self._size.height))
        return downscale(image, self._image)

    def encoded(self) -> bytes:
        """The screen now as the screenshot is sent (its size, format and quality), with
        none of :meth:`capture`'s extras (hash, timings): for live views."""
        small = self._pixels(self._grab_frame())
        return encode_pixels(small, self.image_format, self.jpeg_quality)

    @contextmanager
    def _unveiled(self) -> Iterator[None]:
        """The on-screen sign off this display for the block (a picture for a model)."""
        veil = self.veil
        if veil is None or veil.where != self.display:
            yield
            return
        with veil.hidden():
            yield

    def capture(self) -> Observation:
        """The screenshot now. Timings: ``capture`` (the grab), ``downscale`` (to the
        picture's size), ``encode``, ``phash`` (the hash runs on a worker thread beside the
        encoding: what it adds after the encoding ends) and ``total``."""
        t0 = time.perf_counter()
        with self._unveiled():
            frame = self._grab_frame()
        return self._observation(frame, t0)

    def _observation(self, frame: Any, t0: float) -> Observation:
        """The observation of a frame of :meth:`_grab_frame` grabbed from ``t0`` on."""
        t1 = time.perf_counter()
        physical = Size(frame.width, frame.height)
        small = self._pixels(frame)
        t2 = time.perf_counter()
        model_image, data, digest, t3 = finish(
            small, self.image_format, self.jpeg_quality, self._worker()
        )
        t4 = time.perf_counter()
        timings = {
            "capture": (t1 - t0) * 1000,
            "downscale": (t2 - t1) * 1000,
            "encode": (t3 - t2) * 1000,
            "phash": (t4 - t3) * 1000,
            "total": (t4 - t0) * 1000,
        }
        return Observation(
            image=model_image,
            data=data,
            media_type=MEDIA_TYPES[self.image_format],
            phash=digest,
            model_size=self._model,
            screen_size=self._size,
            origin=self.origin,
            timings_ms=timings,
            physical_size=physical,
            image_size=self._image,
            monitor_note=self._note,
        )

    def zoom(self, x1: int, y1: int, x2: int, y2: int) -> tuple[bytes, str, Size]:
        """A model-space rectangle of the screen at full (physical) resolution, scaled to
        fill the screenshot's size with its aspect kept (Claude's ``zoom`` action).

        Returns (encoded image, media type, its size).
        """
        ox, oy = self.origin
        left, top = self.to_screen(min(x1, x2), min(y1, y2))
        right, bottom = self.to_screen(max(x1, x2), max(y1, y2))
        with self._unveiled():
            image = self._grab_image()
        fx, fy = image.width / self._size.width, image.height / self._size.height
        box = (
            round((left - ox) * fx),
            round((top - oy) * fy),
            round((right - ox + 1) * fx),
            round((bottom - oy + 1) * fy),
        )
        crop = image.crop(box)
        scale = min(self._image.width / crop.width, self._image.height / crop.height)
        size = Size(max(1, round(crop.width * scale)), max(1, round(crop.height * scale)))
        resample = _RESAMPLE if scale < 1 else Image.Resampling.BICUBIC
        out = crop.resize((size.width, size.height), resample)
        return (
            encode_image(out, self.image_format, self.jpeg_quality),
            MEDIA_TYPES[self.image_format],
            size,
        )

    def _worker(self, which: int = 0) -> ThreadPoolExecutor:
        """Worker 0 hashes beside the encoding; 1 makes the observations settle asks for
        (its own: they hand their hashing to worker 0 and wait for it)."""
        with self._pool_lock:
            if self._pool is None:
                self._pool = [ThreadPoolExecutor(1, thread_name_prefix=n) for n in _WORKERS]
            return self._pool[which]

    def close(self) -> None:
        self._stop_workers()
        self._sct.close()

    def _stop_workers(self) -> None:
        """The settled worker first (what it runs hands work to the hash worker, and
        takes the lock to find it), the hash worker then; not under the lock."""
        with self._pool_lock:
            pools = self._pool or []
        for pool in reversed(pools):
            pool.shutdown(wait=True, cancel_futures=True)
        with self._pool_lock:
            self._pool = None

    def __enter__(self) -> Screen:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
