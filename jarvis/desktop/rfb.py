"""The client side of an RFB (VNC) login to x11vnc: what the API's relay and a fleet
worker's view tunnel do before they copy bytes, so a VNC password never leaves the process
that started x11vnc."""

from __future__ import annotations

import asyncio
import struct

RFB_VERSION = b"RFB 003.008\n"
SEC_NONE, SEC_VNC = 1, 2


class RfbError(RuntimeError):
    """x11vnc refused the login or spoke something else."""


def vnc_response(password: str, challenge: bytes) -> bytes:
    """The answer to a VNC authentication challenge: DES of the challenge with the password
    (8 bytes, zero-padded) as key, each key byte's bits reversed (the protocol's quirk)."""
    from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
    from cryptography.hazmat.primitives.ciphers import Cipher, modes

    key = bytes(int(f"{b:08b}"[::-1], 2) for b in password.encode()[:8].ljust(8, b"\0"))
    encryptor = Cipher(TripleDES(key * 3), modes.ECB()).encryptor()  # 3 x the key: DES
    return encryptor.update(challenge) + encryptor.finalize()


async def rfb_login(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pw: str) -> None:
    """The client side of the RFB 3.8 handshake up to (not including) ClientInit."""
    version = await reader.readexactly(12)
    if not version.startswith(b"RFB 003."):
        raise RfbError("the VNC server did not speak RFB")
    writer.write(RFB_VERSION)
    count = (await reader.readexactly(1))[0]
    if count == 0:
        size = struct.unpack(">I", await reader.readexactly(4))[0]
        reason = (await reader.readexactly(size)).decode("utf-8", "replace")
        raise RfbError(f"the VNC server refused the connection: {reason}")
    types = await reader.readexactly(count)
    if SEC_VNC not in types:
        raise RfbError("the VNC server does not offer password authentication")
    writer.write(bytes([SEC_VNC]))
    challenge = await reader.readexactly(16)
    writer.write(vnc_response(pw, challenge))
    await writer.drain()
    result = struct.unpack(">I", await reader.readexactly(4))[0]
    if result != 0:
        raise RfbError("the VNC server refused the password")
