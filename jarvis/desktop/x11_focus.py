"""Who has the keyboard focus on X11, and proof that it has handled our input.

- :func:`focused_client` names the window that receives key events: the focus
  window (or, with PointerRoot focus, the window under the pointer), its top-level
  window, that window's ``WM_CLASS`` and whether it answers ``_NET_WM_PING``. It
  raises :class:`NoFocusError` when key events would go nowhere.
- :func:`ping` sends ``_NET_WM_PING`` to a top-level window and waits for the answer.
  X delivers events to a client in order and GTK, Qt and Chromium answer the ping
  while processing events, after they have translated every key event queued before
  it: an answer proves the keys sent before the ping were read with the keymap in
  force when they were sent (see :mod:`jarvis.desktop.keytyper`).
"""

from __future__ import annotations

import logging
import select
import time
from dataclasses import dataclass
from typing import Any, Literal

from jarvis.desktop.x11 import X11Error, XDisplay, close_display

log = logging.getLogger(__name__)


class NoFocusError(X11Error):
    """No window has the keyboard focus: typed keys would be lost."""


@dataclass(frozen=True)
class FocusedClient:
    """The window that receives key events and what we know about its application."""

    window: int  # the focus window itself
    toplevel: int  # its top-level window (a child of the root)
    wm_class: tuple[str, str]  # (instance, class), ("", "") when unset
    pings: bool  # its WM_PROTOCOLS include _NET_WM_PING

    @property
    def app(self) -> str:
        """A short name for messages: the WM_CLASS class, or the window id."""
        return self.wm_class[1] or self.wm_class[0] or f"window 0x{self.toplevel:x}"


def _toplevel(display: Any, window: Any) -> Any:
    root = display.screen().root
    current = window
    while True:
        tree = current.query_tree()
        if tree.parent == 0 or tree.parent.id == root.id:
            return current
        current = tree.parent


def client_window(toplevel: Any) -> Any:
    """The window holding WM_CLASS: the toplevel itself, or (re-parented by a window
    manager) the first descendant that has it."""
    queue = [toplevel]
    while queue:
        window = queue.pop(0)
        if window.get_wm_class() is not None:
            return window
        queue.extend(window.query_tree().children)
    return toplevel


def focused_client(where: XDisplay) -> FocusedClient:
    """The client that receives key events now on ``where``; NoFocusError if none does."""
    from Xlib import X

    display = where.open()
    try:
        root = display.screen().root
        focus = display.get_input_focus().focus
        if focus in (X.NONE, 0):
            raise NoFocusError("no window has the keyboard focus; click into the window first")
        if focus == X.PointerRoot or focus.id == root.id:
            child = root.query_pointer().child
            if child in (X.NONE, 0):
                raise NoFocusError(
                    "no window has the keyboard focus (the pointer is over the bare desktop); "
                    "click into the window first"
                )
            focus = child
        toplevel = client_window(_toplevel(display, focus))
        wm_class = toplevel.get_wm_class() or ("", "")
        protocols = toplevel.get_wm_protocols() or []
        ping_atom = display.intern_atom("_NET_WM_PING")
        return FocusedClient(
            window=focus.id,
            toplevel=toplevel.id,
            wm_class=(str(wm_class[0]), str(wm_class[1])),
            pings=ping_atom in protocols,
        )
    except X11Error:
        raise
    except Exception as exc:  # a window destroyed while we looked (BadWindow), display gone
        raise X11Error(f"could not read the keyboard focus: {exc!r}") from exc
    finally:
        close_display(display)


PingResult = Literal["answered", "gone", "silent"]


def ping(toplevel: int, timeout: float = 2.0, *, where: XDisplay) -> PingResult:
    """Send ``_NET_WM_PING`` to ``toplevel`` on ``where`` and wait for the answer: ``answered``;
    ``gone`` if the window was destroyed or unmapped (a dialog that typed Return
    closed has handled its keys); ``silent`` if it did not answer within ``timeout``."""
    from Xlib import X
    from Xlib import error as xerror
    from Xlib.protocol import event as xevent

    display = where.open()
    try:
        root = display.screen().root
        protocols = display.intern_atom("WM_PROTOCOLS")
        ping_atom = display.intern_atom("_NET_WM_PING")
        # GTK and Chromium answer with SubstructureNotify, Qt with StructureNotify
        root.change_attributes(event_mask=X.SubstructureNotifyMask | X.StructureNotifyMask)
        window = display.create_resource_object("window", toplevel)
        caught = xerror.CatchError(xerror.BadWindow)
        window.change_attributes(event_mask=X.StructureNotifyMask, onerror=caught)
        try:
            if window.get_attributes().map_state != X.IsViewable:
                return "gone"
        except xerror.BadWindow:
            return "gone"
        token = int(time.monotonic_ns() // 1000) & 0x7FFFFFFF or 1
        message = xevent.ClientMessage(
            window=window,
            client_type=protocols,
            data=(32, [ping_atom, token, toplevel, 0, 0]),
        )
        window.send_event(message, event_mask=0, onerror=caught)
        display.flush()
        deadline = time.monotonic() + timeout
        while True:
            while display.pending_events():
                ev = display.next_event()
                if ev.type in (X.DestroyNotify, X.UnmapNotify) and ev.window.id == toplevel:
                    return "gone"
                if (
                    ev.type == X.ClientMessage
                    and ev.client_type == protocols
                    and ev.data[1][0] == ping_atom
                    and ev.data[1][1] == token
                ):
                    return "answered"
            left = deadline - time.monotonic()
            if left <= 0:
                return "gone" if caught.get_error() is not None else "silent"
            select.select([display.fileno()], [], [], left)
    finally:
        close_display(display)
