"""Which desktop backend drives this desktop (``desktop.backend``; DESIGN section 15).

:func:`choose_backend` is the rule, a pure function of the setting, the environment and
a probe of the compositor's globals: ``x11`` where no Wayland session is reachable (and
``DISPLAY`` then is the display, as before), ``wlroots`` on sway and other wlroots
compositors (named by ``SWAYSOCK`` or ``XDG_CURRENT_DESKTOP``, else found by the virtual
pointer global), and ``portal`` on GNOME and KDE (named by ``XDG_CURRENT_DESKTOP``):
their RemoteDesktop and ScreenCast portals, consent asked on the person's desk.

:func:`task_display` turns that choice into the display a task works on (the person's X
display, or the compositor the environment names), and :func:`open_desktop` opens the
Desktop of a display: the X11 :class:`~jarvis.desktop.desktop.Desktop`, the
:class:`~jarvis.desktop.wlroots.desktop.WlrootsDesktop` or the
:class:`~jarvis.desktop.portal.desktop.PortalDesktop`. They are the one place that
tells the kinds apart; everything above holds a Desktop and asks it.
"""

from __future__ import annotations

import re
import subprocess
import threading
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Literal, TypeAlias

from jarvis.desktop.errors import InputError
from jarvis.desktop.portal.display import PortalDisplay
from jarvis.desktop.wlroots.session import (
    WaylandDisplay,
    WaylandError,
    compositor_globals,
    missing_protocols,
)
from jarvis.desktop.x11 import XDisplay
from jarvis.geometry import Size

if TYPE_CHECKING:
    from PIL.Image import Image

    from jarvis.config import Settings
    from jarvis.desktop.desktop import Desktop

Chosen = Literal["x11", "wlroots", "portal"]
Where: TypeAlias = XDisplay | WaylandDisplay
"""A display a Desktop is opened on: an X display or a Wayland compositor (a
:class:`PortalDisplay` when the portal drives it)."""
WLROOTS_DESKTOPS = ("sway", "wlroots", "hyprland", "river", "wayfire", "labwc")
PORTAL_DESKTOPS = ("gnome", "kde", "plasma")
VIRTUAL_POINTER = "zwlr_virtual_pointer_manager_v1"


class BackendError(InputError):
    """No backend can drive this desktop; the message is one line that says why."""


def choose_backend(
    setting: str,
    env: Mapping[str, str],
    probe: Callable[[str], Collection[str]] | None = None,
) -> Chosen:
    """The backend for ``setting`` (``desktop.backend``) in the session ``env``
    describes; ``probe`` lists the globals of the compositor at a socket (asked only
    when the names say nothing)."""
    if setting in ("x11", "wlroots", "portal"):
        return setting  # type: ignore[return-value]  # narrowed by the test above
    if setting != "auto":
        raise BackendError(f"unknown desktop.backend {setting!r} (auto, x11, wlroots, portal)")
    socket = env.get("WAYLAND_DISPLAY", "")
    if not socket:  # no compositor to reach: X11 (DISPLAY, or none where there is no X)
        return "x11"
    desktop = env.get("XDG_CURRENT_DESKTOP", "").lower()
    if env.get("SWAYSOCK") or any(name in desktop for name in WLROOTS_DESKTOPS):
        return "wlroots"
    if any(name in desktop for name in PORTAL_DESKTOPS):
        return "portal"
    if probe is not None and VIRTUAL_POINTER in probe(socket):
        return "wlroots"
    raise BackendError(
        f"the Wayland compositor at {socket} ({desktop or 'unnamed'}) offers no "
        f"{VIRTUAL_POINTER}; set desktop.backend = portal if it is GNOME 45+ or KDE "
        "Plasma 6, or x11 to drive only its XWayland windows"
    )


def task_display(setting: str, env: Mapping[str, str], person: XDisplay) -> Where:
    """The display a task works on here: ``person`` (the X display read at start-up)
    when ``setting`` picks x11 for the session ``env`` describes, else the compositor
    ``env`` names. Raises :class:`BackendError` (one line) when none can drive it."""
    try:
        chosen = choose_backend(setting, env, _globals)
        if chosen == "x11":
            return person
        if chosen == "portal":
            return PortalDisplay.from_env(env)
        return WaylandDisplay.from_env(env)
    except WaylandError as exc:
        raise BackendError(str(exc)) from exc


def _globals(socket: str) -> Collection[str]:
    try:
        return compositor_globals(socket)
    except WaylandError:
        return set()  # no compositor answers there: auto says so in its own line


