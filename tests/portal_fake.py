"""A private session bus and a fake xdg-desktop-portal on it, for the portal tests.

:class:`SessionBus` runs ``dbus-daemon --session --print-address --nofork`` (its own
socket in a temp dir). :class:`FakePortal` owns ``org.freedesktop.portal.Desktop`` on
that bus and answers the RemoteDesktop and ScreenCast methods the way
xdg-desktop-portal does (a Request object, then its ``Response`` signal), checking
every call's arguments and recording it. ``Start`` answers with ``start_code`` (0 ok,
1 cancelled, 2 other); it counts as a consent dialog unless the session was given a
restore token the fake issued; a token it did not issue is answered with 2 when
``reject_unknown_tokens`` is set. ``OpenPipeWireRemote`` hands out a pipe's read end.
"""

from __future__ import annotations

import os
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jeepney import (
    DBusAddress,
    FileDescriptor,
    HeaderFields,
    MessageType,
    new_error,
    new_method_return,
    new_signal,
)
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection

PATH = "/org/freedesktop/portal/desktop"
RD = "org.freedesktop.portal.RemoteDesktop"
SC = "org.freedesktop.portal.ScreenCast"
SIGNATURES = {
    (RD, "CreateSession"): "a{sv}",
    (RD, "SelectDevices"): "oa{sv}",
    (SC, "SelectSources"): "oa{sv}",
    (RD, "Start"): "osa{sv}",
    (RD, "NotifyPointerMotionAbsolute"): "oa{sv}udd",
    (RD, "NotifyPointerButton"): "oa{sv}iu",
    (RD, "NotifyPointerAxisDiscrete"): "oa{sv}ui",
    (RD, "NotifyPointerAxis"): "oa{sv}dd",
    (RD, "NotifyKeyboardKeysym"): "oa{sv}iu",
    (SC, "OpenPipeWireRemote"): "oa{sv}",
}


