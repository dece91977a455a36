"""A ScreenCast stream's pictures, kept warm: one GStreamer pipeline, the newest frame kept.

:class:`FrameSource` runs ``gst-launch-1.0`` once per stream, reading the PipeWire node
through ``pipewiresrc`` on the fd the portal's ``OpenPipeWireRemote`` gave (passed to
the child as it is), converting to RGBx and writing raw frames to a pipe of ours. With
``-v`` the pipeline prints the caps it settled on (width and height: device pixels) on
its stdout; a reader thread keeps only the newest frame. ``gst-launch-1.0`` rather than
PyGObject: the venv cannot import Debian's ``gi``, and PyGObject from PyPI needs a C
build; a child process also keeps PipeWire's threads out of ours.

:meth:`FrameSource.frame` returns the newest frame (waiting for the first one), and
fails in one line when the pipeline has ended (the session closed, PipeWire gone):
never an old picture passed off as the screen now.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time

from PIL import Image

from jarvis.desktop.portal.bus import PortalError

FIRST_FRAME_TIMEOUT_S = 10.0
_CAPS = re.compile(rb"GstFdSink:jarvis_frames\.GstPad:sink: caps = video/x-raw,(.*)")
_WIDTH = re.compile(rb"\bwidth=\(int\)(\d+)")
_HEIGHT = re.compile(rb"\bheight=\(int\)(\d+)")
_MISSING = (
    "gst-launch-1.0 with pipewiresrc is not installed "
    "(apt install gstreamer1.0-tools gstreamer1.0-pipewire gstreamer1.0-plugins-base)"
)


def pipewire_source(fd: int, node: int) -> list[str]:
    """The pipeline's source for the portal's PipeWire ``node`` reached through ``fd``;
    ``keepalive-time`` has the last frame sent again while the screen is still."""
    return ["pipewiresrc", f"fd={fd}", f"path={node}", "always-copy=true", "keepalive-time=500"]


class FrameSource:
    """The newest frame of one stream; :meth:`close` stops the pipeline."""

    def __init__(self, source: list[str], pass_fds: tuple[int, ...] = (), name: str = "") -> None:
        """``source``: gst-launch elements that produce video (``pipewire_source``, or a
        test source); ``pass_fds``: descriptors the child needs (the PipeWire fd)."""
        self.name = name
        read, write = os.pipe()
        argv = [
            *("gst-launch-1.0", "-v", *source, "!", "videoconvert", "!"),
            *("video/x-raw,format=RGBx", "!", "fdsink", "name=jarvis_frames", f"fd={write}"),
        ]
        try:
            self._proc = subprocess.Popen(
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(write, *pass_fds),
            )
        except FileNotFoundError as exc:
            os.close(read)
            os.close(write)
            raise PortalError(_MISSING) from exc
        finally:
            for fd in pass_fds:
                os.close(fd)  # the child holds them now
        os.close(write)
        self._pipe = read
        self._size: tuple[int, int] | None = None
        self._frame: Image.Image | None = None
        self._frames = 0
        self._error = ""
        self._ready = threading.Condition()
        threading.Thread(target=self._read_caps, name="frames-caps", daemon=True).start()
        threading.Thread(target=self._read_frames, name="frames", daemon=True).start()

    def _read_caps(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            found = _CAPS.search(line)
            width = _WIDTH.search(found[1]) if found else None
            height = _HEIGHT.search(found[1]) if found else None
            if width and height:  # the fields come in no fixed order
                with self._ready:
                    self._size = (int(width[1]), int(height[1]))
                    self._ready.notify_all()

    def _read_frames(self) -> None:
        with os.fdopen(self._pipe, "rb", buffering=0) as pipe:
            while True:
                with self._ready:
                    if not self._ready.wait_for(lambda: self._size is not None, timeout=0.5):
                        if self._proc.poll() is not None:
                            break
                        continue
                    assert self._size is not None
                    width, height = self._size
                data = _read_exactly(pipe, width * height * 4)
                if data is None:
                    break
                image = Image.frombuffer("RGBX", (width, height), data, "raw", "RGBX", 0, 1)
                with self._ready:
                    self._frame = image.convert("RGB")
                    self._frames += 1
                    self._ready.notify_all()
        self._proc.wait()
        detail = self._proc.stderr.read().decode(errors="replace") if self._proc.stderr else ""
        with self._ready:
            self._error = _last_line(detail) or f"exit status {self._proc.returncode}"
            self._ready.notify_all()

    @property
    def frames(self) -> int:
        """How many frames arrived so far."""
        return self._frames

    def frame(self, timeout: float | None = None) -> Image.Image:
        """The newest frame in device pixels; waits up to ``timeout`` (default
        ``FIRST_FRAME_TIMEOUT_S``) for the first. A ``pipewiresrc`` whose node never
        comes does not fail: it waits, so this wait is what ends it."""
        timeout = FIRST_FRAME_TIMEOUT_S if timeout is None else timeout
        deadline = time.monotonic() + timeout
        with self._ready:
            while not self._error and self._frame is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PortalError(
                        f"no picture came from screen-cast stream {self.name} in {timeout:g} s"
                    )
                self._ready.wait(left)
            if self._error:
                raise PortalError(f"the screen-cast stream {self.name} ended: {self._error}")
            assert self._frame is not None
            return self._frame

    def wait_frames(self, count: int, timeout: float = FIRST_FRAME_TIMEOUT_S) -> bool:
        """Wait until ``count`` frames arrived in all; whether they did in time."""
        with self._ready:
            return self._ready.wait_for(lambda: self._frames >= count or bool(self._error), timeout)

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


def _read_exactly(pipe: object, count: int) -> bytes | None:
    chunks, left = [], count
    while left:
        chunk = pipe.read(min(left, 1 << 20))  # type: ignore[attr-defined]
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
