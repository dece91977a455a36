"""Proof that a client which cannot be pinged has handled its key events: its answer to a
keyboard mapping change, seen through the X RECORD extension.

xterm (and other Xt clients) do not take part in ``_NET_WM_PING``. What they do, while
dispatching a ``MappingNotify`` event (the server sends one to every client when a
keycode is remapped), is fetch the new map at once: a ``GetKeyboardMapping`` request
(measured: one notification, then five fetches from xterm, under us and de). X delivers
a client's events in order and the client dispatches them in order, so a fetch that
follows the notification of a change proves that the client has dispatched every event
queued before that notification, our earlier key presses included, and that it holds
the map made by the change.

A plain Xlib client (Tk) sends no ``GetKeyboardMapping``: on the notification it fetches
the changed keys with XKB's ``GetMap`` (measured: three per notification from a Tk
Entry), which counts as its fetch, but only for a client that has sent
no ``GetKeyboardMapping`` in the watch. xterm sends ``GetMap`` too, and Xlib's XKB code
may send it on a key lookup once it has *read* a notification, before dispatching it;
with xterm's counted, one soak run of 20 typed CJK with a later piece's keymap (the
cause not proven), so for xterm only its own fetches count, as before.

:class:`MapAnswers` records, for one client (named by a window it owns) and for our
own control connection: the ``MappingNotify`` events delivered to the client, its
``GetKeyboardMapping`` and XKB ``GetMap`` requests, and our ``InternAtom`` requests for
a name of our own (which creates nothing), which serve as barriers: the RECORD data
comes in the server's processing order on a connection of its own, so once our
barrier's name is seen in it, everything the server did before has been counted (the
context is enabled, its StartOfData seen, before the first barrier).
:meth:`MapAnswers.changed` runs a change and returns its number; :meth:`MapAnswers.wait`
waits until the client fetched the map after that change. A client that fetches the map
only when it next translates a key (Xlib without XKB) does not answer until then:
:meth:`wait` returns False after its timeout, and the caller says so.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from jarvis.desktop.x11 import XDisplay, close_display

log = logging.getLogger(__name__)

_INTERN_ATOM = 16
_GET_KEYBOARD_MAPPING = 101
_XKB_GET_MAP = 8  # XkbGetMap, the XKEYBOARD extension's minor opcode
_MAPPING_NOTIFY = 34
_FROM_SERVER, _FROM_CLIENT, _START = 0, 1, 4
_START_S = 3.0


class MapAnswers:
    """Counts a client's answers to keyboard mapping changes (see the module doc).
    Use as a context manager; ``ok`` is False where the server has no RECORD."""

    def __init__(self, where: XDisplay, window: int) -> None:
        self.where = where
        self.window = window
        self.ok = False
        self._cond = threading.Condition()
        self._notified = 0  # MappingNotify events delivered to the client
        self._core = False  # the client sent a GetKeyboardMapping: only those count
        self._answered = 0  # the last notification the client fetched the map after
        self._barrier = b""  # the name of our last InternAtom seen in the data
        self._sent_barriers = 0
        self._enabled = threading.Event()
        self._ctl: Any = None
        self._data: Any = None
        self._context = 0
        self._thread: threading.Thread | None = None

    def __enter__(self) -> MapAnswers:
        try:
            self._start()
        except Exception as exc:  # no RECORD, or the window went away: no proof available
            log.debug("no RECORD watch of the focused client: %r", exc)
            self.close()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> None:
        self._ctl, self._data = self.where.open(), self.where.open()
        if not self._ctl.has_extension("RECORD"):
            raise RuntimeError("the X server has no RECORD extension")
        base = self._ctl.display.info.resource_id_base
        self._ours = base & ~self._ctl.display.info.resource_id_mask
        xkb = self._ctl.query_extension("XKEYBOARD")
        self._xkb = int(xkb.major_opcode) if xkb is not None and xkb.present else 0
        empty = {
            "core_requests": (0, 0),
            "core_replies": (0, 0),
            "ext_requests": (0, 0, 0, 0),
            "ext_replies": (0, 0, 0, 0),
            "delivered_events": (0, 0),
            "device_events": (0, 0),
            "errors": (0, 0),
            "client_started": False,
            "client_died": False,
        }
        ranges = [
            empty | {"core_requests": (_INTERN_ATOM, _INTERN_ATOM)},
            empty
            | {
                "core_requests": (_GET_KEYBOARD_MAPPING, _GET_KEYBOARD_MAPPING),
                "delivered_events": (_MAPPING_NOTIFY, _MAPPING_NOTIFY),
            },
        ]
        if self._xkb:
            ranges.append(
                empty | {"ext_requests": (self._xkb, self._xkb, _XKB_GET_MAP, _XKB_GET_MAP)}
            )
        self._context = self._ctl.record_create_context(0, [self.window, base], ranges)
        self._ctl.sync()
        self._thread = threading.Thread(target=self._run, name="map-answers", daemon=True)
        self._thread.start()
        if not self._enabled.wait(_START_S):  # before it, nothing is recorded
            raise RuntimeError("RECORD did not start")
        self.ok = True
        self.barrier()

    def _run(self) -> None:
        try:
            self._data.record_enable_context(self._context, self._seen)
        except Exception as exc:  # the display went away: waits time out
            log.debug("RECORD watch ended: %r", exc)
        with self._cond:
            self.ok = False
            self._cond.notify_all()

    def _seen(self, reply: Any) -> None:
        if reply.category == _START:
            self._enabled.set()
        if reply.category not in (_FROM_SERVER, _FROM_CLIENT) or not reply.data:
            return
        ours = reply.id_base == self._ours
        data = bytes(reply.data)
        request = reply.category == _FROM_CLIENT
        code = data[0] if request else data[0] & 0x7F  # an event's top bit: sent by a client
        core = code == _GET_KEYBOARD_MAPPING
        if request and not ours and core:
            self._core = True
        fetch = core or (
            not self._core
            and bool(self._xkb)
            and code == self._xkb
            and len(data) > 1
            and data[1] == _XKB_GET_MAP
        )
        with self._cond:
            if request and ours and code == _INTERN_ATOM:
                length = int.from_bytes(data[4:6], "little" if not reply.client_swapped else "big")
                self._barrier = data[8 : 8 + length]
            elif not request and not ours and code == _MAPPING_NOTIFY:
                self._notified += 1
            elif request and not ours and fetch:
                self._answered = self._notified
            else:
                return
            self._cond.notify_all()

    def barrier(self, timeout: float = 3.0) -> int:
        """Wait until the watch has counted everything the server did so far; the number
        of notifications delivered to the client by then."""
        self._sent_barriers += 1
        name = f"_JARVIS_BARRIER_{id(self):x}_{self._sent_barriers}"
        self._ctl.intern_atom(name, only_if_exists=True)  # a round trip: it was recorded
        token = name.encode()
        with self._cond:
            self._cond.wait_for(lambda: self._barrier == token or not self.ok, timeout)
            return self._notified

    def changed(self, change: Callable[[], object]) -> int:
        """Run ``change`` (a keyboard mapping change, done when it returns) and return the
        number of the notification it sent the client."""
        change()
        return self.barrier()

    def wait(self, notification: int, timeout: float) -> bool:
        """True once the client fetched the map after ``notification``; False if it did
        not within ``timeout`` seconds (or the watch is off)."""
        with self._cond:
            return (
                self._cond.wait_for(lambda: self.ok and self._answered >= notification, timeout)
                and self._answered >= notification
            )

    def close(self) -> None:
        if self._ctl is not None and self._context:
            try:
                self._ctl.record_disable_context(self._context)
                self._ctl.record_free_context(self._context)
                self._ctl.sync()
            except Exception as exc:  # the display is gone
                log.debug("RECORD context not freed: %r", exc)
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None
        for conn in (self._ctl, self._data):
            if conn is not None:
                try:
                    close_display(conn)
                except Exception as exc:  # already closed by the server
                    log.debug("RECORD connection close: %r", exc)
        self._ctl = self._data = None
        self._context = 0
        self.ok = False
