"""The screen of a wlroots desktop: captures through screencopy (the ``grim`` binary).

:class:`WlScreen` is :class:`~jarvis.desktop.screen.Screen` with another source of
pixels: the sizing, model mapping, encoding, hashing and zoom are the same. ``monitor``
counts as mss counts: 0 is the whole layout, 1.. the outputs left to right (as sway
reports them, positions read back). Its ``size`` and ``origin`` are logical pixels (the
layout's coordinates, where input lands); a capture is device pixels (a scale-2 output
gives twice as many each way), and :meth:`WlScreen.logical_image` is the same picture
converted to logical size with the output's scale. The whole layout is taken at the
largest scale among its outputs (grim's rule); the model's screenshot is resized from it.
"""

from __future__ import annotations

import io
import subprocess
import threading
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from PIL import Image

from jarvis.desktop.monitors import Monitor
from jarvis.desktop.screen import ImageFormat, Screen
from jarvis.desktop.wlroots.session import (
    Output,
    WaylandDisplay,
    WaylandError,
    layout_box,
    read_outputs,
)
from jarvis.geometry import Size

if TYPE_CHECKING:
    from jarvis.config import Settings

GRIM_TIMEOUT_S = 10.0


def grim(
    where: WaylandDisplay,
    output: str | None = None,
    scale: float | None = None,
    box: tuple[int, int, int, int] | None = None,
) -> Image.Image:
    """One screencopy frame of ``output`` (None: the whole layout) as an RGB image;
    ``scale`` asks grim for that many device pixels per logical pixel; ``box`` (left,
    top, right, bottom in logical pixels) cuts that region of the layout instead."""
    argv = ["grim", "-t", "ppm"]
    if scale is not None:
        argv += ["-s", f"{scale:g}"]
    if output is not None:
        argv += ["-o", output]
    if box is not None:
        left, top, right, bottom = box
        argv += ["-g", f"{left},{top} {right - left}x{bottom - top}"]
    try:
        done = subprocess.run(
            [*argv, "-"], capture_output=True, timeout=GRIM_TIMEOUT_S, env=where.env()
        )
    except FileNotFoundError as exc:
        raise WaylandError("grim is not installed (apt install grim)") from exc
    if done.returncode != 0 or not done.stdout:
        detail = done.stderr.decode(errors="replace").strip()
        raise WaylandError(f"grim could not capture the screen: {detail[:300]}")
    image = Image.open(io.BytesIO(done.stdout))
    image.load()
    return image.convert("RGB") if image.mode != "RGB" else image


class WlScreen(Screen):
    """One output of a wlroots compositor, or its whole layout (``monitor`` 0)."""

    def __init__(
        self,
        where: WaylandDisplay,
        monitor: int = 1,
        max_side: int = 1280,
        image_format: ImageFormat = "jpeg",
        jpeg_quality: int = 80,
        model_size: Size | None = None,
        sizer: Callable[[Size], tuple[Size, Size]] | None = None,
    ) -> None:
        self.where = where
        self.outputs: list[Output] = []
        self.output: Output | None = None
        self._grab_lock = threading.Lock()
        super().__init__(monitor, max_side, image_format, jpeg_quality, model_size, sizer)

    @classmethod
    def for_settings(
        cls,
        settings: Settings,
        where: WaylandDisplay,
        sizer: Callable[[Size], tuple[Size, Size]] | None = None,
    ) -> WlScreen:
        return cls(
            where,
            monitor=settings.monitor,
            max_side=settings.max_side,
            image_format=settings.image_format,
            jpeg_quality=settings.jpeg_quality,
            sizer=sizer,
        )

    def _open(self) -> None:
        """Read the outputs back from the compositor and take this monitor's box."""
        self.outputs = read_outputs(self.where)
        if not 0 <= self.monitor <= len(self.outputs):
            raise ValueError(f"monitor {self.monitor} does not exist (0..{len(self.outputs)})")
        if self.monitor == 0:
            self.output = None
            box = layout_box(self.outputs)
        else:
            self.output = self.outputs[self.monitor - 1]
            box = self.output.box
        self.monitors = [Monitor(0, *layout_box(self.outputs))] + [
            Monitor(i + 1, *o.box, name=o.name) for i, o in enumerate(self.outputs)
        ]
        self._take_box(box)

    def reopen(self, display: object) -> None:
        """Read the outputs again (one was added, moved or rescaled); a wlroots screen
        never moves to another kind of display."""
        if isinstance(display, WaylandDisplay):
            self.where = display
        self._open()

    @property
    def scale(self) -> float:
        """Device pixels per logical pixel of what a capture returns."""
        outputs = [self.output] if self.output is not None else self.outputs
        return max(o.scale for o in outputs)

    def _grab_image(self) -> Image.Image:
        """This output (or the layout) now, in device pixels."""
        with self._grab_lock:
            image = grim(self.where, self.output.name if self.output else None)
        self.masks.paint(image, self.origin, (self._size.width, self._size.height))
        return image

    def _grab_frame(self) -> Image.Image:
        return self._grab_image()  # a picture (the capture scales it)

    def logical_image(self) -> Image.Image:
        """This output (or the layout) now, at its logical size."""
        with self._grab_lock:
            image = grim(self.where, self.output.name if self.output else None, scale=1)
        self.masks.paint(image, self.origin, (self._size.width, self._size.height))
        return image

    def grab_raw(self) -> tuple[Size, bytes]:
        """Device pixels as BGRA bytes, with their size (as the X11 screen gives them)."""
        image = self._grab_image()
        return Size(image.width, image.height), image.convert("RGBA").tobytes("raw", "BGRA")

    def frame_digest(self) -> bytes:
        """CRC-32 of every device pixel: settle's fingerprint of the frame. The layout's
        is taken output by output, each at its own scale: grim's picture of the whole
        layout is composed at the largest scale (measured on two outputs, 1280x720 at
        scale 1 and 800x450 at scale 2: 273 ms a frame, against about 100 ms this way)."""
        crc = 0
        with self._grab_lock:
            for output in [self.output] if self.output is not None else self.outputs:
                crc = zlib.crc32(grim(self.where, output.name).tobytes(), crc)
        return crc.to_bytes(4, "big")

    def close(self) -> None:
        self._stop_workers()
