"""One RemoteDesktop + ScreenCast portal session: consent, streams and input calls.

:meth:`PortalSession.start` runs the portal's sequence: ``CreateSession``,
``SelectDevices`` (keyboard and pointer, ``persist_mode`` 2 and the stored restore
token), ``SelectSources`` (monitors) and ``Start``, which shows the consent dialog on the
person's desk unless the token lets the portal skip it. ``Start``'s answer names the
granted devices and the streams (a PipeWire node each, with its logical position and
size) and brings a new restore token, which replaces the stored one. A token the portal
will not take (``Start`` answers 2 while one was given) is dropped and consent asked
again, once. A refusal is one line (:class:`~.bus.ConsentRefused`).

Input goes through the session's ``Notify*`` methods; each returns once the portal
answered. ``ConnectToEIS`` (libei) is not used: Debian 12 has no libei.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jarvis.desktop.portal.bus import (
    REMOTE_DESKTOP,
    SCREEN_CAST,
    Answer,
    ConsentRefused,
    PortalBus,
    PortalError,
    variant,
)
from jarvis.desktop.portal.token import RestoreToken

log = logging.getLogger(__name__)

KEYBOARD, POINTER = 1, 2
MONITOR = 1
PERSIST_UNTIL_REVOKED = 2
CONSENT_TIMEOUT_S = 300.0
CONSENT_PATIENCE_S = 3.0  # with a stored token the portal answers at once; else a dialog
CONSENT_NEEDED = (
    "the desktop asks whether Jarvis may control it: answer the remote desktop dialog "
    "on its own screen ({desk})"
)
_REFUSALS = {
    1: "the desktop refused remote control: the consent dialog was cancelled",
    2: "the desktop refused remote control: the portal ended the request",
}


@dataclass(frozen=True)
class Stream:
    """One ScreenCast stream: its PipeWire node and its logical box in the layout."""

    node: int
    position: tuple[int, int]
    size: tuple[int, int]
    name: str = ""

    @property
    def box(self) -> tuple[int, int, int, int]:
        return (*self.position, *self.size)

    def contains(self, x: int, y: int) -> bool:
        left, top, width, height = self.box
        return left <= x < left + width and top <= y < top + height


def parse_streams(raw: Any) -> list[Stream]:
    """``Start``'s ``streams`` (``a(ua{sv})``) as Streams; position (0, 0) when absent."""
    streams = []
    for node, props in raw or []:
        values = {k: v for k, (_sig, v) in props.items()}
        position = tuple(int(v) for v in values.get("position", (0, 0)))
        size = tuple(int(v) for v in values.get("size", (0, 0)))
        name = str(values.get("id", "") or values.get("mapping_id", "") or node)
        streams.append(Stream(int(node), (position[0], position[1]), (size[0], size[1]), name))
    return streams


