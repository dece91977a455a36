"""Where a portal desktop is: a Wayland session whose compositor is driven through
xdg-desktop-portal (GNOME 45+, KDE Plasma 6) over that session's D-Bus.

:class:`PortalDisplay` is a :class:`~jarvis.desktop.wlroots.session.WaylandDisplay`
(the same socket and session bus, so a child process started for the task lands in
that session) that says the portal, not the wlroots protocols, drives it. Its
``session_bus`` is required: the portal lives there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from jarvis.desktop.wlroots.session import WaylandDisplay, WaylandError


@dataclass(frozen=True)
class PortalDisplay(WaylandDisplay):
    """A GNOME or KDE Wayland session, reached through the portal on ``session_bus``;
    ``desk`` names the desktop as the person knows it (``XDG_CURRENT_DESKTOP``)."""

    desk: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> PortalDisplay:
        env = os.environ if env is None else env
        base = WaylandDisplay.from_env(env)
        if not base.session_bus:
            raise WaylandError(
                "DBUS_SESSION_BUS_ADDRESS is not set: the desktop portal is reached "
                "over the session's bus"
            )
        desk = env.get("XDG_CURRENT_DESKTOP", "")
        return cls(base.socket, base.swaysock, base.session_bus, desk)
