"""What counts as a person's input on the relay (the takeover's idle clock). The relay's
VNC login itself is tested against x11vnc in tests/test_takeover_api.py."""

from __future__ import annotations

import struct

from jarvis.api.vnc_relay import InputWatch

UPDATE = struct.pack(">BBHHHH", 3, 1, 0, 0, 1920, 1080)
POINTER = struct.pack(">BBHH", 5, 1, 10, 20)
KEY = struct.pack(">BBxxI", 4, 1, 0x61)
ENCODINGS = struct.pack(">BxHiii", 2, 3, 0, 7, -223)


def test_update_requests_are_not_input_keys_and_pointer_events_are() -> None:
    watch = InputWatch()
    assert watch.feed(b"\x01") is False  # ClientInit
    assert watch.feed(ENCODINGS + UPDATE + UPDATE) is False
    assert watch.feed(UPDATE + POINTER) is True
    assert watch.feed(KEY[:3]) is False and watch.feed(KEY[3:]) is True  # split frames
    assert watch.feed(ENCODINGS[:2]) is False and watch.feed(ENCODINGS[2:] + UPDATE) is False
    cut = struct.pack(">BxxxI", 6, 5) + b"hello"
    assert watch.feed(cut + UPDATE) is False
    assert not watch.lost


def test_an_unknown_message_makes_everything_count() -> None:
    watch = InputWatch(skip=0)
    assert watch.feed(b"\x99\x00\x00") is True and watch.lost
    assert watch.feed(UPDATE) is True
