"""The kill switch: a global hotkey, grabbed on the X server, that cancels the running task.

:class:`KillSwitch` opens its own X connection, puts a passive grab on the root window
for the chord (``safety.kill_hotkey``, default ctrl+alt+escape) in every combination
with NumLock and CapsLock, and waits for it in a thread. Because the grab is the X
server's, it fires wherever the focus is, even while the agent types. On a press it
calls ``on_press`` in that thread; :func:`agent_brake` makes that the agent's cancel path:
raise the stop event (input stops before its next piece), end the agent's own xdotool
processes that are typing right now, and cancel the task on its loop, recorded as
stopped by the hotkey. The daemon keeps running.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from jarvis.desktop import x11
from jarvis.desktop.keys import MODIFIERS, UnknownKeyError, parse_chord

if TYPE_CHECKING:
    from jarvis.config import Settings


class Brakeable(Protocol):
    """What a brake stops: a live task's Agent, or a replay's Replayer."""

    stop: threading.Event

    def cancel(self, by: str = ...) -> None: ...


log = logging.getLogger(__name__)

# X modifier masks: Shift, Lock (CapsLock), Control, Mod1 (Alt), Mod2 (NumLock), Mod4 (Super)
_MASKS = {"shift": 1 << 0, "ctrl": 1 << 2, "alt": 1 << 3, "super": 1 << 6}
_LOCK, _NUMLOCK = 1 << 1, 1 << 4
LOCK_VARIANTS = (0, _LOCK, _NUMLOCK, _LOCK | _NUMLOCK)
STOPPED_BY = "hotkey"


class KillSwitchError(RuntimeError):
    """The hotkey could not be grabbed (bad chord, no display, another client holds it)."""


def chord_grab(chord: str) -> tuple[int, str]:
    """``"ctrl+alt+escape"`` -> (the modifier mask, the X keysym name of the one other key).

    Raises KillSwitchError unless the chord is modifiers plus exactly one key.
    """
    try:
        keys = parse_chord(chord)
    except UnknownKeyError as exc:
        raise KillSwitchError(f"kill hotkey {chord!r}: {exc}") from exc
    mods = [k for k in keys if k in MODIFIERS]
    others = [k for k in keys if k not in MODIFIERS]
    if len(others) != 1:
        raise KillSwitchError(f"kill hotkey {chord!r}: give modifiers and exactly one other key")
    mask = 0
    for mod in mods:
        mask |= _MASKS[mod]
    return mask, x11.keysym_name(others[0])


class KillSwitch:
    """Grab ``chord`` on the X display named by ``display`` (default ``$DISPLAY``) and call
    ``on_press`` (in the listener thread) each time it is pressed."""

    def __init__(
        self,
        chord: str,
        on_press: Callable[[], None],
        display: str | None = None,
        xauthority: str | None = None,
    ) -> None:
        self.chord = chord
        self.xauthority = xauthority
        self.mask, self.keysym = chord_grab(chord)
        self.on_press = on_press
        self.display_name = display
        self._display: Any = None
        self._keycode = 0
        self._thread: threading.Thread | None = None
        self._wake_r, self._wake_w = -1, -1
        self.presses = 0

    def start(self) -> KillSwitch:
        from Xlib import XK, X, error

        from jarvis.desktop.xconnect import open_display

        try:
            with _xauthority(self.xauthority):
                display = open_display(self.display_name)
        except (error.DisplayError, error.ConnectionClosedError, OSError) as exc:
            raise KillSwitchError(f"kill hotkey: cannot open the X display: {exc}") from exc
        keycode = display.keysym_to_keycode(XK.string_to_keysym(self.keysym))
        if not keycode:
            display.close()
            raise KillSwitchError(f"kill hotkey {self.chord!r}: no key for {self.keysym}")
        root = display.screen().root
        catch = error.CatchError(error.BadAccess)
        for extra in LOCK_VARIANTS:
            root.grab_key(
                keycode, self.mask | extra, False, X.GrabModeAsync, X.GrabModeAsync, onerror=catch
            )
        display.sync()
        if catch.get_error() is not None:
            display.close()
            raise KillSwitchError(
                f"kill hotkey {self.chord!r} is already grabbed by another program; "
                "choose another with safety.kill_hotkey"
            )
        self._display, self._keycode = display, keycode
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._listen, name="kill-switch", daemon=True)
        self._thread.start()
        log.info("kill switch: %s grabbed on %s", self.chord, display.get_display_name())
        return self

    def _listen(self) -> None:
        from Xlib import X

        display = self._display
        fd = display.fileno()
        while True:
            while display.pending_events():
                event = display.next_event()
                if event.type == X.KeyPress and event.detail == self._keycode:
                    self.presses += 1
                    try:
                        self.on_press()
                    except Exception:  # the switch must survive a broken callback
                        log.exception("kill switch: the stop callback failed")
            readable, _, _ = select.select([fd, self._wake_r], [], [])
            if self._wake_r in readable:
                return

    def stop(self) -> None:
        if self._thread is None:
            return
        os.write(self._wake_w, b"x")
        self._thread.join(timeout=5)
        self._thread = None
        with contextlib.suppress(Exception):  # the display may be gone already
            root = self._display.screen().root
            for extra in LOCK_VARIANTS:
                root.ungrab_key(self._keycode, self.mask | extra)
            self._display.sync()
        x11.close_display(self._display)
        for fd in (self._wake_r, self._wake_w):
            os.close(fd)

    def __enter__(self) -> KillSwitch:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def _xauthority(path: str | None) -> Iterator[None]:
    """python-xlib reads the cookie file named by $XAUTHORITY when it connects."""
    if path is None:
        yield
        return
    saved = os.environ.get("XAUTHORITY")
    os.environ["XAUTHORITY"] = path
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("XAUTHORITY", None)
        else:
            os.environ["XAUTHORITY"] = saved


def _user_display() -> dict[str, str]:
    """The person's display: the one a sandbox saved aside, else this process's."""
    from jarvis.safety.sandbox import USER_DISPLAY_ENV

    if os.environ.get(USER_DISPLAY_ENV["DISPLAY"]):
        pairs = USER_DISPLAY_ENV.items()
        return {k: v for k, saved in pairs if (v := os.environ.get(saved))}
    return {k: v for k in ("DISPLAY", "XAUTHORITY") if (v := os.environ.get(k))}


def end_own_xdotool() -> list[int]:
    """End the ``xdotool type`` processes this process started (typing right now), so
    the typing stops at once instead of after the current piece. Returns their pids."""
    me, ended = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        name = stat[stat.find("(") + 1 : stat.rfind(")")]
        ppid = int(stat[stat.rfind(")") + 2 :].split()[1])
        if ppid != me or name != "xdotool":
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[1:2] == [b"type"]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGTERM)
                ended.append(int(entry.name))
    return ended


def _wait_ended(pids: list[int], timeout: float = 0.5) -> None:
    """Wait until each process has exited (a zombie, or reaped), at most ``timeout``."""
    deadline = time.monotonic() + timeout
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                break
            if stat[stat.rfind(")") + 2 :].startswith("Z"):
                break
            time.sleep(0.002)


_CHORD_KEYSYMS = {
    "ctrl": ("Control_L", "Control_R"),
    "alt": ("Alt_L", "Alt_R", "Meta_L", "Meta_R"),
    "shift": ("Shift_L", "Shift_R"),
    "super": ("Super_L", "Super_R"),
}


def release_held_keys(keep: set[str]) -> list[int]:
    """Release every key still down on this process's display except the keysyms in
    ``keep`` (the person's chord): a typing process ended between a key's press and its
    release must not leave that key held. Returns the released keycodes."""
    from Xlib import XK, X
    from Xlib.ext import xtest

    from jarvis.desktop.xconnect import open_display

    display = open_display()
    try:
        kept = {display.keysym_to_keycode(XK.string_to_keysym(k)) for k in keep}
        bitmap = display.query_keymap()
        down = [i * 8 + b for i, byte in enumerate(bitmap) for b in range(8) if byte >> b & 1]
        released = [code for code in down if code not in kept]
        for code in released:
            xtest.fake_input(display, X.KeyRelease, code)
        display.sync()
        return released
    finally:
        x11.close_display(display)


def chord_keysyms(chord: str) -> set[str]:
    """The keysym names a person holds for ``chord`` (both sides of each modifier)."""
    keys = parse_chord(chord)
    names = {x11.keysym_name(k) for k in keys if k not in MODIFIERS}
    for key in keys:
        names.update(_CHORD_KEYSYMS.get(key, ()))
    return names


def agent_brake(
    agent: Brakeable, loop: asyncio.AbstractEventLoop, by: str = STOPPED_BY, chord: str = ""
) -> Callable[[], None]:
    """The callback that stops ``agent`` from any thread: input first, then the task."""

    def press() -> None:
        log.warning("kill switch pressed: cancelling the running task")
        agent.stop.set()
        typing = end_own_xdotool()
        loop.call_soon_threadsafe(agent.cancel, by)
        if typing:
            _wait_ended(typing)
            try:
                release_held_keys(keep)
            except Exception as exc:  # the task is cancelled either way
                log.warning("kill switch: could not release held keys: %s", exc)

    keep = chord_keysyms(chord) if chord else set()
    return press


@contextlib.contextmanager
def kill_switch(
    settings: Settings,
    agent: Brakeable,
    loop: asyncio.AbstractEventLoop,
    user_display: dict[str, str] | None = None,
) -> Iterator[None]:
    """While inside, the configured hotkey cancels ``agent``'s task. It is grabbed on the
    person's display: ``user_display`` (DISPLAY, XAUTHORITY) when the task runs in a
    sandbox, else this process's. Without a hotkey or a display it does nothing; a grab
    that fails is logged (the other brakes still work)."""
    chord = settings.safety.kill_hotkey
    where = user_display or _user_display()
    if not chord or not where.get("DISPLAY") or not x11.is_x11():
        yield
        return
    try:
        switch = KillSwitch(
            chord,
            agent_brake(agent, loop, chord=chord),
            where["DISPLAY"],
            where.get("XAUTHORITY"),
        ).start()
    except KillSwitchError as exc:
        log.warning("%s", exc)
        yield
        return
    try:
        yield
    finally:
        switch.stop()
