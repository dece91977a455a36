"""Recording a person on one X display until they stop: each action with its target and a
picture before and after.

The pictures: while the person pauses (no event for :data:`IDLE_S`) the screen is grabbed;
the latest grab is the "before" of the next action and the crop around its pointer, and
the first grab after an action ends is its "after". The target: the window under the
pointer (or the focused one, for keys) and, where the application publishes an
accessibility tree, the smallest element under the pointer (or the focused element). Keys
typed while the focused element is a password field are kept as ``[secret typed]``.
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from jarvis.desktop.a11y.bus import A11yError
from jarvis.desktop.a11y.reader import A11yReader
from jarvis.desktop.a11y.tree import Element, Tree
from jarvis.desktop.windows import WindowInfo, Windows
from jarvis.desktop.x11 import XDisplay, close_display, open_display
from jarvis.recording.actions import Action, ActionBuilder
from jarvis.recording.xrecord import RawEvent, XRecordSource

log = logging.getLogger(__name__)

IDLE_S = 0.25
CROP = 120
TEXT_ROLES = frozenset({"password text", "entry", "text", "editbar", "terminal", "combo box"})


class X11Keyboard:
    """Keycodes to keysym names and characters, from the display's own keymap."""

    def __init__(self, where: XDisplay) -> None:
        from Xlib import XK

        self._display = open_display(where.name, where.xauthority)
        XK.load_keysym_group("xkb")
        self._names = {v: k[3:] for k, v in vars(XK).items() if k.startswith("XK_")}

    def describe(self, keycode: int, state: int) -> tuple[str, str]:
        sym = self._display.keycode_to_keysym(keycode, 1 if state & 1 else 0)
        sym = sym or self._display.keycode_to_keysym(keycode, 0)
        name = self._names.get(sym, "")
        char = ""
        if 0x20 <= sym <= 0x7E or 0xA0 <= sym <= 0xFF:
            char = chr(sym)
        elif sym & 0xFF000000 == 0x01000000:
            char = chr(sym & 0xFFFFFF)
        return name or char, char

    def close(self) -> None:
        close_display(self._display)


@dataclass
class Step:
    """One recorded action and its pictures (file names in the recording's folder)."""

    action: Action
    before: Image.Image | None = None
    after: Image.Image | None = None
    crop: Image.Image | None = None


@dataclass
class Recording:
    steps: list[Step] = field(default_factory=list)
    stopped_by: str = ""


