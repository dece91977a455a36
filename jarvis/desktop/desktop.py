"""A desktop is an object you hold: one X display and everything that works on it.

:class:`Desktop` is made for one display (:class:`~jarvis.desktop.x11.XDisplay`: its
name and cookie file) and holds what the agent uses there: the screen (capture, its own
mss connection), input (mouse through its own XTEST connection, keys and text through
xdotool run on that display, or XTEST without xdotool), settle, window lookups (its own
python-xlib connection), the clipboard (xclip run on that display), the stop event that
interrupts its input and, with the ``observation`` setting, the accessibility tree of its
focused window (``elements``, read through the display's session bus). The kill switch is
grabbed on the person's display, which a task's desktop may have left
(:func:`jarvis.safety.killswitch.kill_switch`). Nothing here reads or changes the
process's ``DISPLAY``: the person's display, ``--sandbox``'s and a channel's private
display are just other Desktops, and two of them can be driven from one process at once.

:meth:`Desktop.move_to` moves one onto another display between tasks (a channel's
private display, and back); what follows it (the live screen, a recorder's crops) reads
:attr:`Desktop.where` or is told through :meth:`Desktop.on_move`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from jarvis.desktop.a11y.reader import A11yReader
from jarvis.desktop.a11y.view import ElementView
from jarvis.desktop.clipboard import ClipboardContent, read_clipboard, write_clipboard
from jarvis.desktop.indicator import Indicator, indicator_wanted
from jarvis.desktop.input import Input
from jarvis.desktop.monitors import desktop_monitors
from jarvis.desktop.screen import Screen
from jarvis.desktop.settle import Settler
from jarvis.desktop.windows import Windows
from jarvis.desktop.x11 import XDisplay
from jarvis.geometry import Size

if TYPE_CHECKING:
    from jarvis.config import Settings


class Desktop:
    """Screen, input and settle on one display; close it when done."""

    backend = "x11"
    """Which implementation this is (``desktop.backend``): the wlroots one is
    :class:`jarvis.desktop.wlroots.desktop.WlrootsDesktop`."""

    def __init__(
        self,
        where: XDisplay,
        screen: Screen,
        input: Input,
        settler: Settler,
        stop: threading.Event,
        windows: Windows | None = None,
        elements: ElementView | None = None,
        indicator: Indicator | None = None,
    ) -> None:
        self.where = where
        self.screen = screen
        self.input = input
        self.settler = settler
        self.stop = stop
        self.hold = input.hold
        """Set while a person holds the screen (a takeover): the input refuses every action;
        the takeover's :class:`~jarvis.safety.takeover.ScreenHold` is made with it."""
        self.windows = windows or Windows(where)
        self.home = where
        """The display it was opened on: where it comes back to after a private one."""
        self._followers: list[Callable[[XDisplay], None]] = []
        self.elements = elements
        """The accessibility tree beside the screenshot (the ``observation`` setting)."""
        self.indicator = indicator
        """The on-screen sign while a task runs (``desktop.indicator``), or None."""

    @classmethod
    def open(
        cls,
        settings: Settings,
        where: XDisplay,
        stop: threading.Event | None = None,
        sizer: Callable[[Size], tuple[Size, Size]] | None = None,
        session_bus: str | None = None,
    ) -> Desktop:
        """The desktop on ``where``, set up from ``settings``; ``stop``, once set,
        interrupts its input and settle; ``sizer`` is the model profile's sizing rule for
        the screen. ``session_bus`` is the D-Bus session of ``where`` whose accessibility
        bus the tree is read from (default: the ``a11y_session_bus`` setting, else
        ``where``'s own)."""
        if session_bus is None:
            session_bus = settings.a11y_session_bus or where.session_bus
        stop = stop or threading.Event()
        hold = threading.Event()  # a person's takeover: the input refuses while it is set
        indicator = None
        if where.name and settings.desktop.indicator != "off":
            monitors = desktop_monitors(where)
            if indicator_wanted(settings.desktop.indicator, where, monitors):
                indicator = Indicator(where, monitors[1:])
        screen = Screen.from_settings(settings, sizer, display=where, veil=indicator)
        try:
            input_ = Input.from_settings(settings, stop=stop, hold=hold, display=where)
        except BaseException:
            screen.close()
            raise
        windows = Windows(where)
        elements = None
        if settings.observation != "screenshot":
            reader = A11yReader(session_bus, timeout=settings.tree_timeout_ms / 1000)
            elements = ElementView(
                reader, windows, screen, settings.observation, settings.tree_max_chars
            )
        settler = Settler(screen, settings)
        desktop = cls(where, screen, input_, settler, stop, windows, elements, indicator)
        if elements is not None:
            desktop.on_move(lambda now: elements.reader.switch(now.session_bus))
        return desktop

    @property
    def name(self) -> str:
        return self.where.name

    def on_move(self, follow: Callable[[XDisplay], None]) -> None:
        """Call ``follow`` with the new display each time this desktop moves."""
        self._followers.append(follow)

    def move_to(self, where: XDisplay) -> None:
        """Move the screen, input and window lookups to ``where`` (a task's private display,
        and back), then tell the followers; between tasks only."""
        self.screen.reopen(where)
        self.input.reopen(where)
        self.windows.move_to(where)
        self.where = where
        for follow in self._followers:
            follow(where)

    @contextmanager
    def acting(self) -> Iterator[None]:
        """Around a task's run: the on-screen sign shows that Jarvis is acting, and goes
        when the run ends or the stop event is set (see :mod:`jarvis.desktop.indicator`);
        nothing where the sign is off."""
        if self.indicator is None:
            yield
            return
        with self.indicator.acting(self.stop):
            yield

    def read_clipboard(self, selection: str = "CLIPBOARD") -> ClipboardContent | None:
        return read_clipboard(selection=selection, where=self.where)

    def write_clipboard(self, content: ClipboardContent, selection: str = "CLIPBOARD") -> None:
        write_clipboard(content, selection=selection, where=self.where)

    def close(self) -> None:
        if self.indicator is not None:
            self.indicator.close()
        if self.elements is not None:
            self.elements.reader.close()
        self.windows.close()
        self.input.close()
        self.screen.close()

    def __enter__(self) -> Desktop:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
