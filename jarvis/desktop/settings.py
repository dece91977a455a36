"""Settings of the desktop backend (``desktop`` in settings.json; DESIGN section 15)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Backend = Literal["auto", "x11", "wlroots", "portal"]
IndicatorMode = Literal["auto", "on", "off"]


class DesktopSettings(BaseModel):
    """``desktop`` in settings.json."""

    backend: Backend = Field(
        "auto",
        description="how Jarvis drives the desktop: x11, wlroots (sway and other wlroots "
        "compositors), portal (GNOME 45+ and KDE 6+ on Wayland, through xdg-desktop-portal), "
        "or auto (from WAYLAND_DISPLAY, XDG_SESSION_TYPE, XDG_CURRENT_DESKTOP and DISPLAY)",
    )
    indicator: IndicatorMode = Field(
        "auto",
        description='a thin coloured border and a badge "Jarvis is working" on the screen '
        "while a task runs (kept out of the model's screenshots): on, off, or auto (on for "
        "a person's display, off for a private one such as --sandbox's)",
    )