class SessionBus:
    """A private session bus; ``address`` to connect; :meth:`close` stops it."""

    def __init__(self, tmp: Path) -> None:
        config = tmp / "bus.conf"
        config.write_text(
            "<busconfig><type>session</type>"
            f"<listen>unix:dir={tmp}</listen><auth>EXTERNAL</auth>"
            "<policy context='default'><allow send_destination='*' eavesdrop='true'/>"
            "<allow eavesdrop='true'/><allow own='*'/></policy></busconfig>"
        )
        self.proc = subprocess.Popen(
            ["dbus-daemon", f"--config-file={config}", "--print-address", "--nofork"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.address = self.proc.stdout.readline().strip()
        assert self.address.startswith("unix:"), self.address

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@dataclass
class FakePortal:
    """The fake portal; start it with :meth:`serve`, stop it with :meth:`close`."""

    address: str
    streams: list[tuple[int, tuple[int, int], tuple[int, int]]] = field(
        default_factory=lambda: [(42, (0, 0), (1280, 720))]
    )
    start_code: int = 0
    devices: int = 3
    reject_unknown_tokens: bool = True
    answer_start: bool = True
    """False: Start's dialog stays open (no Response comes)."""
    versions: tuple[int, int] = (2, 4)
    calls: list[tuple[str, str, tuple]] = field(default_factory=list)
    dialogs: int = 0
    issued: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def serve(self) -> FakePortal:
        self._conn = open_dbus_connection(self.address, enable_fds=True)
        reply = self._conn.send_and_get_reply(
            message_bus.RequestName("org.freedesktop.portal.Desktop"), timeout=5
        )
        assert reply.body[0] == 1, reply.body
        self._sessions: dict[str, dict[str, Any]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def of(self, member: str) -> list[tuple]:
        """The arguments of every call of ``member``, in order."""
        return [args for _iface, name, args in self.calls if name == member]

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                msg = self._conn.receive(timeout=0.1)
            except TimeoutError:
                continue
            except OSError:
                return
            if msg.header.message_type == MessageType.method_call:
                try:
                    self._handle(msg)
                except AssertionError as exc:  # a wrong argument: the client gets an error
                    self.errors.append(str(exc))
                    self._conn.send(
                        new_error(msg, "org.freedesktop.DBus.Error.InvalidArgs", "s", (str(exc),))
                    )

    def _handle(self, msg: Any) -> None:
        fields = msg.header.fields
        iface, member = fields.get(HeaderFields.interface), fields[HeaderFields.member]
        path, sig = fields[HeaderFields.path], fields.get(HeaderFields.signature, "")
        if iface == "org.freedesktop.DBus.Properties":
            name = msg.body[1]
            version = self.versions[0] if msg.body[0] == RD else self.versions[1]
            value = {"version": version, "AvailableDeviceTypes": 7, "AvailableSourceTypes": 7}[name]
            self._conn.send(new_method_return(msg, "v", (("u", value),)))
            return
        if iface == "org.freedesktop.portal.Session":
            assert path in self._sessions, f"Close on an unknown session {path}"
            self._sessions.pop(path)
            self.calls.append((iface, member, (path,)))
            self._conn.send(new_method_return(msg))
            return
        assert path == PATH, f"call on {path}"
        assert (iface, member) in SIGNATURES, f"unknown method {iface}.{member}"
        assert sig == SIGNATURES[(iface, member)], f"{member} signature {sig}"
        self.calls.append((iface, member, tuple(msg.body)))
        sender = str(fields[HeaderFields.sender]).lstrip(":").replace(".", "_")
        getattr(self, f"_{member}")(msg, sender, *msg.body)

    def _respond(self, msg: Any, sender: str, options: dict, code: int, results: dict) -> None:
        token = options["handle_token"][1]
        request = f"{PATH}/request/{sender}/{token}"
        self._conn.send(new_method_return(msg, "o", (request,)))
        signal = new_signal(
            DBusAddress(request, interface="org.freedesktop.portal.Request"),
            "Response",
            "ua{sv}",
            (code, results),
        )
        self._conn.send(signal)

    def _session(self, handle: str) -> dict[str, Any]:
        assert handle in self._sessions, f"unknown session {handle}"
        return self._sessions[handle]

    def _CreateSession(self, msg: Any, sender: str, options: dict) -> None:
        handle = f"{PATH}/session/{sender}/{options['session_handle_token'][1]}"
        self._sessions[handle] = {"devices": None, "sources": None}
        self._respond(msg, sender, options, 0, {"session_handle": ("s", handle)})

    def _SelectDevices(self, msg: Any, sender: str, handle: str, options: dict) -> None:
        session = self._session(handle)
        assert options["types"] == ("u", 3), f"types {options['types']}"
        assert options["persist_mode"] == ("u", 2), f"persist_mode {options['persist_mode']}"
        session["devices"] = options
        self._respond(msg, sender, options, 0, {})

    def _SelectSources(self, msg: Any, sender: str, handle: str, options: dict) -> None:
        session = self._session(handle)
        assert session["devices"] is not None, "SelectSources before SelectDevices"
        assert options["types"] == ("u", 1), f"source types {options['types']}"
        assert "persist_mode" not in options, "persist_mode belongs to SelectDevices"
        session["sources"] = options
        self._respond(msg, sender, options, 0, {})

    def _Start(self, msg: Any, sender: str, handle: str, parent: str, options: dict) -> None:
        session = self._session(handle)
        assert session["sources"] is not None, "Start before SelectSources"
        token = session["devices"].get("restore_token", ("s", None))[1]
        if token is not None and token not in self.issued and self.reject_unknown_tokens:
            self._respond(msg, sender, options, 2, {})
            return
        if token is None or token not in self.issued:
            self.dialogs += 1
        if not self.answer_start:
            self._conn.send(new_method_return(msg, "o", (f"{PATH}/request/{sender}/open",)))
            return
        if self.start_code != 0:
            self._respond(msg, sender, options, self.start_code, {})
            return
        session["started"] = True
        new = f"token-{len(self.issued) + 1}"
        self.issued.append(new)
        streams = [
            (node, {"position": ("(ii)", pos), "size": ("(ii)", size), "source_type": ("u", 1)})
            for node, pos, size in self.streams
        ]
        results = {
            "devices": ("u", self.devices),
            "streams": ("a(ua{sv})", streams),
            "restore_token": ("s", new),
        }
        self._respond(msg, sender, options, 0, results)

    def _input(self, msg: Any, handle: str) -> None:
        assert self._session(handle).get("started"), "input before Start"
        self._conn.send(new_method_return(msg))

    def _NotifyPointerMotionAbsolute(
        self, msg: Any, sender: str, handle: str, opts: dict, stream: int, x: float, y: float
    ) -> None:
        assert stream in [s[0] for s in self.streams], f"unknown stream {stream}"
        size = dict((s[0], s[2]) for s in self.streams)[stream]
        assert 0 <= x < size[0] and 0 <= y < size[1], f"({x}, {y}) outside stream {size}"
        self._input(msg, handle)

    def _NotifyPointerButton(
        self, msg: Any, sender: str, handle: str, opts: dict, button: int, state: int
    ) -> None:
        assert button in (0x110, 0x111, 0x112) and state in (0, 1), f"button {button:#x} {state}"
        self._input(msg, handle)

    def _NotifyPointerAxisDiscrete(
        self, msg: Any, sender: str, handle: str, opts: dict, axis: int, steps: int
    ) -> None:
        assert axis in (0, 1) and steps != 0, f"axis {axis} steps {steps}"
        self._input(msg, handle)

    def _NotifyKeyboardKeysym(
        self, msg: Any, sender: str, handle: str, opts: dict, keysym: int, state: int
    ) -> None:
        assert keysym > 0 and state in (0, 1), f"keysym {keysym:#x} {state}"
        self._input(msg, handle)

    def _OpenPipeWireRemote(self, msg: Any, sender: str, handle: str, opts: dict) -> None:
        assert self._session(handle).get("started"), "OpenPipeWireRemote before Start"
        read, write = os.pipe()
        os.close(write)
        self._conn.send(new_method_return(msg, "h", (FileDescriptor(read),)))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._conn.close()


def fed_source(image: Any, name: str = "fed") -> tuple[Any, threading.Event]:
    """A FrameSource whose pipeline reads ``image`` (RGB, device pixels) from a pipe of
    ours through ``rawvideoparse``, the way ``pipewiresrc`` delivers a stream's frames;
    set the event to close the pipe (the pipeline then ends)."""
    from jarvis.desktop.portal.frames import FrameSource

    read, write = os.pipe()
    width, height = image.size
    parse = ["rawvideoparse", "format=rgb", f"width={width}", f"height={height}", "framerate=5/1"]
    source = FrameSource(["fdsrc", f"fd={read}", "!", *parse], pass_fds=(read,), name=name)
    done = threading.Event()

    def feed() -> None:
        with os.fdopen(write, "wb") as out:
            out.write(image.tobytes())
            out.flush()
            done.wait(60)

    threading.Thread(target=feed, daemon=True).start()
    return source, done
