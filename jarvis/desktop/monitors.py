"""The monitors of an X display, and the mss connection that captures them.

:func:`mss_for` opens mss on a display. mss 10's default backend (XCB) refuses some
servers at connection time: on TigerVNC's Xvnc it raises "drawable's visual not found in
screen's supported visuals". Its ``xlib`` backend (libX11 and libXrandr) captures those
servers, so where the default fails, the xlib backend is used instead, with one warning in
the log per display.

:func:`list_monitors` reads the monitors mss sees (index 0 is all of them together, as in
mss and the ``monitor`` setting; 1.. each monitor, as RandR lists its CRTCs), and
:func:`monitor_note` says in one line which of them a screenshot shows, in the
screenshot's own pixels: what the model is told, and what the ``screenshot`` tool answers.
"""

from __future__ import annotations

import logging
import sys
import threading
from dataclasses import dataclass
from typing import Any

from jarvis.desktop.x11 import XDisplay, connecting_with
from jarvis.geometry import Size, screen_to_model

log = logging.getLogger(__name__)

_WARNED: set[str] = set()
"""Displays (by name; "" is the process's own) whose fallback was said in the log."""
_WARNED_LOCK = threading.Lock()


def mss_for(display: XDisplay | None) -> Any:
    """An mss connection to ``display`` (None: the process's own display); mss's ``xlib``
    backend where its default one fails (said once per display in the log)."""
    return capture_connection(display)[0]


def capture_connection(display: XDisplay | None) -> tuple[Any, str]:
    """(an mss connection to ``display``, the backend it uses: ``default`` or ``xlib``).

    The default backend is tried at every connection (an attempt costs one connection
    set-up; a display number can be another server's later), the xlib one where it fails.
    """
    import mss

    kwargs: dict[str, Any] = {}
    xauthority = None
    if display is not None:
        kwargs["display"] = display.name
        xauthority = display.xauthority
    with connecting_with(xauthority):
        if not sys.platform.startswith("linux"):
            return mss.MSS(**kwargs), "default"
        try:
            return mss.MSS(**kwargs), "default"
        except mss.ScreenShotError as exc:
            sct = mss.MSS(backend="xlib", **kwargs)  # its error, if it fails too
            _say_once(display.name if display is not None else "", exc)
            return sct, "xlib"


def _say_once(name: str, exc: Exception) -> None:
    with _WARNED_LOCK:
        if name in _WARNED:
            return
        _WARNED.add(name)
    log.warning(
        "screen capture on %s: mss's default backend fails (%s); using its xlib backend",
        name or "this display",
        exc,
    )


@dataclass(frozen=True)
class Monitor:
    """One of the monitors mss sees, in absolute logical pixels (index 0: all together)."""

    index: int
    left: int
    top: int
    width: int
    height: int
    name: str = ""
    """The RandR output's name (``DUMMY1``, ``HDMI-1``) where the backend reports it."""
    primary: bool = False

    @property
    def size(self) -> Size:
        return Size(self.width, self.height)

    @property
    def origin(self) -> tuple[int, int]:
        return self.left, self.top

    def line(self) -> str:
        """``1: 1920x1080 at 0,1024 (DUMMY0, primary)``, for ``jarvis doctor``."""
        extra = ", ".join(p for p in (self.name, "primary" if self.primary else "") if p)
        where = f"{self.width}x{self.height} at {self.left},{self.top}"
        return f"{self.index}: {where}" + (f" ({extra})" if extra else "")


def list_monitors(sct: Any) -> list[Monitor]:
    """The monitors an mss connection sees: [all together, monitor 1, monitor 2, ...]."""
    return [
        Monitor(
            index=i,
            left=int(m["left"]),
            top=int(m["top"]),
            width=int(m["width"]),
            height=int(m["height"]),
            name=str(m.get("output") or ""),
            primary=bool(m.get("is_primary", False)),
        )
        for i, m in enumerate(sct.monitors)
    ]


def desktop_monitors(display: XDisplay | None) -> list[Monitor]:
    """The monitors of ``display`` now (None: the process's own display)."""
    with mss_for(display) as sct:
        return list_monitors(sct)


def failsafe_corners(monitors: list[Monitor]) -> set[tuple[int, int]]:
    """The corner pixels of the whole desktop and of each monitor: where a person slams
    the pointer to stop Jarvis (with monitors of different sizes or offsets, a corner of
    the whole is on no monitor, and the X server keeps the pointer from reaching it)."""
    corners: set[tuple[int, int]] = set()
    for m in monitors:
        right, bottom = m.left + m.width - 1, m.top + m.height - 1
        corners |= {(m.left, m.top), (right, m.top), (m.left, bottom), (right, bottom)}
    return corners


def monitor_note(monitors: list[Monitor], index: int, model: Size) -> str:
    """One line for the model on what its screenshot (``model`` pixels of monitor
    ``index``) shows when the display has several monitors; "" when it has one."""
    if len(monitors) <= 2:  # [all, the one monitor]
        return ""
    count = len(monitors) - 1
    if index != 0:
        return (
            f"The desktop has {count} monitors; the screenshot shows monitor {index} of "
            f"{count} only ({monitors[index].width}x{monitors[index].height}). Windows on the "
            "other monitors are not in it."
        )
    whole = monitors[0]
    parts = []
    for m in monitors[1:]:
        x1, y1 = screen_to_model(m.left, m.top, model, whole.size, whole.origin)
        x2, y2 = screen_to_model(
            m.left + m.width - 1, m.top + m.height - 1, model, whole.size, whole.origin
        )
        parts.append(f"monitor {m.index} from ({x1}, {y1}) to ({x2}, {y2})")
    return (
        f"The desktop has {count} monitors; the screenshot shows all of them together: "
        + "; ".join(parts)
        + ". Black areas outside them are not part of any monitor."
    )
