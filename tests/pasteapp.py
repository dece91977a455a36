"""A minimal X client that takes the keyboard focus and misbehaves on purpose, to show
that ``type`` reports what did not arrive as an error.

    python -m tests.pasteapp MODE

prints ``ready`` once its window is mapped and focused, then one JSON line per thing
it saw (``{"fetched": n}`` for each selection fetch it made, ``{"pasted": text}``).
MODE is one of:

- ``pastes``: a well-behaved client; on ctrl+v it fetches CLIPBOARD with the key
  event's time (ICCCM) and reports the text;
- ``stale``: reads CLIPBOARD every 50 ms on its own, stamped with a time from before
  any paste key (as a clipboard watcher does), and never pastes on the key;
- ``frozen``: answers nothing: it advertises ``_NET_WM_PING`` and never reads its
  events (a hung application with the focus);
- ``closes``: a dialog: answers pings, reports the ASCII it was typed
  (``{"typed": text}``) and destroys its window on Return.
"""

from __future__ import annotations

import json
import select
import sys
import time
from typing import Any

from Xlib import XK, X, Xatom
from Xlib.display import Display


def _say(data: Any) -> None:
    print(data if isinstance(data, str) else json.dumps(data), flush=True)


def _server_time(display: Any, window: Any) -> int:
    window.change_property(Xatom.WM_ICON_NAME, Xatom.STRING, 8, b"t")
    display.flush()
    while True:
        ev = display.next_event()
        if ev.type == X.PropertyNotify:
            return int(ev.time)


def _fetch(display: Any, window: Any, stamp: int) -> bytes | None:
    clipboard, utf8 = display.intern_atom("CLIPBOARD"), display.intern_atom("UTF8_STRING")
    prop = display.intern_atom("JARVIS_TEST_PASTE")
    window.convert_selection(clipboard, utf8, prop, stamp)
    display.flush()
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        if not display.pending_events():
            select.select([display.fileno()], [], [], 0.05)
            continue
        ev = display.next_event()
        if ev.type == X.SelectionNotify:
            if ev.property == X.NONE:
                return None
            data = window.get_full_property(prop, X.AnyPropertyType)
            if data is None:
                return None
            value = data.value  # python-xlib decodes 8-bit data to str
            return (
                value.encode("utf-8", "surrogateescape") if isinstance(value, str) else bytes(value)
            )
    return None


def main(mode: str) -> None:
    display = Display()
    root = display.screen().root
    window = root.create_window(
        600,
        300,
        500,
        300,
        0,
        X.CopyFromParent,
        background_pixel=display.screen().white_pixel,
        event_mask=X.KeyPressMask | X.PropertyChangeMask | X.ExposureMask,
    )
    window.set_wm_class("pasteapp", "JarvisPasteApp")
    window.set_wm_protocols([display.intern_atom("_NET_WM_PING")])
    window.map()
    display.sync()
    deadline = time.monotonic() + 5
    while window.get_attributes().map_state != X.IsViewable and time.monotonic() < deadline:
        time.sleep(0.01)
    window.set_input_focus(X.RevertToParent, X.CurrentTime)
    display.sync()
    started = _server_time(display, window)
    _say("ready")
    if mode == "frozen":
        time.sleep(120)  # the events pile up unread
        return
    if mode == "closes":
        _dialog(display, window)
        return
    v_key = display.keysym_to_keycode(XK.string_to_keysym("v"))
    fetched = 0
    while True:
        if mode == "stale":
            data = _fetch(display, window, started)
            fetched += 1
            _say({"fetched": fetched, "got": data is not None})
            time.sleep(0.05)
            continue
        ev = display.next_event()
        if ev.type == X.KeyPress and ev.detail == v_key and ev.state & X.ControlMask:
            data = _fetch(display, window, ev.time)
            _say({"pasted": data.decode("utf-8") if data is not None else None})


def _dialog(display: Any, window: Any) -> None:
    from Xlib.protocol import event as xevent

    protocols = display.intern_atom("WM_PROTOCOLS")
    ping = display.intern_atom("_NET_WM_PING")
    root = display.screen().root
    typed = ""
    while True:
        ev = display.next_event()
        if ev.type == X.ClientMessage and ev.client_type == protocols and ev.data[1][0] == ping:
            reply = xevent.ClientMessage(window=root, client_type=protocols, data=ev.data)
            mask = X.SubstructureNotifyMask | X.SubstructureRedirectMask
            root.send_event(reply, event_mask=mask)
            display.flush()
        elif ev.type == X.KeyPress:
            keysym = display.keycode_to_keysym(ev.detail, 1 if ev.state & X.ShiftMask else 0)
            if keysym == XK.XK_Return:
                _say({"typed": typed})
                window.destroy()
                display.sync()
                time.sleep(60)
                return
            if 0x20 <= keysym <= 0x7E:
                typed += chr(keysym)


if __name__ == "__main__":
    main(sys.argv[1])
