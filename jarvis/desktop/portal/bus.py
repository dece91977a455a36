"""xdg-desktop-portal spoken over the session D-Bus with jeepney (DESIGN section 15).

The portal's long operations (CreateSession, SelectDevices, SelectSources, Start) return
a Request object and answer later with its ``Response`` signal: ``0`` done, ``1`` the
person cancelled, ``2`` anything else. :meth:`PortalBus.request` subscribes to that
signal on the request's path *before* it calls (the path is known in advance from our
unique name and a ``handle_token``), so an answer can never be missed. Plain calls
(the ``Notify*`` input methods, properties) go through :meth:`PortalBus.call`, which
returns only once the portal answered and raises :class:`PortalError` on an error reply.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jeepney import DBusAddress, MatchRule, Message, MessageType, new_method_call
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import DBusConnection, open_dbus_connection

from jarvis.desktop.errors import InputError

PORTAL_NAME = "org.freedesktop.portal.Desktop"
PORTAL_PATH = "/org/freedesktop/portal/desktop"
REMOTE_DESKTOP = "org.freedesktop.portal.RemoteDesktop"
SCREEN_CAST = "org.freedesktop.portal.ScreenCast"
REQUEST = "org.freedesktop.portal.Request"
SESSION = "org.freedesktop.portal.Session"
PROPS = "org.freedesktop.DBus.Properties"
CALL_TIMEOUT_S = 10.0
NO_PORTAL = (
    "no xdg-desktop-portal on the session bus ({why}); GNOME 45+ and KDE Plasma 6 start it "
    "with the session (apt install xdg-desktop-portal-gnome or xdg-desktop-portal-kde)"
)


class PortalError(InputError):
    """The portal is absent, refused, or answered with an error; one line says which."""


class ConsentRefused(PortalError):
    """The person (or the portal) said no to remote control; ``code`` is the Response."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Answer:
    """A Request's ``Response``: its code (0 ok, 1 cancelled, 2 other) and results."""

    code: int
    results: dict[str, Any]


def variant(value: Any) -> tuple[str, Any]:
    """``value`` as a D-Bus variant (signature, value) for an ``a{sv}`` option."""
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int):
        return ("u", value)
    return ("s", str(value))


def unwrap(options: dict[str, tuple[str, Any]]) -> dict[str, Any]:
    """An ``a{sv}`` as received (name -> (signature, value)) as plain values."""
    return {name: value for name, (_sig, value) in options.items()}


