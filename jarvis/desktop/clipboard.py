"""The X11 CLIPBOARD selection: paste text through it, read it, restore it.

- :class:`ClipboardPaster` owns the CLIPBOARD (or PRIMARY) selection itself
  (python-xlib), presses the paste key and serves the text; it knows when the focused
  client has fetched it because of the key. :class:`PasteRoute` names the selection
  and key an application pastes with (terminals differ). The previous contents are
  read and restored with ``xclip`` (run with stdout and stderr on DEVNULL: its
  background process must not hold our pipes).
- :func:`read_clipboard` and :func:`write_clipboard` read and set it with xclip.
"""

from __future__ import annotations

import logging
import select
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jarvis.desktop.x11 import X11Error, XDisplay, close_display, have

log = logging.getLogger(__name__)

CLIPBOARD_TEXT_TARGETS = ("UTF8_STRING", "text/plain;charset=utf-8", "STRING", "TEXT")
_META_TARGETS = {"TARGETS", "TIMESTAMP", "MULTIPLE", "SAVE_TARGETS", "DELETE"}
_CHUNK_BYTES = 60_000  # one ChangeProperty request, well below the X request size limit


@dataclass(frozen=True)
class ClipboardContent:
    """What the clipboard held: its data in one target (the text one when offered)."""

    target: str
    data: bytes


