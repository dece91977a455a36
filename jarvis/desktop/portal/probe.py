"""What the session's desktop portal offers, asked without starting a session.

:func:`portal_versions` reads the ``version`` property of the RemoteDesktop and
ScreenCast interfaces (RemoteDesktop 2 brings ``persist_mode`` and the restore token,
so consent is asked once); :func:`portal_problem` is the one line that says why the
portal backend cannot work here, or None.
"""

from __future__ import annotations

from jarvis.desktop.portal.bus import REMOTE_DESKTOP, SCREEN_CAST, PortalBus, PortalError

INTERFACES = (REMOTE_DESKTOP, SCREEN_CAST)


def portal_versions(address: str) -> dict[str, int]:
    """Each interface's version on the portal at the session bus ``address``."""
    with_bus = PortalBus(address, timeout=5.0)
    try:
        return {name: int(with_bus.property(name, "version")) for name in INTERFACES}
    finally:
        with_bus.close()


def portal_problem(address: str) -> str | None:
    """Why the portal at ``address`` cannot drive this desktop, in one line; or None."""
    if not address:
        return "DBUS_SESSION_BUS_ADDRESS is not set: the desktop portal is reached over it"
    try:
        portal_versions(address)
    except PortalError as exc:
        return str(exc)
    return None
