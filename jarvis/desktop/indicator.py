"""The on-screen sign that Jarvis is acting on a display a person may be looking at.

:class:`Indicator` draws a thin coloured border around each monitor and a small badge,
"Jarvis is working · move the mouse to a corner to stop", at the top of the first one:
override-redirect windows (no window manager frames, moves or focuses them), raised
above the others each time they are shown, with an empty input shape, so every click
and key goes to the window below as if the sign were not there. The badge's text is
drawn once into a pixmap that is the window's background: the server repaints it by
itself, and nothing has to run an event loop for it.

The sign stays out of what the model sees: :meth:`Indicator.hidden` unmaps its windows
around a capture (:class:`jarvis.desktop.screen.Screen` takes every picture inside it)
and maps them again after. Unmapping exposes the pixels below, which their windows
repaint; the capture waits for that (see :meth:`Indicator.hidden`).

:meth:`Indicator.acting` shows the sign for a task's run and takes it away when the run
ends, and at once when the desktop's stop event is set (the kill switch, a cancel).
:func:`indicator_wanted` reads the ``desktop.indicator`` setting: ``on``, ``off``, or
``auto``: on for a person's display, off for one nobody looks at: a private display
Jarvis started (``--sandbox``'s, a channel's) or a bare Xvfb (its only output is
``screen``; set ``on`` when you watch one over VNC).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from Xlib.protocol import rq, structs

from jarvis.desktop.monitors import Monitor
from jarvis.desktop.x11 import XDisplay, close_display
from jarvis.desktop.x11_focus import client_window, ping

log = logging.getLogger(__name__)

TEXT = "Jarvis is working \xb7 move the mouse to a corner to stop"
COLOR = 0xE8_5D_04  # orange: seen on light and dark desktops
THICKNESS = 4
_BADGE_PAD = 6
_SHAPE_INPUT = 2  # ShapeInput: the region that takes pointer events
_PING_S = 1.0
_REPAINT_S = 0.3
_FRAME_S = 1 / 60
_STOP_POLL_S = 0.05


class _ShapeRectangles(rq.Request):
    """SHAPE's Rectangles request with any region kind (python-xlib's allows only the
    bounding and clip regions, not the input region of SHAPE 1.1)."""

    _request = rq.Struct(
        rq.Card8("opcode"),
        rq.Opcode(1),
        rq.RequestLength(),
        rq.Card8("operation"),
        rq.Card8("region"),
        rq.Card8("ordering"),
        rq.Pad(1),
        rq.Window("window"),
        rq.Int16("x"),
        rq.Int16("y"),
        rq.List("rectangles", structs.Rectangle),
    )


def border_boxes(monitor: Monitor, thickness: int = THICKNESS) -> list[tuple[int, int, int, int]]:
    """The four strips (x, y, width, height) along the inside edges of ``monitor``."""
    x, y, w, h, t = monitor.left, monitor.top, monitor.width, monitor.height, thickness
    return [
        (x, y, w, t),
        (x, y + h - t, w, t),
        (x, y + t, t, h - 2 * t),
        (x + w - t, y + t, t, h - 2 * t),
    ]


def indicator_wanted(mode: str, where: XDisplay, monitors: list[Monitor]) -> bool:
    """Whether the sign is shown on ``where`` (``monitors``: every one, index 0 first) with
    ``desktop.indicator`` set to ``mode`` (auto, on, off)."""
    if mode != "auto":
        return mode == "on"
    if where.private:
        return False
    return not all(m.name == "screen" for m in monitors[1:])


def _overlap(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


class Indicator:
    """The border and badge on display ``where`` over ``monitors`` (each one, not the
    union). Not shown until :meth:`show`; :meth:`close` takes it away for good."""

    def __init__(self, where: XDisplay, monitors: list[Monitor]) -> None:
        self.where = where
        self.monitors = monitors
        self._lock = threading.RLock()
        self._display: Any = None
        self._windows: list[Any] = []
        self.boxes: list[tuple[int, int, int, int]] = []
        """Where the sign's windows are (x, y, width, height)."""
        self.shown = False

    def _create(self) -> None:
        from Xlib import X

        display = self._display = self.where.open()
        screen = display.screen()
        boxes = [b for m in self.monitors for b in border_boxes(m)]
        first = self.monitors[0]
        font = display.open_font("fixed")
        extents = font.query_text_extents(TEXT.encode("latin-1"))
        width = extents.overall_width + 2 * _BADGE_PAD
        height = extents.font_ascent + extents.font_descent + 2 * _BADGE_PAD
        badge = (first.left + (first.width - width) // 2, first.top + THICKNESS, width, height)
        for box in [*boxes, badge]:
            window = screen.root.create_window(
                *box,
                0,
                screen.root_depth,
                X.InputOutput,
                X.CopyFromParent,
                background_pixel=COLOR,
                override_redirect=True,
            )
            self._no_input(window)
            window.set_wm_name("jarvis-indicator")
            self._windows.append(window)
        self._paint_badge(self._windows[-1], font, extents, width, height)
        self.boxes = [*boxes, badge]

    def _no_input(self, window: Any) -> None:
        _ShapeRectangles(
            display=self._display.display,
            opcode=self._display.display.get_extension_major("SHAPE"),
            operation=0,  # ShapeSet
            region=_SHAPE_INPUT,
            ordering=0,
            window=window.id,
            x=0,
            y=0,
            rectangles=[],
        )

    def _paint_badge(self, window: Any, font: Any, extents: Any, width: int, height: int) -> None:
        screen = self._display.screen()
        pixmap = window.create_pixmap(width, height, screen.root_depth)
        gc = pixmap.create_gc(foreground=COLOR, background=COLOR, font=font)
        pixmap.fill_rectangle(gc, 0, 0, width, height)
        gc.change(foreground=screen.white_pixel)
        pixmap.image_text(gc, _BADGE_PAD, _BADGE_PAD + extents.font_ascent, TEXT.encode("latin-1"))
        window.change_attributes(background_pixmap=pixmap)
        gc.free()
        pixmap.free()
        font.close()

    def show(self) -> None:
        """Map the sign above every other window (made on first use)."""
        with self._lock:
            if self._display is None:
                self._create()
            for window in self._windows:
                window.map()
                window.raise_window()
            self._display.sync()
            self.shown = True

    def hide(self) -> None:
        """Unmap the sign (shown again by :meth:`show`)."""
        with self._lock:
            if self._display is None or not self.shown:
                return
            for window in self._windows:
                window.unmap()
            self._display.sync()
            self.shown = False

    @contextmanager
    def hidden(self) -> Iterator[None]:
        """The sign off the screen for the block (a capture), then back on top."""
        with self._lock:
            was = self.shown
            if was:
                started = time.perf_counter()
                self.hide()
                self._repainted()
                log.debug("indicator hidden in %.1f ms", (time.perf_counter() - started) * 1000)
            try:
                yield
            finally:
                if was:
                    self.show()

    def _repainted(self) -> None:
        """Wait until the windows under the sign have repainted what it covered.

        The server fills an exposed area with the window's background at once and the
        application paints it when it handles the Expose event: each window below that
        answers ``_NET_WM_PING`` answers after it has handled the event, and then the
        covered pixels must read the same twice, a frame (1/60 s) apart (GTK paints on its
        next frame), within ``_REPAINT_S``. Measured on Xvfb with xterm and mousepad
        below: the picture then matched one taken with no sign at all, pixel for pixel."""
        from Xlib import X

        root = self._display.screen().root
        for toplevel in self._below(root):
            ping(toplevel, _PING_S, where=self.where)
        deadline = time.monotonic() + _REPAINT_S
        last = None
        while time.monotonic() < deadline:
            now = [
                root.get_image(x, y, w, h, X.ZPixmap, 0xFFFFFFFF).data for x, y, w, h in self.boxes
            ]
            if now == last:
                return
            last = now
            time.sleep(_FRAME_S)
        log.debug("indicator: the covered pixels still changed after %.1f s", _REPAINT_S)

    def _below(self, root: Any) -> list[int]:
        """The top-level windows under the sign that answer ``_NET_WM_PING``."""
        from Xlib import X

        out: list[int] = []
        ours = {w.id for w in self._windows}
        ping_atom = self._display.intern_atom("_NET_WM_PING")
        for child in root.query_tree().children:
            try:
                if child.id in ours or child.get_attributes().map_state != X.IsViewable:
                    continue
                geom = child.get_geometry()
                if not any(
                    _overlap(box, (geom.x, geom.y, geom.width, geom.height)) for box in self.boxes
                ):
                    continue
                client = client_window(child)
                if ping_atom in (client.get_wm_protocols() or []):
                    out.append(client.id)
            except Exception:  # destroyed meanwhile (BadWindow): nothing to wait for
                continue
        return out

    @contextmanager
    def acting(self, stop: threading.Event) -> Iterator[None]:
        """The sign on the screen for the block (a task's run), taken away when it ends;
        while ``stop`` is set (the kill switch fired, the task was cancelled) it is off
        at once, without waiting for the run to wind down."""
        done = threading.Event()

        def follow() -> None:
            while not done.wait(_STOP_POLL_S):
                try:
                    if stop.is_set() and self.shown:
                        self.hide()
                    elif not stop.is_set() and not self.shown:
                        self.show()
                except Exception as exc:  # the display went away: nothing left to show
                    log.debug("indicator: %r", exc)
                    return

        if not stop.is_set():
            self.show()
        watcher = threading.Thread(target=follow, name="indicator", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            done.set()
            watcher.join(timeout=2)
            self.hide()

    def close(self) -> None:
        with self._lock:
            if self._display is None:
                return
            try:
                for window in self._windows:
                    window.destroy()
                close_display(self._display)
            except Exception as exc:  # the display went away first
                log.debug("indicator: display gone at close: %r", exc)
            self._display = None
            self._windows = []
            self.shown = False

    def __enter__(self) -> Indicator:
        self.show()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
