"""Which window is where: the top-level window under a point, and the one keys go to.

Run records keep the title and class of the window a pointer action hit and of the
window that had the keyboard, so a replay can refuse to act on another window. This
talks to the X server with python-xlib (one connection, reused); without X11 every
answer is :data:`UNKNOWN`.

Bare Xvfb has no window manager: no ``_NET_ACTIVE_WINDOW``, and the input focus is
often ``PointerRoot`` (keys go to the window under the pointer). :meth:`Windows.focused`
follows X's own rule: the focus window when one is set, else the window under the
pointer.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from pydantic import BaseModel

from jarvis.desktop.x11 import XDisplay, is_x11
from jarvis.desktop.x11_focus import client_window

log = logging.getLogger(__name__)


class WindowInfo(BaseModel):
    """A top-level window: its X id, title, class (``res_class``) and geometry."""

    id: int = 0
    title: str = ""
    wm_class: str = ""
    box: tuple[int, int, int, int] | None = None
    """x, y, width, height on the root window."""

    @property
    def known(self) -> bool:
        return self.id != 0

    def same_as(self, other: WindowInfo) -> bool:
        """The same application window as far as a user can tell: title and class."""
        return self.title == other.title and self.wm_class == other.wm_class

    def label(self) -> str:
        if not self.known:
            return "no window"
        return f"{self.title or '(untitled)'!r} ({self.wm_class or 'no class'})"


UNKNOWN = WindowInfo()


class Windows:
    """Window lookups on one X display (lazy; thread-safe): ``where``; :meth:`move_to`
    another (a task's private display, and back)."""

    def __init__(self, where: XDisplay) -> None:
        self._display: Any = None
        self._where = where
        self._failed = False
        self._lock = threading.Lock()

    @property
    def where(self) -> XDisplay:
        return self._where

    def move_to(self, where: XDisplay) -> None:
        """Look up windows on ``where`` from now on."""
        with self._lock:
            if where != self._where:
                self._drop()
                self._where = where

    def _open(self) -> Any:
        if self._display is None and not self._failed:
            if not is_x11(self._where):
                self._failed = True
                return None
            try:
                self._display = self._where.open()
            except Exception as exc:  # no server, no auth: the records say "unknown"
                log.warning("window lookups are off: cannot open the X display: %s", exc)
                self._failed = True
        return self._display

    def at(self, x: int, y: int) -> WindowInfo:
        """The topmost mapped top-level window containing the root point (x, y)."""
        with self._lock:
            d = self._open()
            if d is None:
                return UNKNOWN
            try:
                return self._at(d, x, y)
            except Exception as exc:  # a window closed under us: an unknown, not a crash
                log.debug("window lookup at (%d, %d) failed: %s", x, y, exc)
                return UNKNOWN

    def focused(self) -> WindowInfo:
        """The top-level window that receives keys now."""
        with self._lock:
            d = self._open()
            if d is None:
                return UNKNOWN
            try:
                focus = d.get_input_focus().focus
                root = d.screen().root
                if isinstance(focus, int) or focus is None or focus.id == root.id:
                    pointer = root.query_pointer()
                    return self._at(d, pointer.root_x, pointer.root_y)
                return self._describe(d, self._top_level(d, focus))
            except Exception as exc:
                log.debug("focus lookup failed: %s", exc)
                return UNKNOWN

    def activate(self, window_id: int) -> None:
        """Ask that the top-level window ``window_id`` get the keyboard: through the window
        manager (``_NET_ACTIVE_WINDOW``) when one supports it, else (bare X) by raising it
        and setting the input focus on it. Whether it took is for the caller to check
        (:meth:`focused`); a window gone meanwhile is no error here."""
        with self._lock:
            d = self._open()
            if d is None:
                return
            try:
                self._activate(d, window_id)
            except Exception as exc:
                log.debug("activating window 0x%x failed: %s", window_id, exc)

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        if self._display is not None:
            try:
                self._display.close()
            except Exception as exc:  # its server may be gone (a private display stopped)
                log.debug("closing the window-lookup display: %s", exc)
            self._display = None
        self._failed = False

    # -- internals --
    @staticmethod
    def _activate(d: Any, window_id: int) -> None:
        from Xlib import X, Xatom
        from Xlib.protocol import event

        root = d.screen().root
        top = d.create_resource_object("window", window_id)
        client = client_window(top)
        active = d.intern_atom("_NET_ACTIVE_WINDOW")
        supported = root.get_full_property(d.intern_atom("_NET_SUPPORTED"), Xatom.ATOM)
        if supported is not None and active in supported.value:
            message = event.ClientMessage(
                window=client, client_type=active, data=(32, [2, X.CurrentTime, 0, 0, 0])
            )  # source 2: a pager, which window managers obey
            mask = X.SubstructureRedirectMask | X.SubstructureNotifyMask
            root.send_event(message, event_mask=mask)
        else:
            top.configure(stack_mode=X.Above)
            client.set_input_focus(X.RevertToParent, X.CurrentTime)
        d.sync()

    def _at(self, d: Any, x: int, y: int) -> WindowInfo:
        root = d.screen().root
        # the server's own hit test: the topmost mapped child of the root there, one round
        # trip (the scan below asks two of each window from the top of the stack down)
        hit = root.translate_coords(root, x, y).child
        if hit is None or isinstance(hit, int) or hit.id == root.id:
            return UNKNOWN  # no mapped window there
        if hit.get_attributes().win_class == 1:  # InputOutput (an InputOnly one: look below)
            return self._describe(d, hit)
        for child in reversed(root.query_tree().children):  # top of the stack first
            attrs = child.get_attributes()
            if attrs.map_state != 2 or attrs.win_class != 1:  # viewable, InputOutput
                continue
            g = child.get_geometry()
            if g.x <= x < g.x + g.width and g.y <= y < g.y + g.height:
                return self._describe(d, child)
        return UNKNOWN

    @staticmethod
    def _top_level(d: Any, window: Any) -> Any:
        root_id = d.screen().root.id
        while True:
            parent = window.query_tree().parent
            if parent is None or parent == 0 or parent.id == root_id:
                return window
            window = parent

    def _describe(self, d: Any, window: Any) -> WindowInfo:
        title, klass = _names(d, window)
        if not title and not klass:  # a frame: the client's names are on a child
            for child in window.query_tree().children:
                title, klass = _names(d, child)
                if title or klass:
                    break
        g = window.get_geometry()
        pos = window.translate_coords(d.screen().root, 0, 0)
        return WindowInfo(
            id=int(window.id),
            title=title,
            wm_class=klass,
            box=(-int(pos.x), -int(pos.y), int(g.width), int(g.height)),
        )


def _names(d: Any, window: Any) -> tuple[str, str]:
    net_name = d.get_atom("_NET_WM_NAME")  # cached by the connection: no round trip
    utf8 = d.get_atom("UTF8_STRING")
    title = ""
    prop = window.get_full_property(net_name, utf8)
    if prop is not None and prop.value:
        raw = prop.value
        title = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    if not title:
        name = window.get_wm_name()
        title = name.decode("latin-1") if isinstance(name, bytes) else (name or "")
    klass = window.get_wm_class()
    return title, (klass[1] if klass else "")
