"""A Wayland socket in front of a real compositor that withholds some of its globals.

:class:`HidingProxy` listens on its own socket; each client that connects gets its own
connection to the compositor, and bytes (with the file descriptors that ride on them)
are relayed both ways unchanged, except the ``wl_registry.global`` events that announce
a hidden interface. So a test can show what Jarvis does on a compositor without, say,
the virtual pointer protocol, with every other part of the real sway in the path.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import threading
from pathlib import Path

DISPLAY_ID, GET_REGISTRY, GLOBAL = 1, 1, 0
MAX_FDS = 28


def _messages(buffer: bytearray) -> list[bytes]:
    """Take every whole message off the front of ``buffer``."""
    out = []
    while len(buffer) >= 8:
        size = struct.unpack_from("=I", buffer, 4)[0] >> 16
        if size < 8 or len(buffer) < size:
            break
        out.append(bytes(buffer[:size]))
        del buffer[:size]
    return out


def _interface(message: bytes) -> str:
    """The interface name of a wl_registry.global event (name, interface, version)."""
    length = struct.unpack_from("=I", message, 12)[0]
    return message[16 : 16 + length - 1].decode()


class HidingProxy:
    """Relay clients at ``path`` to the compositor at ``upstream``, hiding ``hide``."""

    def __init__(self, upstream: str, hide: set[str], path: Path) -> None:
        self.upstream, self.hide, self.path = upstream, hide, str(path)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sockets: list[socket.socket] = [self._listener]

    def __enter__(self) -> HidingProxy:
        self._listener.bind(self.path)
        self._listener.listen(8)
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        for sock in self._sockets:
            sock.close()
        Path(self.path).unlink(missing_ok=True)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.connect(self.upstream)
            self._sockets += [client, server]
            registries: set[int] = set()
            for args in ((client, server, registries, False), (server, client, registries, True)):
                threading.Thread(target=self._pump, args=args, daemon=True).start()

    def _pump(
        self, src: socket.socket, dst: socket.socket, registries: set[int], down: bool
    ) -> None:
        """Relay ``src`` to ``dst``: toward the client (``down``) without the hidden
        globals; toward the compositor noting each registry the client makes."""
        pending = bytearray()
        while True:
            try:
                data, fds, _flags, _addr = socket.recv_fds(src, 65536, MAX_FDS)
            except OSError:
                data, fds = b"", []
            if not data:
                with contextlib.suppress(OSError):
                    dst.shutdown(socket.SHUT_WR)
                return
            pending += data
            kept = []
            for message in _messages(pending):
                target, opcode = struct.unpack_from("=II", message)
                opcode &= 0xFFFF
                if not down and target == DISPLAY_ID and opcode == GET_REGISTRY:
                    registries.add(struct.unpack_from("=I", message, 8)[0])
                hidden = down and target in registries and opcode == GLOBAL
                if not (hidden and _interface(message) in self.hide):
                    kept.append(message)
            try:
                if kept:
                    socket.send_fds(dst, [b"".join(kept)], fds)
            except OSError:
                return
            finally:
                for fd in fds:
                    os.close(fd)
