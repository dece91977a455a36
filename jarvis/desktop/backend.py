"""Which desktop backend drives this desktop (``desktop.backend``; DESIGN section 15).

:func:`choose_backend` is the rule, a pure function of the setting, the environment and
a probe of the compositor's globals: ``x11`` where no Wayland session is reachable (and
``DISPLAY`` then is the display, as before), ``wlroots`` on sway and other wlroots
compositors (named by ``SWAYSOCK`` or ``XDG_CURRENT_DESKTOP``, else found by the virtual
pointer global), and ``portal`` on GNOME and KDE, which is not built yet: it is refused
in one line rather than driving only the XWayland windows without a word.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Literal

from jarvis.desktop.errors import InputError

Chosen = Literal["x11", "wlroots"]
WLROOTS_DESKTOPS = ("sway", "wlroots", "hyprland", "river", "wayfire", "labwc")
PORTAL_DESKTOPS = ("gnome", "kde", "plasma")
VIRTUAL_POINTER = "zwlr_virtual_pointer_manager_v1"
PORTAL_NOT_BUILT = (
    "desktop.backend = portal (GNOME and KDE on Wayland) is not built yet; "
    "set desktop.backend = x11 to drive only their XWayland windows"
)


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
    if setting == "portal":
        raise BackendError(PORTAL_NOT_BUILT)
    if setting in ("x11", "wlroots"):
        return "x11" if setting == "x11" else "wlroots"
    if setting != "auto":
        raise BackendError(f"unknown desktop.backend {setting!r} (auto, x11, wlroots, portal)")
    socket = env.get("WAYLAND_DISPLAY", "")
    if not socket:  # no compositor to reach: X11 (DISPLAY, or none where there is no X)
        return "x11"
    desktop = env.get("XDG_CURRENT_DESKTOP", "").lower()
    if env.get("SWAYSOCK") or any(name in desktop for name in WLROOTS_DESKTOPS):
        return "wlroots"
    if any(name in desktop for name in PORTAL_DESKTOPS):
        raise BackendError(PORTAL_NOT_BUILT.replace("desktop.backend = portal", desktop))
    if probe is not None and VIRTUAL_POINTER in probe(socket):
        return "wlroots"
    raise BackendError(
        f"the Wayland compositor at {socket} ({desktop or 'unnamed'}) offers no "
        f"{VIRTUAL_POINTER} and the portal backend is not built yet; "
        "set desktop.backend = x11 to drive only its XWayland windows"
    )
