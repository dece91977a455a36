"""A person's device events turned into the agent's actions: clicks (double, right,
middle), drags, scrolls, typed text, hotkeys and single keys.

:class:`ActionBuilder` is fed :class:`~jarvis.recording.xrecord.RawEvent` values in order
and hands out finished :class:`Action` values. A click is held back until the next event
(or :meth:`ActionBuilder.flush`) so that a second click on the same spot makes it a
double click; a run of printable keys is one ``type`` action. ``look(x, y, keyboard)`` is
asked for the target when an action begins (the window, the element, a crop: the
recorder's business), and ``is_secret()`` when a run of typed keys begins (and when it
ends, if no element was known at its start): a run typed into a password field keeps no
text. The stop chord (default ctrl+alt+r) ends the recording and is not an action.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from jarvis.recording.xrecord import RawEvent

ActionKind = Literal[
    "click",
    "double_click",
    "right_click",
    "middle_click",
    "drag",
    "scroll",
    "type",
    "hotkey",
    "press_key",
]
SECRET_TYPED = "[secret typed]"
DRAG_PX = 6
DOUBLE_PX = 4
DOUBLE_MS = 400
MODIFIERS = {
    "Control_L": "ctrl",
    "Control_R": "ctrl",
    "Alt_L": "alt",
    "Alt_R": "alt",
    "Meta_L": "alt",
    "Meta_R": "alt",
    "Super_L": "super",
    "Super_R": "super",
    "Shift_L": "shift",
    "Shift_R": "shift",
    "ISO_Level3_Shift": "altgr",
}
KEY_NAMES = {
    "Return": "enter",
    "KP_Enter": "enter",
    "Escape": "esc",
    "BackSpace": "backspace",
    "Tab": "tab",
    "ISO_Left_Tab": "tab",
    "Delete": "delete",
    "Page_Up": "pageup",
    "Page_Down": "pagedown",
}
SCROLLS = {4: "up", 5: "down", 6: "left", 7: "right"}
CLICKS: dict[int, ActionKind] = {1: "click", 2: "middle_click", 3: "right_click"}


class Action(BaseModel):
    """One step a person took, in the tools' terms (screen coordinates)."""

    kind: ActionKind
    x: int = 0
    y: int = 0
    end_x: int | None = None
    end_y: int | None = None
    text: str = ""
    keys: str = ""
    direction: str = ""
    amount: int = 0
    secret: bool = False
    """Typed into a password field: ``text`` is :data:`SECRET_TYPED`."""
    target: dict[str, Any] = Field(default_factory=dict)
    t_ms: int = 0


class Keyboard(Protocol):
    def describe(self, keycode: int, state: int) -> tuple[str, str]:
        """(keysym name, the character it types or "") for a key with this state."""
        ...


Look = Callable[[int, int, bool], dict[str, Any]]