class Recorder:
    """Records one display; :meth:`run` blocks until ``stop`` is set or the stop chord."""

    def __init__(
        self,
        where: XDisplay,
        reader: A11yReader | None = None,
        stop_keys: str = "ctrl+alt+r",
    ) -> None:
        from jarvis.desktop.screen import Screen

        self.where = where
        self.reader = reader
        self.stop_keys = stop_keys
        self.screen = Screen(display=where, image_format="png")
        self.windows = Windows(where)
        self._latest: Image.Image | None = None
        self._clicked_role = ""
        """The role of the element the last pointer action hit: a click into a password
        field makes the keys after it secret even before the tree says it has the focus."""
        self._open: list[Step] = []
        self._trees: dict[int, Tree] = {}
        """The trees read at the last pause, by window: a click's target is looked up in
        the tree from before it (by the time its event is read, the click may have
        changed the window)."""
        self._pointer = (0, 0)
        self.started = threading.Event()

    def _grab(self) -> Image.Image:
        size, raw = self.screen.grab_raw()
        return Image.frombytes("RGB", (size.width, size.height), raw, "raw", "BGRX")

    def run(self, stop: threading.Event) -> Recording:
        events: queue.Queue[RawEvent] = queue.Queue()
        keyboard = X11Keyboard(self.where)
        builder = ActionBuilder(keyboard, self._look, self._secret, self.stop_keys)
        source = XRecordSource(self.where, events.put)
        recording = Recording()
        self._latest = self._grab()
        source.start()
        try:
            source.ready.wait(5)
            self.started.set()
            while not stop.is_set() and not builder.stopped:
                try:
                    event = events.get(timeout=IDLE_S)
                except queue.Empty:
                    self._idle(recording, builder.flush())
                    continue
                self._pointer = (event.x, event.y)
                self._add(recording, builder.feed(event))
            recording.stopped_by = "stop chord" if builder.stopped else "stop"
        finally:
            source.stop()
            keyboard.close()
        self._add(recording, builder.flush())
        self._idle(recording, [])
        return recording

    def _add(self, recording: Recording, actions: list[Action]) -> None:
        for action in actions:
            step = Step(action, before=action.target.pop("_before", None))
            step.crop = action.target.pop("_crop", None)
            recording.steps.append(step)
            self._open.append(step)

    def _idle(self, recording: Recording, actions: list[Action]) -> None:
        """A pause: what ended gets its after picture, the next one its before."""
        self._add(recording, actions)
        self._latest = self._grab()
        for step in self._open:
            step.after = self._latest
        self._open.clear()
        read: set[int] = set()
        for window in (self.windows.focused(), self.windows.at(*self._pointer)):
            if window.known and window.id not in read:
                read.add(window.id)
                tree = self._read(window)
                if tree is not None and tree.elements:  # else the last good one stays
                    self._trees[window.id] = tree

    # --- targets ---------------------------------------------------------------------
    def _look(self, x: int, y: int, keyboard: bool) -> dict[str, Any]:
        window = self.windows.focused() if keyboard else self.windows.at(x, y)
        target: dict[str, Any] = {"window": window.title, "window_class": window.wm_class}
        element = self._element(window, None if keyboard else (x, y))
        if element is not None:
            target["role"], target["name"] = element.role, element.name
            target["bounds"] = list(element.bounds)
        if not keyboard:
            self._clicked_role = element.role if element is not None else ""
        shot = self._latest
        if shot is not None:
            target["_before"] = shot
            if not keyboard:  # the crop stays on the screen (a replay matches it there)
                half = CROP // 2
                ox, oy = self.screen.origin
                box = (
                    max(x - half, ox),
                    max(y - half, oy),
                    min(x + half, ox + shot.width),
                    min(y + half, oy + shot.height),
                )
                target["crop_box"] = list(box)
                target["_crop"] = shot.crop((box[0] - ox, box[1] - oy, box[2] - ox, box[3] - oy))
        return target

    def _element(self, window: WindowInfo, point: tuple[int, int] | None) -> Element | None:
        if self.reader is None or not window.known:
            return None
        tree = self._trees.get(window.id) if point is not None else None
        tree = tree or self._read(window)
        if tree is None or not tree.elements:
            return None
        if point is None:
            focused = [e for e in tree.elements if "focused" in e.states]
            texts = [e for e in focused if e.role in TEXT_ROLES]
            chosen = texts or focused
            return chosen[-1] if chosen else None
        px, py = point
        under = [
            e
            for e in tree.elements
            if e.bounds[0] <= px < e.bounds[0] + e.bounds[2]
            and e.bounds[1] <= py < e.bounds[1] + e.bounds[3]
        ]
        return min(under, key=lambda e: e.bounds[2] * e.bounds[3], default=None)

    def _read(self, window: WindowInfo) -> Tree | None:
        if self.reader is None:
            return None
        try:
            return self.reader.read(window.box, window.title)
        except A11yError as exc:
            log.debug("no tree for %s: %s", window.label(), exc)
            return None

    def _secret(self) -> bool:
        """Whether the focused element is a password field (per the accessibility tree)."""
        if self._clicked_role == "password text":
            return True
        element = self._element(self.windows.focused(), None)
        return element is not None and element.role == "password text"

    def close(self) -> None:
        self.screen.close()
        self.windows.close()
        if self.reader is not None:
            self.reader.close()


def recordings_dir(data_dir: Path) -> Path:
    return data_dir / "recordings"
