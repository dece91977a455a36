"""`jarvis doctor` on a portal desktop (GNOME 45+, KDE Plasma 6): the portal's interface
versions, the restore token's state, each stream's size and scale, and one line naming
what is missing when Jarvis could not see or act there (DESIGN section 15).

The backend line asks the portal only for its properties; the display and input lines
start a session, which shows the consent dialog on the person's desk unless a restore
token spares it (the first such line asks, the second reuses the token it stored)."""

from __future__ import annotations

from collections.abc import Mapping

from jarvis.config import Settings
from jarvis.desktop.portal.bus import REMOTE_DESKTOP, SCREEN_CAST, PortalBus
from jarvis.desktop.portal.display import PortalDisplay
from jarvis.desktop.portal.probe import portal_versions
from jarvis.desktop.portal.session import PortalSession
from jarvis.desktop.portal.token import RestoreToken

NO_EIS = "ConnectToEIS not used (Debian 12 has no libei)"


def describe_portal(settings: Settings, env: Mapping[str, str]) -> tuple[bool, str]:
    """(ok, one line): the portal's versions and the restore token's state."""
    where = PortalDisplay.from_env(env)
    versions = portal_versions(where.session_bus)
    desktop = env.get("XDG_CURRENT_DESKTOP", "") or "a Wayland desktop"
    token = RestoreToken(settings.data_dir).state
    named = ", ".join(f"{name} v{version}" for name, version in versions.items())
    line = f"portal on {desktop}: {named}; restore token {token}; {NO_EIS}"
    if versions[REMOTE_DESKTOP] < 2:
        line += "; RemoteDesktop v1 keeps no restore token: consent is asked every time"
    return True, line


def _started(settings: Settings, env: Mapping[str, str]) -> tuple[PortalBus, PortalSession]:
    where = PortalDisplay.from_env(env)
    bus = PortalBus(where.session_bus)
    try:
        tokens = RestoreToken(settings.data_dir)
        return bus, PortalSession(bus, tokens, desk=where.desk or "GNOME or KDE").start()
    except BaseException:
        bus.close()
        raise


def portal_display(settings: Settings, env: Mapping[str, str]) -> tuple[bool, str]:
    """Start a session and take a picture of each stream (its logical box and scale)."""
    from jarvis.desktop.portal.desktop import open_streams
    from jarvis.desktop.portal.screen import stream_scale

    bus, session = _started(settings, env)
    try:
        sources = open_streams(session)
        try:
            parts = []
            for stream in session.streams:
                frame = sources[stream.node].frame()
                x, y, width, height = stream.box
                parts.append(
                    f"stream {stream.name} {width}x{height}+{x}+{y} logical, "
                    f"{frame.width}x{frame.height} device pixels "
                    f"(scale {stream_scale(stream, frame):g})"
                )
        finally:
            for source in sources.values():
                source.close()
    finally:
        session.close()
        bus.close()
    return True, f"captured through {SCREEN_CAST}: " + "; ".join(parts)


def portal_input(settings: Settings, env: Mapping[str, str]) -> tuple[bool, str]:
    """Start a session and check the portal granted the pointer and the keyboard;
    nothing is moved or pressed."""
    bus, session = _started(settings, env)
    try:
        streams = len(session.streams)
    finally:
        session.close()
        bus.close()
    return True, f"pointer and keyboard granted by {REMOTE_DESKTOP} over {streams} stream(s)"
