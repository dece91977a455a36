"""The screen of a portal desktop: the ScreenCast streams' newest frames.

:class:`PortalScreen` is :class:`~jarvis.desktop.screen.Screen` with the portal's
streams as its source of pixels; sizing, model mapping, encoding and zoom are the
Screen's. ``monitor`` counts as on the other backends: 0 is the whole layout, 1.. the
streams in the order the portal gave them. Sizes and origins are logical pixels (the
stream's ``size`` and ``position`` properties, where input lands); a frame is device
pixels (a scale-2 monitor gives twice as many each way), and
:meth:`PortalScreen.logical_image` converts it to logical size. The whole layout is
composed at the largest scale among the streams, as grim does on wlroots.
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from PIL import Image

from jarvis.desktop.monitors import Monitor
from jarvis.desktop.portal.frames import FrameSource
from jarvis.desktop.portal.session import Stream
from jarvis.desktop.screen import ImageFormat, Screen
from jarvis.geometry import Size

if TYPE_CHECKING:
    from jarvis.config import Settings


def layout_of(streams: list[Stream]) -> tuple[int, int, int, int]:
    """The box around every stream (x, y, width, height), logical pixels."""
    left = min(s.position[0] for s in streams)
    top = min(s.position[1] for s in streams)
    right = max(s.position[0] + s.size[0] for s in streams)
    bottom = max(s.position[1] + s.size[1] for s in streams)
    return left, top, right - left, bottom - top


def stream_scale(stream: Stream, frame: Image.Image) -> float:
    """Device pixels per logical pixel of ``stream``, read from a frame of it."""
    return frame.width / stream.size[0] if stream.size[0] else 1.0


def to_logical(stream: Stream, frame: Image.Image) -> Image.Image:
    """``frame`` (device pixels) at ``stream``'s logical size."""
    if frame.size == stream.size:
        return frame
    return frame.resize(stream.size, Image.Resampling.LANCZOS)


class PortalScreen(Screen):
    """One stream of a portal session, or all of them together (``monitor`` 0)."""

    def __init__(
        self,
        streams: list[Stream],
        sources: dict[int, FrameSource],
        monitor: int = 1,
        max_side: int = 1280,
        image_format: ImageFormat = "jpeg",
        jpeg_quality: int = 80,
        model_size: Size | None = None,
        sizer: Callable[[Size], tuple[Size, Size]] | None = None,
    ) -> None:
        self.streams = streams
        self.sources = sources
        self.stream: Stream | None = None
        self._grab_lock = threading.Lock()
        super().__init__(monitor, max_side, image_format, jpeg_quality, model_size, sizer)

    @classmethod
    def for_settings(
        cls,
        settings: Settings,
        streams: list[Stream],
        sources: dict[int, FrameSource],
        sizer: Callable[[Size], tuple[Size, Size]] | None = None,
    ) -> PortalScreen:
        return cls(
            streams,
            sources,
            monitor=settings.monitor,
            max_side=settings.max_side,
            image_format=settings.image_format,
            jpeg_quality=settings.jpeg_quality,
            sizer=sizer,
        )

    def _open(self) -> None:
        if not 0 <= self.monitor <= len(self.streams):
            raise ValueError(f"monitor {self.monitor} does not exist (0..{len(self.streams)})")
        if self.monitor == 0 and len(self.streams) > 1:
            self.stream = None
            box = layout_of(self.streams)
        else:
            self.stream = self.streams[max(self.monitor, 1) - 1]
            box = self.stream.box
        self.monitors = [Monitor(0, *layout_of(self.streams))] + [
            Monitor(i + 1, *s.box, name=s.name) for i, s in enumerate(self.streams)
        ]
        self._take_box(box)

    def reopen(self, display: object) -> None:
        """Take the boxes again; a portal screen never moves to another display."""
        self._open()

    def _frame(self, stream: Stream) -> Image.Image:
        return self.sources[stream.node].frame()

    @property
    def scale(self) -> float:
        """Device pixels per logical pixel of what a capture returns."""
        streams = [self.stream] if self.stream is not None else self.streams
        return max(stream_scale(s, self._frame(s)) for s in streams)

    def _grab_image(self) -> Image.Image:
        """This stream (or the layout) now, in device pixels."""
        with self._grab_lock:
            if self.stream is not None:
                return self._frame(self.stream)
            return self._compose()

    def _grab_frame(self) -> Image.Image:
        return self._grab_image()  # a picture (the capture scales it)

    def _compose(self) -> Image.Image:
        frames = [(s, self._frame(s)) for s in self.streams]
        scale = max(stream_scale(s, f) for s, f in frames)
        left, top, width, height = layout_of(self.streams)
        canvas = Image.new("RGB", (round(width * scale), round(height * scale)))
        for stream, frame in frames:
            size = (round(stream.size[0] * scale), round(stream.size[1] * scale))
            if frame.size != size:
                frame = frame.resize(size, Image.Resampling.LANCZOS)
            x, y = stream.position
            canvas.paste(frame, (round((x - left) * scale), round((y - top) * scale)))
        return canvas

    def logical_image(self) -> Image.Image:
        """This stream (or the layout) now, at its logical size."""
        image = self._grab_image()
        size = (self._size.width, self._size.height)
        return image if image.size == size else image.resize(size, Image.Resampling.LANCZOS)

    def grab_raw(self) -> tuple[Size, bytes]:
        """Device pixels as BGRA bytes, with their size (as the X11 screen gives them)."""
        image = self._grab_image()
        return Size(image.width, image.height), image.convert("RGBA").tobytes("raw", "BGRA")

    def frame_digest(self) -> bytes:
        """CRC-32 of every device pixel of every stream shown: settle's fingerprint."""
        crc = 0
        with self._grab_lock:
            for stream in [self.stream] if self.stream is not None else self.streams:
                crc = zlib.crc32(self._frame(stream).tobytes(), crc)
        return crc.to_bytes(4, "big")

    def close(self) -> None:
        self._stop_workers()