class PortalSession:
    """A started portal session; :meth:`close` ends it (and its streams)."""

    def __init__(
        self,
        bus: PortalBus,
        tokens: RestoreToken,
        notify: Callable[[str], None] | None = None,
        consent_timeout: float = CONSENT_TIMEOUT_S,
        desk: str = "GNOME or KDE",
        stop: threading.Event | None = None,
    ) -> None:
        """``desk``: the desktop's name as the person knows it (XDG_CURRENT_DESKTOP);
        ``stop`` set ends the wait for consent."""
        self.desk = desk
        self.stop = stop
        self.bus = bus
        self.tokens = tokens
        self.notify = notify
        self.consent_timeout = consent_timeout
        self.handle = ""
        self.streams: list[Stream] = []
        self.devices = 0
        self.asked_consent = False
        """Whether this start went without a restore token the portal took."""

    def start(self) -> PortalSession:
        """Run the sequence; with a rejected token, once more without it. Whatever ends
        it early closes the session."""
        try:
            return self._started()
        except BaseException:
            self._close_handle()
            raise

    def _started(self) -> PortalSession:
        token = self.tokens.load()
        try:
            answer = self._start(token)
        except ConsentRefused as exc:
            if token is None or exc.code != 2:
                raise
            log.warning("the desktop portal would not take the stored restore token; asking again")
            self.tokens.reject()
            answer = self._start(None)
        results = answer.results
        self.devices = int(results.get("devices", 0))
        missing = [
            n for bit, n in ((POINTER, "pointer"), (KEYBOARD, "keyboard")) if not self.devices & bit
        ]
        self.streams = parse_streams(results.get("streams"))
        if missing or not self.streams:
            what = ", ".join(missing) or "no screen"
            self.close()
            raise ConsentRefused(f"the desktop granted remote control without: {what}", 2)
        if results.get("restore_token"):
            self.tokens.save(str(results["restore_token"]))
        return self

    def _start(self, token: str | None) -> Answer:
        self._close_handle()
        created = self._ok(
            self.bus.request(
                REMOTE_DESKTOP,
                "CreateSession",
                "a{sv}",
                ({"session_handle_token": variant(self.bus.token("session"))},),
            )
        )
        self.handle = str(created.results["session_handle"])
        devices = {"types": variant(KEYBOARD | POINTER)}
        devices["persist_mode"] = variant(PERSIST_UNTIL_REVOKED)
        if token is not None:
            devices["restore_token"] = variant(token)
        self._ok(
            self.bus.request(REMOTE_DESKTOP, "SelectDevices", "oa{sv}", (self.handle, devices))
        )
        sources = {"types": variant(MONITOR), "multiple": variant(True)}
        self._ok(self.bus.request(SCREEN_CAST, "SelectSources", "oa{sv}", (self.handle, sources)))
        self.asked_consent = False
        if token is None:  # the dialog will be there: say so before it shows
            self._consent_needed()
        answer = self.bus.request(
            REMOTE_DESKTOP,
            "Start",
            "osa{sv}",
            (self.handle, "", {}),
            timeout=self.consent_timeout,
            waiting=None if token is None else self._consent_needed,
            patience=CONSENT_PATIENCE_S,
            stop=self.stop,
        )
        return self._ok(answer)

    def _consent_needed(self) -> None:
        self.asked_consent = True
        line = CONSENT_NEEDED.format(desk=self.desk)
        log.warning("%s", line)
        if self.notify is not None:
            self.notify(line)

    def _ok(self, answer: Answer) -> Answer:
        if answer.code != 0:
            self._close_handle()
            line = _REFUSALS.get(answer.code, f"the desktop portal answered {answer.code}")
            raise ConsentRefused(line, answer.code)
        return answer

    # -- input

    def _notify(self, method: str, signature: str, *args: Any) -> None:
        if not self.handle:
            raise PortalError("the remote desktop session is closed")
        self.bus.call(REMOTE_DESKTOP, method, "oa{sv}" + signature, self.handle, {}, *args)

    def motion(self, stream: Stream, x: float, y: float) -> None:
        """Put the pointer at (``x``, ``y``), logical pixels inside ``stream``."""
        self._notify("NotifyPointerMotionAbsolute", "udd", stream.node, float(x), float(y))

    def button(self, code: int, pressed: bool) -> None:
        """Press or release the evdev button ``code`` (BTN_LEFT is 0x110)."""
        self._notify("NotifyPointerButton", "iu", code, 1 if pressed else 0)

    def wheel(self, vertical: bool, steps: int) -> None:
        """``steps`` wheel clicks (positive: down or right)."""
        self._notify("NotifyPointerAxisDiscrete", "ui", 0 if vertical else 1, steps)

    def keysym(self, keysym: int, pressed: bool) -> None:
        self._notify("NotifyKeyboardKeysym", "iu", keysym, 1 if pressed else 0)

    def pipewire_fd(self) -> int:
        """A new connection to the PipeWire daemon that carries this session's streams."""
        (fd,) = self.bus.call(SCREEN_CAST, "OpenPipeWireRemote", "oa{sv}", self.handle, {})
        return int(fd.to_raw_fd())

    def _close_handle(self) -> None:
        handle, self.handle = self.handle, ""
        if handle:
            try:
                self.bus.close_session(handle)
            except PortalError as exc:
                log.info("closing portal session %s: %s", handle, exc)

    def close(self) -> None:
        self._close_handle()