def _xclip_out(selection: str, target: str, timeout: float, where: XDisplay | None) -> bytes | None:
    try:
        done = subprocess.run(
            ["xclip", "-selection", selection.lower(), "-o", "-t", target],
            env=where.env() if where is not None else None,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        log.warning("xclip -o -t %s timed out: the %s owner does not answer", target, selection)
        return None
    return done.stdout if done.returncode == 0 else None


def read_clipboard(
    timeout: float = 2.0, selection: str = "CLIPBOARD", where: XDisplay | None = None
) -> ClipboardContent | None:
    """The current contents of ``selection`` (on ``where``, default this process's
    display), or None when it is empty or unreadable."""
    if not have("xclip"):
        raise X11Error("xclip is not installed (apt-get install xclip)")
    listing = _xclip_out(selection, "TARGETS", timeout, where)
    if listing is None:
        return None
    targets = [t for t in listing.decode(errors="replace").split() if t not in _META_TARGETS]
    if not targets:
        return None
    preferred = [t for t in CLIPBOARD_TEXT_TARGETS if t in targets] or targets
    data = _xclip_out(selection, preferred[0], timeout, where)
    return None if data is None else ClipboardContent(preferred[0], data)


def write_clipboard(
    content: ClipboardContent,
    timeout: float = 5.0,
    selection: str = "CLIPBOARD",
    where: XDisplay | None = None,
) -> None:
    """Hand ``content`` to a background xclip that serves it as the ``selection`` owner."""
    try:
        subprocess.run(
            ["xclip", "-selection", selection.lower(), "-t", content.target, "-i"],
            env=where.env() if where is not None else None,
            input=content.data,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            check=True,
            start_new_session=True,
        )
    except (subprocess.SubprocessError, FileNotFoundError) as exc:
        raise X11Error(f"xclip could not set the clipboard: {exc}") from exc


def utf8_chunks(text: str, limit: int = _CHUNK_BYTES) -> list[str]:
    """Split ``text`` into pieces whose UTF-8 form is at most ``limit`` bytes."""
    chunks: list[str] = []
    start, size = 0, 0
    for i, char in enumerate(text):
        n = len(char.encode("utf-8", "surrogatepass"))
        if size + n > limit and i > start:
            chunks.append(text[start:i])
            start, size = i, 0
        size += n
    if start < len(text) or not chunks:
        chunks.append(text[start:])
    return chunks


@dataclass(frozen=True)
class PasteRoute:
    """How an application pastes: which selection it reads and which key makes it."""

    selection: str  # "CLIPBOARD" or "PRIMARY"
    key: str  # a chord for Input.hotkey

    @staticmethod
    def for_class(wm_class: tuple[str, str]) -> PasteRoute:
        """The paste key of the application with this WM_CLASS (instance, class)."""
        names = {name.lower() for name in wm_class if name}
        if names & _PRIMARY_SHIFT_INSERT:
            return PasteRoute("PRIMARY", "shift+insert")
        if names & _CTRL_SHIFT_V or any(n.endswith("-terminal") for n in names):
            return PasteRoute("CLIPBOARD", "ctrl+shift+v")
        return PasteRoute("CLIPBOARD", "ctrl+v")


# xterm and rxvt paste PRIMARY on shift+Insert (ctrl+v is a literal-next in a terminal);
# VTE and other terminals paste CLIPBOARD on ctrl+shift+v.
_PRIMARY_SHIFT_INSERT = {"xterm", "uxterm", "urxvt", "rxvt", "urxvt-unicode"}
_CTRL_SHIFT_V = {
    "xfce4-terminal", "gnome-terminal", "gnome-terminal-server", "mate-terminal", "konsole",
    "tilix", "terminator", "lxterminal", "qterminal", "sakura", "terminology", "alacritty",
    "kitty", "wezterm", "foot", "st-256color", "guake", "tilda", "x-terminal-emulator",
}  # fmt: skip


class ClipboardPaster:
    """Pastes text through a selection (CLIPBOARD or PRIMARY), then restores what it held.

    Use as a context manager: entering reads the selection's current contents;
    ``paste(text, press)`` takes ownership with our own window, answers the reads
    that the owner change itself causes (Chromium reads the clipboard on its own),
    notes the server time, calls ``press`` (which sends the paste key) and serves the
    focused client until it has fetched the text in a text target *after* that time
    (a request stamped earlier, or one that came before the key, is no proof). It
    then keeps serving until the client has been quiet for a moment (Chromium reads
    the text more than once and drops a paste whose owner vanished while it read),
    and leaving restores the previous contents with xclip (or leaves the selection
    empty if it was). Text longer than one X request is pasted in chunks.
    """

    def __init__(
        self, timeout: float = 3.0, selection: str = "CLIPBOARD", *, where: XDisplay
    ) -> None:
        self.timeout = timeout
        self.selection = selection
        self.where = where
        self._previous: ClipboardContent | None = None

    def __enter__(self) -> ClipboardPaster:
        self._previous = read_clipboard(selection=self.selection, where=self.where)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            write_clipboard(self._previous, selection=self.selection, where=self.where)
            _wait_for_owner(self.where, self.selection)

    def paste(self, text: str, press: Callable[[], None]) -> None:
        for chunk in utf8_chunks(text):
            data = chunk.encode("utf-8", "surrogatepass")
            _PasteSession(self.where, self.selection, data).run(press, self.timeout)


class _PasteSession:
    """One chunk: own the selection, press, serve until fetched after the press."""

    def __init__(self, where: XDisplay, selection: str, data: bytes) -> None:
        self.where = where
        self.selection_name = selection
        self.data = data
        self.held: list[Any] = []  # events read while waiting for a PropertyNotify

    def run(self, press: Callable[[], None], timeout: float) -> None:
        from Xlib import X, Xatom

        display = self.where.open()
        self.display = display
        try:
            atom = display.intern_atom
            self.selection = atom(self.selection_name)
            self.targets_atom = atom("TARGETS")
            self.text_atoms = {atom(name): name for name in CLIPBOARD_TEXT_TARGETS}
            self.window = display.screen().root.create_window(
                0, 0, 1, 1, 0, X.CopyFromParent, event_mask=X.PropertyChangeMask
            )
            stamp = self._server_time(Xatom.WM_NAME)
            self.window.set_selection_owner(self.selection, stamp)
            if display.get_selection_owner(self.selection) != self.window:
                raise X11Error(f"could not take ownership of the {self.selection_name} selection")
            self._serve(quiet=_OWNER_CHANGE_QUIET_S, limit=_OWNER_CHANGE_MAX_S)
            before_key = self._server_time(Xatom.WM_ICON_NAME)
            press()
            if not self._serve(until_fetched_after=before_key, limit=timeout):
                raise PasteNotFetched(timeout)
            self._serve(quiet=_AFTER_QUIET_S, limit=_AFTER_MAX_S)
        finally:
            close_display(display)  # destroys the window; the selection owner reverts to None

    def _server_time(self, prop: int) -> int:
        """A server timestamp (ICCCM: never CurrentTime for selections)."""
        from Xlib import X, Xatom

        self.window.change_property(prop, Xatom.STRING, 8, b"jarvis")
        self.display.flush()
        while True:
            event = self.display.next_event()
            if event.type == X.PropertyNotify and event.atom == prop:
                return int(event.time)
            self.held.append(event)

    def _next_event(self, deadline: float) -> Any | None:
        if self.held:
            return self.held.pop(0)
        while not self.display.pending_events():
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            select.select([self.display.fileno()], [], [], left)
        return self.display.next_event()

    def _serve(
        self, quiet: float | None = None, limit: float = 3.0, until_fetched_after: int | None = None
    ) -> bool:
        """Answer requests. With ``until_fetched_after``: until a text target was fetched
        by a request stamped at or after that server time (or unstamped: CurrentTime,
        which Chromium uses) - True then, False at ``limit``. Otherwise until no request
        came for ``quiet`` seconds or ``limit`` passed."""
        from Xlib import X

        end = time.monotonic() + limit
        while True:
            deadline = end if quiet is None else min(end, time.monotonic() + quiet)
            ev = self._next_event(deadline)
            if ev is None:
                return False
            if ev.type == X.SelectionClear:
                raise X11Error("another client took the selection during the paste")
            if ev.type != X.SelectionRequest:
                continue
            served_text = self._answer(ev)
            if until_fetched_after is None or not served_text:
                continue
            if ev.time == X.CurrentTime or _time_after(ev.time, until_fetched_after):
                return True
            log.debug("a fetch at %d predates the paste key (%d)", ev.time, until_fetched_after)

    def _answer(self, ev: Any) -> bool:
        from Xlib import X, Xatom
        from Xlib.protocol import event as xevent

        prop = ev.property or ev.target
        served_text = False
        if ev.target == self.targets_atom:
            offer = [self.targets_atom, *self.text_atoms]
            ev.requestor.change_property(prop, Xatom.ATOM, 32, offer)
        elif ev.target in self.text_atoms:
            ev.requestor.change_property(prop, ev.target, 8, self.data)
            served_text = True
        else:
            prop = X.NONE
        notify = xevent.SelectionNotify(
            time=ev.time,
            requestor=ev.requestor,
            selection=ev.selection,
            target=ev.target,
            property=prop,
        )
        ev.requestor.send_event(notify)
        self.display.sync()
        return served_text


_OWNER_CHANGE_QUIET_S = 0.04  # reads caused by the owner change come at once
_OWNER_CHANGE_MAX_S = 0.3
_AFTER_QUIET_S = 0.15  # a client reading the text again does so within this
_AFTER_MAX_S = 1.5


class PasteNotFetched(X11Error):
    """The focused client did not fetch the text after the paste key."""

    def __init__(self, timeout: float) -> None:
        super().__init__(f"the focused window did not fetch the pasted text within {timeout:.1f} s")
        self.timeout = timeout


def _time_after(stamp: int, reference: int) -> bool:
    """X server times are 32-bit milliseconds that wrap around."""
    return ((stamp - reference) & 0xFFFFFFFF) < 0x80000000


def _wait_for_owner(where: XDisplay, selection: str = "CLIPBOARD", timeout: float = 2.0) -> None:
    """Wait until some client owns ``selection`` (xclip takes it in its background process)."""
    display = where.open()
    try:
        atom = display.intern_atom(selection)
        deadline = time.monotonic() + timeout
        while display.get_selection_owner(atom) == 0:
            if time.monotonic() > deadline:
                raise X11Error(f"xclip did not take the {selection} selection back within 2 s")
            time.sleep(0.005)
    finally:
        display.close()
