"""A person's input on an X display, as it happens: the RECORD extension's device events
(keys, buttons, pointer motion) read on a connection of our own, in a thread.

XRecord sees every device event the server processes, whichever client receives it (and
XTEST's too, which is how the tests play a person). It needs two connections: one to
enable the context (that call blocks while events flow) and one to disable it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from jarvis.desktop.x11 import XDisplay, close_display, open_display

log = logging.getLogger(__name__)

Kind = Literal["key_down", "key_up", "button_down", "button_up", "motion"]


@dataclass(frozen=True)
class RawEvent:
    """One device event: a keycode or button in ``detail``, the pointer on the root."""

    kind: Kind
    detail: int
    x: int
    y: int
    state: int
    time_ms: int


class RecordUnavailable(RuntimeError):
    """The display has no RECORD extension (or it cannot be opened)."""


class XRecordSource:
    """Device events of one display, handed to ``sink`` from a thread until :meth:`stop`."""

    def __init__(self, where: XDisplay, sink: Callable[[RawEvent], None]) -> None:
        self.where = where
        self.sink = sink
        self._ctrl: Any = None
        self._data: Any = None
        self._context: Any = None
        self._thread: threading.Thread | None = None
        self.ready = threading.Event()

    def start(self) -> None:
        from Xlib import X
        from Xlib.ext import record

        self._ctrl = open_display(self.where.name, self.where.xauthority)
        self._data = open_display(self.where.name, self.where.xauthority)
        if not self._ctrl.has_extension("RECORD"):
            self.close()
            raise RecordUnavailable(f"display {self.where.name} has no RECORD extension")
        spec = {
            "core_requests": (0, 0),
            "core_replies": (0, 0),
            "ext_requests": (0, 0, 0, 0),
            "ext_replies": (0, 0, 0, 0),
            "delivered_events": (0, 0),
            "device_events": (X.KeyPress, X.MotionNotify),
            "errors": (0, 0),
            "client_started": False,
            "client_died": False,
        }
        self._context = self._ctrl.record_create_context(0, [record.AllClients], [spec])
        self._ctrl.sync()
        self._thread = threading.Thread(target=self._run, name="xrecord", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.ready.set()
            self._data.record_enable_context(self._context, self._on_reply)
        except Exception as exc:  # the display went away: the recording ends
            log.warning("XRecord stopped: %s", exc)

    def _on_reply(self, reply: Any) -> None:
        from Xlib import X
        from Xlib.ext import record
        from Xlib.protocol import rq

        if reply.category != record.FromServer or reply.client_swapped:
            return
        kinds: dict[int, Kind] = {
            X.KeyPress: "key_down",
            X.KeyRelease: "key_up",
            X.ButtonPress: "button_down",
            X.ButtonRelease: "button_up",
            X.MotionNotify: "motion",
        }
        data = reply.data
        while data:
            event, data = rq.EventField(None).parse_binary_value(
                data, self._data.display, None, None
            )
            kind = kinds.get(event.type & 0x7F)
            if kind is None:
                continue
            self.sink(
                RawEvent(kind, event.detail, event.root_x, event.root_y, event.state, event.time)
            )

    def stop(self) -> None:
        """End the recording; the thread is joined."""
        if self._context is not None and self._ctrl is not None:
            try:
                self._ctrl.record_disable_context(self._context)
                self._ctrl.sync()
            except Exception as exc:
                log.debug("disabling the record context: %s", exc)
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._context is not None and self._ctrl is not None:
            try:
                self._ctrl.record_free_context(self._context)
            except Exception as exc:
                log.debug("freeing the record context: %s", exc)
        self.close()

    def close(self) -> None:
        for display in (self._ctrl, self._data):
            if display is not None:
                close_display(display)
        self._ctrl = self._data = None
