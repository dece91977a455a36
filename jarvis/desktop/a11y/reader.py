"""The accessibility tree of one window, read, pruned and rendered for a model.

:class:`A11yReader` holds a connection to the accessibility bus of one session bus (its
address is given: a Desktop's resource, never this process's ``DISPLAY`` or
``DBUS_SESSION_BUS_ADDRESS``). :meth:`A11yReader.read` finds the application frame that
matches a window (its box, then its title, then the active frame), walks it level by level
with a time limit, and keeps only what a model can use: showing, visible, enabled elements
with a name, text or value, each with role, name, states, value and screen bounds, cut to
what scroll areas show (:mod:`jarvis.desktop.a11y.clip`). Ids
(``e1``, ``e2``, ...) follow the walk order and are stable within one :class:`Tree`.
:meth:`A11yReader.check` compares an element with the live tree before anything acts on it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from jarvis.desktop.a11y.bus import (
    ACCESSIBLE,
    COMPONENT,
    NULL_PATH,
    REGISTRY,
    ROOT_PATH,
    A11yBus,
    A11yError,
    Call,
    prop,
)
from jarvis.desktop.a11y.clip import Clips
from jarvis.desktop.a11y.tree import (
    STATES,
    STRUCTURE,
    TEXT,
    TEXT_CAP,
    VALUE,
    Element,
    Tree,
    quote,
)


def _states(words: Any) -> frozenset[str]:
    if isinstance(words, Exception) or not words:
        return frozenset()
    bits = int(words[0][0]) | (int(words[0][1]) << 32 if len(words[0]) > 1 else 0)
    return frozenset(name for bit, name in STATES.items() if bits >> bit & 1)


def _ok(result: Any) -> bool:
    return not isinstance(result, Exception) and result is not None


def _variant(result: Any) -> Any:
    return result[0][1] if _ok(result) else None


Box = tuple[int, int, int, int]


def _box(result: Any) -> Box:
    """The (x, y, width, height) of a GetExtents reply; zeros for an error."""
    if not _ok(result):
        return (0, 0, 0, 0)
    x, y, w, h = (int(v) for v in result[0])
    return (x, y, w, h)


def _overlap(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> int:
    w = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    h = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    return max(w, 0) * max(h, 0)


def _usable(states: frozenset[str]) -> bool:
    """Whether an element with these states can be acted on (its details are worth asking)."""
    return "defunct" not in states and bool({"enabled", "sensitive"} & states)


def _element(
    ref: tuple[str, str], got: list[Any], states: frozenset[str], fbox: Box, clips: Clips
) -> Element | None:
    """The element when the window shows it (what it holds is read after), its bounds cut
    to the part a scroll area shows; ``got`` holds the answers to GetRoleName, Name and
    GetExtents."""
    role_r, name_r, ext_r = got
    role = str(role_r[0]) if _ok(role_r) else "unknown"
    extent = _box(ext_r)
    bounds = clips.settle(ref, role, extent)
    outside = fbox[2] > 0 and not _overlap(bounds or extent, fbox) and not clips.popped(ref)
    if bounds is None or outside:
        return None
    name = " ".join(str(_variant(name_r) or "").split())  # GTK pads menu items
    cut = extent if bounds != extent else None
    return Element("", ref, role, name, states, bounds, extent=cut)


class A11yReader:
    """Reads accessibility trees through the session bus at ``session_bus`` (thread-safe;
    connects lazily, once; close it when done)."""

    def __init__(self, session_bus: str, timeout: float = 1.0, max_nodes: int = 4000) -> None:
        self.session_bus = session_bus
        self.timeout = timeout
        self.max_nodes = max_nodes
        self._bus: A11yBus | None = None
        self._lock = threading.Lock()
        self._on = bool(session_bus)

    def switch(self, session_bus: str) -> None:
        """Read through the session at ``session_bus`` from now on (the desktop moved to
        another display); empty: no tree until the next switch."""
        with self._lock:
            self._drop()
            self.session_bus = session_bus
            self._on = bool(session_bus)

    def _connect(self) -> A11yBus:
        if not self._on:
            raise A11yError("no session bus for this display")
        if self._bus is None:
            self._bus = A11yBus(self.session_bus, self.timeout)
        return self._bus

    def available(self) -> bool:
        """Whether the bus answers (it may still hold no application)."""
        try:
            with self._lock:
                self._connect()
            return True
        except A11yError:
            return False

    def read(self, box: tuple[int, int, int, int] | None = None, title: str = "") -> Tree | None:
        """The pruned tree of the frame that matches the window at ``box`` (x, y, w, h) or
        titled ``title``; None when no application publishes a matching frame. Raises
        :class:`A11yError` when the bus is absent or the read runs past its time limit."""
        start = time.monotonic()
        deadline = start + self.timeout
        with self._lock:
            bus = self._connect()
            try:
                frame = self._frame(bus, box, title, deadline)
                if frame is None:
                    return None
                ref, name, fbox = frame
                elements, visited = self._walk(bus, ref, fbox, deadline)
            except A11yError:
                self._drop()
                raise
        return Tree(
            quote(name) if name else "the focused window",
            elements,
            visited,
            time.monotonic() - start,
            fbox,
        )

    def _frame(
        self,
        bus: A11yBus,
        box: tuple[int, int, int, int] | None,
        title: str,
        deadline: float,
    ) -> tuple[tuple[str, str], str, tuple[int, int, int, int]] | None:
        apps = bus.batch([Call((REGISTRY, ROOT_PATH), ACCESSIBLE, "GetChildren")], deadline)[0]
        if not _ok(apps):
            return None
        app_refs = [(str(b), str(p)) for b, p in apps[0] if p != NULL_PATH]
        kids = bus.batch([Call(r, ACCESSIBLE, "GetChildren") for r in app_refs], deadline)
        frames = [(str(b), str(p)) for k in kids if _ok(k) for b, p in k[0] if p != NULL_PATH]
        calls: list[Call] = []
        for f in frames:
            calls += [prop(f, ACCESSIBLE, "Name"), Call(f, ACCESSIBLE, "GetState")]
            calls.append(Call(f, COMPONENT, "GetExtents", "u", (0,)))
        answers = bus.batch(calls, deadline)
        best: tuple[int, tuple[tuple[str, str], str, tuple[int, int, int, int]]] | None = None
        for i, f in enumerate(frames):
            name = str(_variant(answers[3 * i]) or "")
            states = _states(answers[3 * i + 1])
            fbox = _box(answers[3 * i + 2])
            if "showing" not in states and "visible" not in states:
                continue
            score = 1  # a shown frame: the one when it is the only one
            if box is not None:
                score += _overlap(box, fbox) * 4 // max(box[2] * box[3], 1)  # 0..4
                score += 4 if abs(box[0] - fbox[0]) <= 2 and abs(box[1] - fbox[1]) <= 2 else 0
            score += 3 if title and name == title else 0
            score += 2 if "active" in states else 0
            if box is not None and _overlap(box, fbox) == 0:
                continue  # not the window asked about
            if best is None or score > best[0]:
                best = (score, (f, name, fbox))
        return best[1] if best else None

    def _walk(
        self,
        bus: A11yBus,
        root: tuple[str, str],
        fbox: tuple[int, int, int, int],
        deadline: float,
    ) -> tuple[list[Element], int]:
        """Breadth first, one round trip per level: each batch asks the state and children
        of every element of a level, and the role, name and bounds of the shown, usable
        elements of the level before (a hidden element costs two questions, and its
        children none). An element outside the part of a scroll area in view, or in a
        closed combo box's list, is left out (:class:`Clips`, from the bounds already read).
        Then one round trip for the kept elements' sizes of text and values and one for
        their text."""
        found: list[Element] = []
        clips = Clips()
        level = [root]
        pending: list[tuple[tuple[str, str], frozenset[str]]] = []  # shown: details to ask
        visited = 0
        while level or pending:
            level = level[: max(self.max_nodes - visited, 0)]
            visited += len(level)
            calls: list[Call] = []
            for ref, _ in pending:
                calls += [
                    Call(ref, ACCESSIBLE, "GetRoleName"),
                    prop(ref, ACCESSIBLE, "Name"),
                    Call(ref, COMPONENT, "GetExtents", "u", (0,)),
                ]
            for ref in level:
                calls += [Call(ref, ACCESSIBLE, "GetState"), Call(ref, ACCESSIBLE, "GetChildren")]
            answers = bus.batch(calls, deadline)
            for i, (ref, states) in enumerate(pending):
                got = answers[3 * i : 3 * i + 3]
                if (element := _element(ref, got, states, fbox, clips)) is not None:
                    found.append(element)
            answers = answers[3 * len(pending) :]
            pending = []
            nxt: list[tuple[str, str]] = []
            for i, ref in enumerate(level):
                state_r, kids = answers[2 * i : 2 * i + 2]
                states = _states(state_r)
                if ref != root and (not {"showing", "visible"} <= states or clips.hidden(ref)):
                    continue  # hidden: nor its children
                if _ok(kids):
                    children = [(str(b), str(p)) for b, p in kids[0] if p != NULL_PATH]
                    clips.adopt(ref, children)
                    nxt += children
                if ref != root and _usable(states):
                    pending.append((ref, states))
                else:
                    clips.pass_on(ref)
            level = nxt
        kept = self._contents(bus, found, deadline)
        for n, element in enumerate(kept, 1):
            element.id = f"e{n}"
        return kept, visited

    def _contents(self, bus: A11yBus, found: list[Element], deadline: float) -> list[Element]:
        """``found`` with text and values filled in, without the elements that turn out to
        have nothing a model can use."""
        calls: list[Call] = []
        for e in found:
            calls.append(Call(e.ref, ACCESSIBLE, "GetInterfaces"))
            calls.append(prop(e.ref, TEXT, "CharacterCount"))
            calls.append(prop(e.ref, VALUE, "CurrentValue"))
        answers = bus.batch(calls, deadline) if calls else []
        counts: dict[tuple[str, str], int] = {}
        for i, element in enumerate(found):
            ifaces, count, value = answers[3 * i : 3 * i + 3]
            names = ifaces[0] if _ok(ifaces) else []
            element.interfaces = frozenset(str(n) for n in names)
            if TEXT in element.interfaces:
                counts[element.ref] = int(_variant(count) or 0)
            elif VALUE in element.interfaces and _ok(value):
                element.value = float(_variant(value))
        kept = [
            e
            for e in found
            if (e.name or counts.get(e.ref) or e.value is not None or "focusable" in e.states)
            and not (e.role in STRUCTURE and not e.name)
        ]
        texts = [e for e in kept if counts.get(e.ref)]
        calls = [
            Call(e.ref, TEXT, "GetText", "ii", (0, min(counts[e.ref], TEXT_CAP))) for e in texts
        ]
        for element, body in zip(texts, bus.batch(calls, deadline) if calls else [], strict=True):
            text = str(body[0]) if _ok(body) else ""
            element.text = text.replace("\ufffc", "").strip()
        return kept

    def check(self, element: Element, tolerance: int = 2) -> str | None:
        """Why ``element`` can no longer be acted on (vanished, hidden, disabled or moved
        by more than ``tolerance`` px since it was read), or None when it is where it was."""
        deadline = time.monotonic() + self.timeout
        with self._lock:
            bus = self._connect()
            state, ext, role = bus.batch(
                [
                    Call(element.ref, ACCESSIBLE, "GetState"),
                    Call(element.ref, COMPONENT, "GetExtents", "u", (0,)),
                    Call(element.ref, ACCESSIBLE, "GetRoleName"),
                ],
                deadline,
            )
        states = _states(state)
        if not _ok(state) or not _ok(role) or "defunct" in states or str(role[0]) != element.role:
            return f"element {element.id} is gone from the window"
        if not {"showing", "visible"} <= states:
            return f"element {element.id} is no longer shown"
        if {"enabled", "sensitive"} & element.states - states:
            return f"element {element.id} is disabled now"
        if not _ok(ext):
            return f"element {element.id} has no bounds any more"
        (x, y, w, h), (ox, oy) = _box(ext), element.offset
        now, then = (x + ox, y + oy, w, h), element.extent or element.bounds
        if any(abs(a - b) > tolerance for a, b in zip(now, then, strict=True)):
            return f"element {element.id} moved from {then} to {now}"
        return None

    def states(self, element: Element) -> frozenset[str]:
        """The element's states in the live tree now (empty when it is gone)."""
        with self._lock:
            got = self._connect().batch(
                [Call(element.ref, ACCESSIBLE, "GetState")], time.monotonic() + self.timeout
            )[0]
        return _states(got)

    def call(self, call: Call) -> Any:
        with self._lock:
            return self._connect().call(call, self.timeout)

    def _drop(self) -> None:
        if self._bus is not None:
            self._bus.close()
            self._bus = None

    def close(self) -> None:
        with self._lock:
            self._drop()

    def __enter__(self) -> A11yReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
