"""The accessibility bus (AT-SPI2) spoken over plain D-Bus with jeepney.

Applications publish their widgets on a private bus whose address the session bus hands
out (``org.a11y.Bus.GetAddress``). :class:`A11yBus` connects to it for one session-bus
address (given, never read from this process's environment) and asks many questions in
one round trip: :meth:`A11yBus.batch` sends every call, then collects the replies by
serial, so a tree is read level by level rather than call by call. Every wait has a
deadline; a reply that does not come in time is :class:`A11yTimeout`.

jeepney is pure Python with no dependencies and a blocking API, which fits a read with a
time limit done from a worker thread; ``pyatspi`` and ``gi.repository.Atspi`` are Debian
packages a virtual environment cannot import.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from jeepney import DBusAddress, HeaderFields, MessageType, new_method_call
from jeepney.io.blocking import DBusConnection, open_dbus_connection

ACCESSIBLE = "org.a11y.atspi.Accessible"
COMPONENT = "org.a11y.atspi.Component"
PROPS = "org.freedesktop.DBus.Properties"
REGISTRY = "org.a11y.atspi.Registry"
ROOT_PATH = "/org/a11y/atspi/accessible/root"
NULL_PATH = "/org/a11y/atspi/null"


class A11yError(RuntimeError):
    """The accessibility bus is absent or did not answer."""


class A11yTimeout(A11yError):
    """A read ran past its time limit."""


@dataclass(frozen=True)
class Call:
    """One method call on one object: ``(bus name, path)``, interface, method, arguments."""

    ref: tuple[str, str]
    interface: str
    method: str
    signature: str = ""
    args: tuple[Any, ...] = ()

    def message(self) -> Any:
        address = DBusAddress(self.ref[1], bus_name=self.ref[0], interface=self.interface)
        return new_method_call(address, self.method, self.signature or None, self.args)


def prop(ref: tuple[str, str], interface: str, name: str) -> Call:
    """A call that reads property ``name`` of ``interface``."""
    return Call(ref, PROPS, "Get", "ss", (interface, name))


def accessibility_address(session_bus: str, timeout: float = 1.0) -> str:
    """The accessibility bus's address, asked of the session bus at ``session_bus``."""
    try:
        conn = open_dbus_connection(session_bus, auth_timeout=timeout)
    except (OSError, ValueError) as exc:
        raise A11yError(f"no session bus at {session_bus!r}: {exc}") from exc
    try:
        msg = new_method_call(
            DBusAddress("/org/a11y/bus", bus_name="org.a11y.Bus", interface="org.a11y.Bus"),
            "GetAddress",
        )
        reply = conn.send_and_get_reply(msg, timeout=timeout)
    except TimeoutError as exc:
        raise A11yError("the session bus gave no accessibility bus address in time") from exc
    finally:
        conn.close()
    if reply.header.message_type == MessageType.error:
        raise A11yError(f"no accessibility bus on the session bus: {reply.body}")
    return str(reply.body[0])


class A11yBus:
    """A connection to the accessibility bus; close it when done."""

    def __init__(self, session_bus: str, timeout: float = 1.0) -> None:
        self.address = accessibility_address(session_bus, timeout)
        try:
            self._conn: DBusConnection = open_dbus_connection(self.address, auth_timeout=timeout)
        except (OSError, ValueError) as exc:
            raise A11yError(f"cannot connect to the accessibility bus: {exc}") from exc

    def batch(self, calls: list[Call], deadline: float) -> list[Any]:
        """Each call's reply body (a tuple) or the exception it raised, in order; all sent
        before any reply is read. Past ``deadline`` (monotonic) raises :class:`A11yTimeout`."""
        serials: dict[int, int] = {}
        data = []
        for i, call in enumerate(calls):
            serial = next(self._conn.outgoing_serial)
            data.append(call.message().serialise(serial=serial))
            serials[serial] = i
        self._conn.sock.sendall(b"".join(data))  # one write for the whole batch
        out: list[Any] = [None] * len(calls)
        left = len(calls)
        while left:
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise A11yTimeout("the accessibility tree took too long to read")
            try:
                msg = self._conn.receive(timeout=wait)
            except TimeoutError as exc:
                raise A11yTimeout("the accessibility tree took too long to read") from exc
            i = serials.pop(msg.header.fields.get(HeaderFields.reply_serial, -1), -1)
            if i < 0:
                continue  # a signal or a reply to an abandoned batch
            if msg.header.message_type == MessageType.error:
                out[i] = A11yError(str(msg.body[0]) if msg.body else "D-Bus error")
            else:
                out[i] = msg.body
            left -= 1
        return out

    def call(self, call: Call, timeout: float = 1.0) -> Any:
        """One call's reply body; an error reply raises :class:`A11yError`."""
        result = self.batch([call], time.monotonic() + timeout)[0]
        if isinstance(result, Exception):
            raise result
        return result

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> A11yBus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
