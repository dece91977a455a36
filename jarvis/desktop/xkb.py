"""The XKB keyboard group on X11: which group is active, and locking another.

python-xlib has no XKB module; the three requests needed here are defined with its
protocol helpers: ``UseExtension`` (the server refuses other XKB requests from a
connection that has not sent it), ``GetState`` and ``LatchLockState``, all on the core
keyboard (``XkbUseCoreKbd``). A two-group layout such as ``us,ru`` with the Russian
group locked translates every key with group 2: a key pressed through XTEST reaches
the application with the group in force, so a press that wants a keysym of group 1
locks group 1 around itself (what ``xdotool`` does for each key it types) and puts the
user's group back.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from Xlib.protocol import rq

from jarvis.desktop.x11 import X11Error

_EXT = "XKEYBOARD"
_CORE_KBD = 0x100  # XkbUseCoreKbd
_USED = "_jarvis_xkb_used"


class _UseExtension(rq.ReplyRequest):
    _request = rq.Struct(
        rq.Card8("opcode"),
        rq.Opcode(0),
        rq.RequestLength(),
        rq.Card16("major"),
        rq.Card16("minor"),
    )
    _reply = rq.Struct(
        rq.ReplyCode(),
        rq.Bool("supported"),
        rq.Card16("sequence_number"),
        rq.ReplyLength(),
        rq.Card16("server_major"),
        rq.Card16("server_minor"),
        rq.Pad(20),
    )


class _GetState(rq.ReplyRequest):
    _request = rq.Struct(
        rq.Card8("opcode"),
        rq.Opcode(4),
        rq.RequestLength(),
        rq.Card16("device"),
        rq.Pad(2),
    )
    _reply = rq.Struct(
        rq.ReplyCode(),
        rq.Card8("device_id"),
        rq.Card16("sequence_number"),
        rq.ReplyLength(),
        rq.Card8("mods"),
        rq.Card8("base_mods"),
        rq.Card8("latched_mods"),
        rq.Card8("locked_mods"),
        rq.Card8("group"),
        rq.Card8("locked_group"),
        rq.Int16("base_group"),
        rq.Int16("latched_group"),
        rq.Pad(14),
    )


class _LatchLockState(rq.Request):
    _request = rq.Struct(
        rq.Card8("opcode"),
        rq.Opcode(5),
        rq.RequestLength(),
        rq.Card16("device"),
        rq.Card8("affect_mod_locks"),
        rq.Card8("mod_locks"),
        rq.Bool("lock_group"),
        rq.Card8("group_lock"),
        rq.Card8("affect_mod_latches"),
        rq.Card8("mod_latches"),
        rq.Pad(1),
        rq.Bool("latch_group"),
        rq.Int16("group_latch"),
    )


def _opcode(display: Any) -> int:
    """The XKB major opcode on ``display`` (an open python-xlib connection), after
    ``UseExtension`` once per connection; X11Error where the server has no XKB."""
    cached = getattr(display, _USED, None)
    if cached is not None:
        return int(cached)
    info = display.query_extension(_EXT)
    if info is None or not info.present:
        raise X11Error("the X server has no XKEYBOARD extension")
    major = int(info.major_opcode)
    reply = _UseExtension(display=display.display, opcode=major, major=1, minor=0)
    if not reply.supported:
        raise X11Error("the X server refused XKB 1.0")
    setattr(display, _USED, major)
    return major


def active_group(display: Any) -> int:
    """The keyboard group in force now (0 = group 1), with its latches and locks."""
    reply = _GetState(display=display.display, opcode=_opcode(display), device=_CORE_KBD)
    return int(reply.group)


def lock_group(display: Any, group: int) -> None:
    """Lock keyboard group ``group`` (0 = group 1); sent, not waited for."""
    _LatchLockState(
        display=display.display,
        opcode=_opcode(display),
        device=_CORE_KBD,
        affect_mod_locks=0,
        mod_locks=0,
        lock_group=True,
        group_lock=group,
        affect_mod_latches=0,
        mod_latches=0,
        latch_group=False,
        group_latch=0,
    )


@contextmanager
def group_locked(display: Any, group: int) -> Iterator[None]:
    """Group ``group`` locked for the block (the keys pressed in it), then the group
    that was in force before. Requests on one connection are handled in order, so key
    events sent in the block are translated with ``group``."""
    before = active_group(display)
    if before == group:
        yield
        return
    lock_group(display, group)
    try:
        yield
    finally:
        lock_group(display, before)
        display.sync()
