"""A wlroots desktop (sway and the like): the second implementation of the Desktop.

:class:`WlrootsDesktop` holds what :class:`~jarvis.desktop.desktop.Desktop` holds, made
of the wlroots parts: the screen through screencopy (:class:`.screen.WlScreen`), the
input through a virtual pointer and wtype (:class:`.input.WlInput`), settle on that
screen, windows through sway's IPC (:class:`.windows.WlWindows`) and the clipboard
through wl-clipboard. ``where`` is a :class:`.session.WaylandDisplay`. With the
``observation`` setting, the accessibility tree of the focused window (``elements``),
read through the session's bus, its windows found through sway and its coordinates
placed by the window's origin where the toolkit reports window-relative ones (see
:mod:`jarvis.desktop.a11y.view`). Its live view and takeover are wayvnc's
(:mod:`jarvis.desktop.wayvnc`, chosen by :func:`jarvis.desktop.backend.vnc_server`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from jarvis.desktop.a11y.reader import A11yReader
from jarvis.desktop.a11y.view import ElementView
from jarvis.desktop.clipboard import ClipboardContent
from jarvis.desktop.settle import Settler
from jarvis.desktop.wlroots import clipboard
from jarvis.desktop.wlroots.input import WlInput
from jarvis.desktop.wlroots.screen import WlScreen
from jarvis.desktop.wlroots.session import Output, WaylandDisplay
from jarvis.desktop.wlroots.windows import WlWindows
from jarvis.geometry import Size

if TYPE_CHECKING:
    from jarvis.config import Settings


class WlrootsDesktop:
    """Screen, input, settle, windows and clipboard on one wlroots compositor."""

    backend = "wlroots"

    def __init__(
        self,
        where: WaylandDisplay,
        screen: WlScreen,
        input: WlInput,
        settler: Settler,
        stop: threading.Event,
        windows: WlWindows | None = None,
        elements: ElementView | None = None,
    ) -> None:
        self.where = where
        self.home = where
        self.screen = screen
        self.input = input
        self.settler = settler
        self.stop = stop
        self.hold = input.hold
        self.windows = windows or WlWindows(where)
        self.elements = elements
        self.indicator: None = None
        """No on-screen sign on Wayland yet (it needs the compositor's layer-shell)."""
        self._followers: list[Callable[[WaylandDisplay], None]] = []

    @classmethod
    def open(
        cls,
        settings: Settings,
        where: WaylandDisplay,
        stop: threading.Event | None = None,
        sizer: Callable[[Size], tuple[Size, Size]] | None = None,
    ) -> WlrootsDesktop:
        """The desktop on ``where``, set up from ``settings`` (as ``Desktop.open``)."""
        stop = stop or threading.Event()
        hold = threading.Event()
        screen = WlScreen.for_settings(settings, where, sizer)
        try:
            input_ = WlInput(where, stop=stop, hold=hold)
        except BaseException:
            screen.close()
            raise
        windows = WlWindows(where)
        elements = None
        if settings.observation != "screenshot":
            bus = settings.a11y_session_bus or where.session_bus
            reader = A11yReader(bus, timeout=settings.tree_timeout_ms / 1000)
            kind, cap = settings.observation, settings.tree_max_chars
            elements = ElementView(reader, windows, screen, kind, cap, window_relative=True)
        desktop = cls(where, screen, input_, Settler(screen, settings), stop, windows, elements)
        if elements is not None:
            desktop.on_move(lambda now: elements.reader.switch(now.session_bus))
        return desktop

    @property
    def name(self) -> str:
        return self.where.name

    @property
    def outputs(self) -> list[Output]:
        """Every output: its name, logical box and scale, as the compositor reported them."""
        return self.screen.outputs

    def on_move(self, follow: Callable[[WaylandDisplay], None]) -> None:
        self._followers.append(follow)

    def move_to(self, where: WaylandDisplay) -> None:
        """Move to another compositor (a task's private sway, and back); between tasks."""
        self.screen.reopen(where)
        self.input.reopen(where)
        self.windows.move_to(where)
        self.where = where
        for follow in self._followers:
            follow(where)

    @contextmanager
    def acting(self) -> Iterator[None]:
        """Around a task's run, as on X11; no sign is shown on Wayland yet."""
        yield

    def read_clipboard(self, selection: str = "CLIPBOARD") -> ClipboardContent | None:
        return clipboard.read_clipboard(self.where, selection)

    def write_clipboard(self, content: ClipboardContent, selection: str = "CLIPBOARD") -> None:
        clipboard.write_clipboard(self.where, content, selection)

    def close(self) -> None:
        if self.elements is not None:
            self.elements.reader.close()
        self.windows.close()
        self.input.close()
        self.screen.close()

    def __enter__(self) -> WlrootsDesktop:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
