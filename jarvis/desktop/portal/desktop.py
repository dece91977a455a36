"""A portal desktop (GNOME 45+, KDE Plasma 6): the third implementation of the Desktop.

:class:`PortalDesktop` holds what :class:`~jarvis.desktop.desktop.Desktop` holds, made
of one RemoteDesktop + ScreenCast portal session (:mod:`.session`): the screen from the
session's streams kept warm (:class:`.screen.PortalScreen` over
:class:`.frames.FrameSource`), input through the session's ``Notify*`` methods
(:class:`.input.PortalInput`) and settle on that screen. Opening it may show the
consent dialog on the person's desk; ``notify`` is told (and the log says) while it is
needed. Not here: windows (the portals offer no window list: lookups say unknown and
``activate`` fails), the accessibility tree, the clipboard (the RemoteDesktop clipboard
needs version 2's clipboard portal, not built), the live view.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from jarvis.desktop.clipboard import ClipboardContent
from jarvis.desktop.errors import InputError
from jarvis.desktop.portal.bus import PortalBus
from jarvis.desktop.portal.display import PortalDisplay
from jarvis.desktop.portal.frames import FrameSource, pipewire_source
from jarvis.desktop.portal.input import PortalInput
from jarvis.desktop.portal.screen import PortalScreen, stream_scale
from jarvis.desktop.portal.session import PortalSession
from jarvis.desktop.portal.token import RestoreToken
from jarvis.desktop.settle import Settler
from jarvis.desktop.windows import UNKNOWN, WindowInfo
from jarvis.desktop.wlroots.session import Output
from jarvis.geometry import Size

if TYPE_CHECKING:
    from jarvis.config import Settings

log = logging.getLogger(__name__)
NO_WINDOWS = "the desktop portal offers no window list: windows cannot be activated here"
NO_CLIPBOARD = "the clipboard is not built for the portal backend yet"


class PortalWindows:
    """Window lookups on a portal desktop: none are offered, so each says unknown."""

    def __init__(self, where: PortalDisplay) -> None:
        self.where = where

    def move_to(self, where: object) -> None:
        """A portal desktop never moves."""

    def list(self) -> list[WindowInfo]:
        return []

    def at(self, x: int, y: int) -> WindowInfo:
        return UNKNOWN

    def focused(self) -> WindowInfo:
        return UNKNOWN

    def activate(self, window_id: int) -> None:
        raise InputError(NO_WINDOWS)

    def close(self) -> None:
        """Nothing held open."""


def open_streams(session: PortalSession) -> dict[int, FrameSource]:
    """A warm pipeline per stream, each on its own PipeWire connection."""
    sources: dict[int, FrameSource] = {}
    try:
        for stream in session.streams:
            fd = session.pipewire_fd()
            source = pipewire_source(fd, stream.node)
            sources[stream.node] = FrameSource(source, pass_fds=(fd,), name=stream.name)
    except BaseException:
        for opened in sources.values():
            opened.close()
        raise
    return sources


class PortalDesktop:
    """Screen, input and settle through one portal session."""

    backend = "portal"

    def __init__(
        self,
        where: PortalDisplay,
        session: PortalSession,
        sources: dict[int, FrameSource],
        screen: PortalScreen,
        settler: Settler,
        stop: threading.Event,
    ) -> None:
        self.where = where
        self.home = where
        self.session = session
        self.sources = sources
        self.screen = screen
        self.stop = stop
        self.hold = threading.Event()
        self.input = PortalInput(session, stop=stop, hold=self.hold)
        self.settler = settler
        self.windows = PortalWindows(where)
        self.elements: None = None
        self.indicator: None = None
        self._followers: list[Callable[[PortalDisplay], None]] = []

    @classmethod
    def open(
        cls,
        settings: Settings,
        where: PortalDisplay,
        stop: threading.Event | None = None,
        sizer: Callable[[Size], tuple[Size, Size]] | None = None,
        notify: Callable[[str], None] | None = None,
    ) -> PortalDesktop:
        """Start the portal session on ``where`` (consent asked unless the stored token
        spares it) and keep its streams warm."""
        stop = stop or threading.Event()
        if settings.observation != "screenshot":
            log.warning(
                "the accessibility tree is not read on the portal backend: screenshots only"
            )
        bus = PortalBus(where.session_bus)
        try:
            tokens = RestoreToken(settings.data_dir)
            desk = where.desk or "GNOME or KDE"
            session = PortalSession(bus, tokens, notify, desk=desk, stop=stop).start()
        except BaseException:
            bus.close()
            raise
        sources: dict[int, FrameSource] = {}
        try:
            sources = open_streams(session)
            for source in sources.values():
                source.frame()  # a desktop that cannot see is not handed out
            screen = PortalScreen.for_settings(settings, session.streams, sources, sizer)
        except BaseException:
            for source in sources.values():
                source.close()
            session.close()
            bus.close()
            raise
        return cls(where, session, sources, screen, Settler(screen, settings), stop)

    @property
    def name(self) -> str:
        return self.where.name

    @property
    def outputs(self) -> list[Output]:
        """Every stream as an output: its name, logical box and scale (read from its
        newest frame)."""
        return [
            Output(s.name, s.box, stream_scale(s, self.sources[s.node].frame()))
            for s in self.session.streams
        ]

    def on_move(self, follow: Callable[[PortalDisplay], None]) -> None:
        self._followers.append(follow)

    def move_to(self, where: object) -> None:
        """A portal desktop is the person's own session; it never moves elsewhere."""
        if where != self.where:
            raise InputError("a portal desktop cannot move to another display")

    @contextmanager
    def acting(self) -> Iterator[None]:
        """Around a task's run; no sign is shown on Wayland yet."""
        yield

    def read_clipboard(self, selection: str = "CLIPBOARD") -> ClipboardContent | None:
        raise InputError(NO_CLIPBOARD)

    def write_clipboard(self, content: ClipboardContent, selection: str = "CLIPBOARD") -> None:
        raise InputError(NO_CLIPBOARD)

    def close(self) -> None:
        for source in self.sources.values():
            source.close()
        self.screen.close()
        self.session.close()
        self.session.bus.close()

    def __enter__(self) -> PortalDesktop:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
