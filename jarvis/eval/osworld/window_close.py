"""OSWorld's ``close_window`` setup step on a native X display.

OSWorld's VM server runs ``wmctrl -c NAME`` (``-F`` when ``strict``: the whole title,
case-sensitive; ``-x`` when ``by_class``: the window's class instead of its title), which
asks the first matching window to close, and answers success whether one matched or not.
Here the window is found with xdotool (a title or class containing the name, ignoring
case; with ``strict`` the whole of it, case-sensitive) and asked to close as a window
manager asks (``WM_DELETE_WINDOW``; a client that does not take it is disconnected). A
window not there yet is waited for a few seconds, since apps start at their own pace on a
fresh desktop; one that never shows is said on one line and the setup goes on, as in
OSWorld. The step waits until the window is gone, so the next step sees it closed.
"""

from __future__ import annotations

import re
import subprocess
import time
from typing import Any

from jarvis.desktop.x11 import XDisplay

FIND_WAIT_S = 5.0
GONE_WAIT_S = 5.0


def search_windows(env: dict[str, str], flag: str, pattern: str) -> list[int]:
    """The visible windows whose name (``--name``) or class (``--class``) matches."""
    found = subprocess.run(
        ["xdotool", "search", "--onlyvisible", flag, pattern],
        env=env,
        capture_output=True,
        text=True,
        timeout=10,
    )
    return [int(w) for w in found.stdout.split()]


def _names(display: Any, wid: int) -> tuple[str, list[str]]:
    """The title and the class names of window ``wid`` (nothing when it is gone)."""
    window = display.create_resource_object("window", wid)
    try:
        utf8 = display.intern_atom("UTF8_STRING")
        net = window.get_full_property(display.intern_atom("_NET_WM_NAME"), utf8)
        title = net.value.decode("utf-8", "replace") if net is not None else ""
        return str(title or window.get_wm_name() or ""), list(window.get_wm_class() or ())
    except Exception:  # closed meanwhile
        return "", []


def matching(env: dict[str, str], display: Any, params: dict[str, Any]) -> list[int]:
    """The visible windows the step names, the first to close first."""
    name = str(params["window_name"])
    strict, by_class = bool(params.get("strict")), bool(params.get("by_class"))
    flags = ("--class", "--classname") if by_class else ("--name",)
    found: list[int] = []
    for flag in flags:
        found += [w for w in search_windows(env, flag, re.escape(name)) if w not in found]
    if not strict:
        return found
    wanted = []
    for wid in found:
        title, classes = _names(display, wid)
        if name in (classes if by_class else [title]):
            wanted.append(wid)
    return wanted


def ask_to_close(display: Any, wid: int) -> None:
    """What a window manager does on a click on the close button."""
    from Xlib import X
    from Xlib.protocol import event

    window = display.create_resource_object("window", wid)
    protocols = display.intern_atom("WM_PROTOCOLS")
    delete = display.intern_atom("WM_DELETE_WINDOW")
    if delete in (window.get_wm_protocols() or []):
        message = event.ClientMessage(
            window=window, client_type=protocols, data=(32, [delete, X.CurrentTime, 0, 0, 0])
        )
        window.send_event(message, event_mask=0)
    else:
        window.kill_client()
    display.sync()


def close_window(params: dict[str, Any], env: dict[str, str]) -> bool:
    """Close the first window ``params`` names on ``env``'s display; False (and one line
    said) when none showed."""
    display = XDisplay(env.get("DISPLAY", ""), env.get("XAUTHORITY")).open()
    try:
        deadline = time.monotonic() + FIND_WAIT_S
        while not (found := matching(env, display, params)) and time.monotonic() < deadline:
            time.sleep(0.2)
        if not found:
            print(f"close_window: no window {params['window_name']!r} to close", flush=True)
            return False
        ask_to_close(display, found[0])
        deadline = time.monotonic() + GONE_WAIT_S
        while found[0] in matching(env, display, params) and time.monotonic() < deadline:
            time.sleep(0.1)
        return True
    finally:
        display.close()
