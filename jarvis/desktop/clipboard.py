"""The X11 CLIPBOARD selection: paste text through it, read it, restore it.

- :class:`ClipboardPaster` owns the CLIPBOARD selection itself (python-xlib), presses
  the paste key and serves the text; it knows exactly when the focused client has
  fetched it. The previous clipboard is read and restored with ``xclip`` (run with
  stdout and stderr on DEVNULL: its background process must not hold our pipes).
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

from jarvis.desktop.x11 import X11Error, close_display, have

log = logging.getLogger(__name__)

CLIPBOARD_TEXT_TARGETS = ("UTF8_STRING", "text/plain;charset=utf-8", "STRING", "TEXT")
_META_TARGETS = {"TARGETS", "TIMESTAMP", "MULTIPLE", "SAVE_TARGETS", "DELETE"}
_CHUNK_BYTES = 60_000  # one ChangeProperty request, well below the X request size limit


@dataclass(frozen=True)
class ClipboardContent:
    """What the clipboard held: its data in one target (the text one when offered)."""

    target: str
    data: bytes


def _xclip_out(target: str, timeout: float) -> bytes | None:
    try:
        done = subprocess.run(
            ["xclip", "-selection", "clipboard", "-o", "-t", target],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        log.warning("xclip -o -t %s timed out: the clipboard owner does not answer", target)
        return None
    return done.stdout if done.returncode == 0 else None


def read_clipboard(timeout: float = 2.0) -> ClipboardContent | None:
    """The current CLIPBOARD contents, or None when it is empty or unreadable."""
    if not have("xclip"):
        raise X11Error("xclip is not installed (apt-get install xclip)")
    listing = _xclip_out("TARGETS", timeout)
    if listing is None:
        return None
    targets = [t for t in listing.decode(errors="replace").split() if t not in _META_TARGETS]
    if not targets:
        return None
    preferred = [t for t in CLIPBOARD_TEXT_TARGETS if t in targets] or targets
    data = _xclip_out(preferred[0], timeout)
    return None if data is None else ClipboardContent(preferred[0], data)


def write_clipboard(content: ClipboardContent, timeout: float = 5.0) -> None:
    """Hand ``content`` to a background xclip that serves it as the CLIPBOARD owner."""
    try:
        subprocess.run(
            ["xclip", "-selection", "clipboard", "-t", content.target, "-i"],
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


class ClipboardPaster:
    """Pastes text through the CLIPBOARD selection, then restores what it held.

    Use as a context manager: entering reads the current clipboard, ``paste(text,
    press)`` takes ownership of CLIPBOARD with our own window, calls ``press`` (which
    sends the paste key) and serves the focused client's requests until it has
    fetched the text in a text target; leaving restores the previous contents with
    xclip (or leaves the clipboard empty if it was). Text longer than one X request
    is pasted in chunks.
    """

    def __init__(self, timeout: float = 3.0) -> None:
        self.timeout = timeout
        self._previous: ClipboardContent | None = None

    def __enter__(self) -> ClipboardPaster:
        self._previous = read_clipboard()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            write_clipboard(self._previous)
            _wait_for_owner()

    def paste(self, text: str, press: Callable[[], None]) -> None:
        for chunk in utf8_chunks(text):
            self._paste_chunk(chunk.encode("utf-8", "surrogatepass"), press)

    def _paste_chunk(self, data: bytes, press: Callable[[], None]) -> None:
        from Xlib import X, Xatom
        from Xlib.display import Display

        display = Display()
        try:
            atom = display.intern_atom
            clipboard = atom("CLIPBOARD")
            targets_atom = atom("TARGETS")
            text_atoms = {atom(name): name for name in CLIPBOARD_TEXT_TARGETS}
            window = display.screen().root.create_window(
                0, 0, 1, 1, 0, X.CopyFromParent, event_mask=X.PropertyChangeMask
            )
            stamp = self._server_time(display, window, Xatom.WM_NAME)
            window.set_selection_owner(clipboard, stamp)
            if display.get_selection_owner(clipboard) != window:
                raise X11Error("could not take ownership of the CLIPBOARD selection")
            press()
            self._serve_until_fetched(display, data, targets_atom, text_atoms, list(text_atoms))
        finally:
            close_display(display)  # destroys the window; the selection owner reverts to None

    @staticmethod
    def _server_time(display: Any, window: Any, prop: int) -> int:
        """A server timestamp (ICCCM: never CurrentTime for selections)."""
        from Xlib import X, Xatom

        window.change_property(prop, Xatom.STRING, 8, b"jarvis")
        display.flush()
        while True:
            event = display.next_event()
            if event.type == X.PropertyNotify:
                return int(event.time)

    def _serve_until_fetched(
        self, display: Any, data: bytes, targets_atom: int, text_atoms: dict[int, str], offer: list
    ) -> None:
        """Answer selection requests until one asked for the text in a text target."""
        from Xlib import X, Xatom
        from Xlib.protocol import event as xevent

        deadline = time.monotonic() + self.timeout
        while True:
            if not display.pending_events():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise X11Error(
                        "the focused window did not fetch the pasted text within "
                        f"{self.timeout:.1f} s (does it paste on ctrl+v?)"
                    )
                select.select([display.fileno()], [], [], left)
                continue
            ev = display.next_event()
            if ev.type == X.SelectionClear:
                raise X11Error("another client took the clipboard during the paste")
            if ev.type != X.SelectionRequest:
                continue
            prop = ev.property or ev.target
            served_text = False
            if ev.target == targets_atom:
                ev.requestor.change_property(prop, Xatom.ATOM, 32, [targets_atom, *offer])
            elif ev.target in text_atoms:
                ev.requestor.change_property(prop, ev.target, 8, data)
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
            display.sync()
            if served_text:
                return


def _wait_for_owner(timeout: float = 2.0) -> None:
    """Wait until some client owns CLIPBOARD (xclip takes it in its background process)."""
    from Xlib.display import Display

    display = Display()
    try:
        clipboard = display.intern_atom("CLIPBOARD")
        deadline = time.monotonic() + timeout
        while display.get_selection_owner(clipboard) == 0:
            if time.monotonic() > deadline:
                raise X11Error("xclip did not take the clipboard back within 2 s")
            time.sleep(0.005)
    finally:
        display.close()