class ActionBuilder:
    """Device events in, actions out (see the module doc)."""

    def __init__(
        self,
        keyboard: Keyboard,
        look: Look = lambda x, y, keyboard: {},
        is_secret: Callable[[], bool] = lambda: False,
        stop_keys: str = "ctrl+alt+r",
    ) -> None:
        self.keyboard = keyboard
        self.look = look
        self.is_secret = is_secret
        self.stop_keys = frozenset(stop_keys.lower().split("+"))
        self.stopped = False
        self._held: set[str] = set()
        self._press: tuple[int, int, int, int, dict[str, Any]] | None = None
        self._dragging = False
        self._pending: Action | None = None
        self._typing: Action | None = None
        self._out: list[Action] = []

    def feed(self, event: RawEvent) -> list[Action]:
        """The actions finished by ``event``."""
        if self.stopped:
            return []
        handler = {
            "button_down": self._button_down,
            "button_up": self._button_up,
            "motion": self._motion,
            "key_down": self._key_down,
            "key_up": self._key_up,
        }[event.kind]
        handler(event)
        return self._take()

    def flush(self) -> list[Action]:
        """Everything held back (a click, a run of typed keys): the person paused."""
        self._end_typing()
        self._release_pending()
        return self._take()

    def _take(self) -> list[Action]:
        out, self._out = self._out, []
        return out

    def _release_pending(self) -> None:
        if self._pending is not None:
            self._out.append(self._pending)
            self._pending = None

    def _end_typing(self) -> None:
        """The run of typed keys ends; when no element was known at its first key, asked
        again whether the focus is a password field (the tree may have caught up)."""
        typing, self._typing = self._typing, None
        if typing is None:
            return
        unknown = not typing.target.get("role")  # no tree said where the keys went
        if not typing.secret and unknown and self.is_secret():
            typing.secret, typing.text = True, SECRET_TYPED
        self._out.append(typing)

    # --- the pointer -----------------------------------------------------------------
    def _button_down(self, ev: RawEvent) -> None:
        self._end_typing()
        if ev.detail in SCROLLS:
            self._scroll(ev, SCROLLS[ev.detail])
            return
        if ev.detail not in CLICKS:
            return
        pending = self._pending
        double = (
            pending is not None
            and pending.kind == "click"
            and ev.detail == 1
            and abs(pending.x - ev.x) <= DOUBLE_PX
            and abs(pending.y - ev.y) <= DOUBLE_PX
            and ev.time_ms - pending.t_ms <= DOUBLE_MS
        )
        if not double:
            self._release_pending()
        target = pending.target if double and pending else self.look(ev.x, ev.y, False)
        self._press = (ev.detail, ev.x, ev.y, ev.time_ms, target)
        self._dragging = False

    def _motion(self, ev: RawEvent) -> None:
        if self._press is not None and not self._dragging:
            _, x, y, _, _ = self._press
            self._dragging = max(abs(ev.x - x), abs(ev.y - y)) >= DRAG_PX

    def _button_up(self, ev: RawEvent) -> None:
        if self._press is None or ev.detail != self._press[0]:
            return
        button, x, y, t, target = self._press
        self._press = None
        if self._dragging or max(abs(ev.x - x), abs(ev.y - y)) >= DRAG_PX:
            self._release_pending()
            self._out.append(
                Action(kind="drag", x=x, y=y, end_x=ev.x, end_y=ev.y, target=target, t_ms=t)
            )
            return
        pending = self._pending
        if pending is not None and pending.kind == "click" and button == 1:
            self._pending = None  # the second click of a double click
            self._out.append(pending.model_copy(update={"kind": "double_click"}))
            return
        self._pending = Action(kind=CLICKS[button], x=x, y=y, target=target, t_ms=t)

    def _scroll(self, ev: RawEvent, direction: str) -> None:
        pending = self._pending
        if (
            pending is not None
            and pending.kind == "scroll"
            and pending.direction == direction
            and abs(pending.x - ev.x) <= DRAG_PX
            and abs(pending.y - ev.y) <= DRAG_PX
        ):
            pending.amount += 1
            return
        self._release_pending()
        target = self.look(ev.x, ev.y, False)
        self._pending = Action(
            kind="scroll",
            x=ev.x,
            y=ev.y,
            direction=direction,
            amount=1,
            target=target,
            t_ms=ev.time_ms,
        )

    # --- the keyboard ----------------------------------------------------------------
    def _key_down(self, ev: RawEvent) -> None:
        name, char = self.keyboard.describe(ev.detail, ev.state)
        if name in MODIFIERS:
            self._held.add(MODIFIERS[name])
            return
        chord = self._held - {"shift", "altgr"}
        if not chord and char and name not in KEY_NAMES:
            self._release_pending()
            if self._typing is None:
                secret = self.is_secret()
                target = self.look(ev.x, ev.y, True)
                self._typing = Action(kind="type", secret=secret, target=target, t_ms=ev.time_ms)
            if not self._typing.secret:
                self._typing.text += char
            else:
                self._typing.text = SECRET_TYPED
            return
        key = KEY_NAMES.get(name, name.lower())
        keys = "+".join([*sorted(self._held), key]) if self._held else key
        if set(keys.split("+")) == self.stop_keys:
            self._end_typing()
            self._release_pending()
            self.stopped = True
            return
        self._end_typing()
        self._release_pending()
        kind: ActionKind = "hotkey" if self._held else "press_key"
        target = self.look(ev.x, ev.y, True)
        self._out.append(Action(kind=kind, keys=keys, target=target, t_ms=ev.time_ms))

    def _key_up(self, ev: RawEvent) -> None:
        name, _ = self.keyboard.describe(ev.detail, ev.state)
        if name in MODIFIERS:
            self._held.discard(MODIFIERS[name])