def open_desktop(
    settings: Settings,
    where: Where,
    stop: threading.Event | None = None,
    sizer: Callable[[Size], tuple[Size, Size]] | None = None,
    notify: Callable[[str], None] | None = None,
) -> Desktop:
    """The Desktop on ``where``, set up from ``settings``: the portal one on a GNOME or
    KDE session, the wlroots one on a Wayland compositor, the X11 one on an X display.
    ``notify`` is told (one line) when the portal's consent dialog waits for the person.

    Typed as :class:`~jarvis.desktop.desktop.Desktop`: the WlrootsDesktop has its
    interface (screen, input, settle, windows, clipboard, hold, stop, move_to), and the
    code above names that class where it means any desktop."""
    if isinstance(where, PortalDisplay):
        from jarvis.desktop.portal.desktop import PortalDesktop

        portal: Desktop = PortalDesktop.open(settings, where, stop, sizer, notify)  # type: ignore[assignment]
        return portal
    if isinstance(where, WaylandDisplay):
        from jarvis.desktop.wlroots.desktop import WlrootsDesktop

        wayland: Desktop = WlrootsDesktop.open(settings, where, stop, sizer)  # type: ignore[assignment]
        return wayland
    from jarvis.desktop.desktop import Desktop

    return Desktop.open(settings, where, stop, sizer)


def waits_for_consent(where: Where) -> bool:
    """Whether opening the Desktop on ``where`` may wait for a person (the portal's
    consent dialog, up to minutes): the caller opens it off its event loop."""
    return isinstance(where, PortalDisplay)


def keys_display(where: Where, person: XDisplay) -> XDisplay:
    """The X display whose held keys the kill switch lets go of when a task on ``where``
    is stopped: ``where`` itself on X11; on Wayland the person's (wtype's keyboard, and
    every key it held, go away with it)."""
    return where if isinstance(where, XDisplay) else person


def reach_problem(where: Where) -> str | None:
    """Why the display ``where`` cannot be driven (no server or compositor answers there,
    it refuses us, or it lacks a protocol Jarvis needs), in one line; or None."""
    if isinstance(where, PortalDisplay):
        from jarvis.desktop.portal.probe import portal_problem

        return portal_problem(where.session_bus)
    if isinstance(where, WaylandDisplay):
        try:
            problem = missing_protocols(compositor_globals(where.socket))
        except WaylandError as exc:
            return str(exc)
        return None if problem is None else f"{problem} (at {where.socket})"
    from Xlib.error import DisplayError

    from jarvis.desktop.x11 import close_display

    try:
        display = where.open()
    except (DisplayError, OSError) as exc:  # DisplayConnectionError keeps the reason in msg
        why = getattr(exc, "msg", None) or exc
        return (
            f"cannot connect to the X display {where.name} (DISPLAY): {why}; is an X server there?"
        )
    close_display(display)
    return None


def display_in(env: Mapping[str, str]) -> Where:
    """The display a child's environment names (an eval task's process and check): the
    compositor of ``WAYLAND_DISPLAY`` (with ``SWAYSOCK``) when it names one, else the X
    display of ``DISPLAY`` with its cookie and session bus."""
    if env.get("WAYLAND_DISPLAY"):
        return WaylandDisplay.from_env(env)
    return XDisplay(
        env.get("DISPLAY", ""), env.get("XAUTHORITY"), env.get("DBUS_SESSION_BUS_ADDRESS", "")
    )


def window_titles(where: Where) -> list[str]:
    """The titles of the visible windows on ``where``: sway's tree on a wlroots
    compositor, ``xdotool`` on X11."""
    if isinstance(where, WaylandDisplay):
        from jarvis.desktop.wlroots.windows import WlWindows

        return [w.title for w in WlWindows(where).list() if w.title]
    env = where.env()
    titles = []
    for wid in _xdotool(env, "search", "--onlyvisible", "--name", ".").split():
        title = _xdotool(env, "getwindowname", wid).strip()
        if title:
            titles.append(title)
    return titles


def window_shown(where: Where, pattern: str) -> bool:
    """Whether a visible window's class (a Wayland ``app_id``) or title matches the
    regular expression ``pattern`` (case-insensitive, as xdotool searches on X11)."""
    if isinstance(where, WaylandDisplay):
        from jarvis.desktop.wlroots.windows import WlWindows

        found = re.compile(pattern, re.IGNORECASE)
        return any(
            found.search(w.wm_class) or found.search(w.title) for w in WlWindows(where).list()
        )
    env = where.env()
    return any(
        _xdotool(env, "search", "--onlyvisible", flag, pattern).strip()
        for flag in ("--class", "--name")
    )


def _xdotool(env: Mapping[str, str], *args: str) -> str:
    done = subprocess.run(
        ["xdotool", *args], env=dict(env), capture_output=True, text=True, timeout=10
    )
    return done.stdout if done.returncode == 0 else ""


def region_grab(where: Where | None) -> Callable[[tuple[int, int, int, int]], Image] | None:
    """How to cut a region (left, top, right, bottom, logical pixels) of ``where`` at
    full resolution where mss cannot: grim's screencopy on a Wayland compositor (device
    pixels: twice as many each way on a scale-2 output). None on X11: mss cuts it."""
    if not isinstance(where, WaylandDisplay):
        return None
    if isinstance(where, PortalDisplay):
        return _no_region_grab
    from jarvis.desktop.wlroots.screen import grim

    return lambda box: grim(where, box=box)


def _no_region_grab(box: tuple[int, int, int, int]) -> Image:
    raise BackendError("region grabs (target crops) are not built for the portal backend yet")