class PortalBus:
    """One connection to the session bus that ``address`` names; close it when done."""

    def __init__(self, address: str, timeout: float = CALL_TIMEOUT_S) -> None:
        self.address = address
        self.timeout = timeout
        try:
            self._conn: DBusConnection = open_dbus_connection(address, enable_fds=True)
        except (OSError, ValueError) as exc:
            raise PortalError(NO_PORTAL.format(why=f"no session bus at {address!r}")) from exc
        self._lock = threading.RLock()
        self._tokens = itertools.count(1)
        self.sender = str(self._conn.unique_name).lstrip(":").replace(".", "_")

    def token(self, kind: str) -> str:
        """A fresh handle token (unique on this connection)."""
        return f"jarvis_{kind}{next(self._tokens)}"

    def _message(self, interface: str, method: str, signature: str, args: tuple) -> Message:
        where = DBusAddress(PORTAL_PATH, bus_name=PORTAL_NAME, interface=interface)
        return new_method_call(where, method, signature or None, args)

    def send(self, message: Message, timeout: float | None = None) -> tuple:
        """Send ``message`` and return its reply's body; PortalError on an error reply."""
        with self._lock:
            try:
                reply = self._conn.send_and_get_reply(message, timeout=timeout or self.timeout)
            except TimeoutError as exc:
                raise PortalError("the desktop portal did not answer in time") from exc
            except OSError as exc:
                raise PortalError(f"the session bus went away: {exc}") from exc
        if reply.header.message_type == MessageType.error:
            raise PortalError(_error_line(reply))
        return tuple(reply.body)

    def call(self, interface: str, method: str, signature: str = "", *args: Any) -> tuple:
        """One method call on the portal object; its reply's body."""
        return self.send(self._message(interface, method, signature, args))

    def request(
        self,
        interface: str,
        method: str,
        signature: str,
        args: tuple,
        timeout: float | None = None,
        waiting: Callable[[], None] | None = None,
        patience: float = 0.0,
        stop: threading.Event | None = None,
    ) -> Answer:
        """Call ``method`` whose last argument is an ``a{sv}`` and wait for its Response.

        A ``handle_token`` is added to the options; the Response is awaited for up to
        ``timeout`` seconds; ``waiting`` is called once if no answer came within
        ``patience`` seconds (Start's consent dialog: Jarvis tells the person); ``stop``
        set ends the wait (the task was cancelled)."""
        handle = self.token("req")
        path = f"{PORTAL_PATH}/request/{self.sender}/{handle}"
        options = dict(args[-1]) | {"handle_token": variant(handle)}
        message = self._message(interface, method, signature, (*args[:-1], options))
        rule = MatchRule(type="signal", interface=REQUEST, member="Response", path=path)
        limit = timeout or self.timeout
        with self._lock, self._conn.filter(rule) as queue:
            self.send(new_method_call(message_bus, "AddMatch", "s", (rule.serialise(),)))
            self.send(message)
            try:
                signal = self._wait(queue, limit, waiting, patience, stop)
            finally:
                self._drop_match(rule)
        code, results = signal.body
        return Answer(int(code), unwrap(results))

    def _wait(
        self,
        queue: Any,
        limit: float,
        waiting: Callable[[], None] | None,
        patience: float,
        stop: threading.Event | None,
    ) -> Message:
        """The Response in ``queue``, read in short slices so ``stop`` ends the wait."""
        began = time.monotonic()
        while True:
            elapsed = time.monotonic() - began
            if waiting is not None and elapsed >= patience:
                waiting()
                waiting = None
            if stop is not None and stop.is_set():
                raise PortalError("stopped while waiting for the desktop's answer")
            if elapsed >= limit:
                raise PortalError(f"the desktop portal gave no answer in {limit:g} s")
            try:
                return self._conn.recv_until_filtered(queue, timeout=min(0.25, limit - elapsed))
            except TimeoutError:
                continue

    def _drop_match(self, rule: MatchRule) -> None:
        with contextlib.suppress(PortalError):  # the bus is gone: the match went with it
            self.send(new_method_call(message_bus, "RemoveMatch", "s", (rule.serialise(),)))

    def property(self, interface: str, name: str) -> Any:
        """Property ``name`` of the portal's ``interface``."""
        where = DBusAddress(PORTAL_PATH, bus_name=PORTAL_NAME, interface=PROPS)
        (value,) = self.send(new_method_call(where, "Get", "ss", (interface, name)))
        return value[1]

    def close_session(self, session: str) -> None:
        """Close the portal session at ``session`` (its devices and streams end)."""
        where = DBusAddress(session, bus_name=PORTAL_NAME, interface=SESSION)
        self.send(new_method_call(where, "Close"))

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _error_line(reply: Message) -> str:
    """One line for an error reply: the portal being absent reads as that."""
    from jeepney import HeaderFields

    name = str(reply.header.fields.get(HeaderFields.error_name, "an error"))
    detail = str(reply.body[0]) if reply.body else ""
    if name in (
        "org.freedesktop.DBus.Error.ServiceUnknown",
        "org.freedesktop.DBus.Error.NameHasNoOwner",
    ):
        return NO_PORTAL.format(why="org.freedesktop.portal.Desktop is not on the bus")
    if name == "org.freedesktop.DBus.Error.UnknownInterface" or "No such interface" in detail:
        return f"the desktop portal has no such interface: {detail}"
    return f"the desktop portal refused: {name}: {detail}".rstrip(": ")
