"""What the accessibility reader keeps of a window: :class:`Element` (role, name, states,
value, screen bounds), :class:`Tree` (the elements in walk order, rendered for a model),
and the AT-SPI names and state bits they are read with."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

TEXT = "org.a11y.atspi.Text"
VALUE = "org.a11y.atspi.Value"
ACTION = "org.a11y.atspi.Action"
EDITABLE_TEXT = "org.a11y.atspi.EditableText"

# AtspiStateType bit numbers (the two 32-bit words GetState returns)
STATES = {
    1: "active",
    4: "checked",
    5: "collapsed",
    6: "defunct",
    7: "editable",
    8: "enabled",
    10: "expanded",
    11: "focusable",
    12: "focused",
    20: "pressed",
    23: "selected",
    24: "sensitive",
    25: "showing",
    30: "visible",
    32: "indeterminate",
    41: "checkable",
    43: "read-only",
}
SHOWN_STATES: tuple[str, ...] = ("checked", "expanded", "collapsed", "focused", "pressed")
SHOWN_STATES += ("selected", "editable", "indeterminate", "read-only")
STRUCTURE = {"filler", "panel", "unknown", "redundant object", "section", "layered pane"}
STRUCTURE |= {"scroll pane", "viewport", "split pane", "root pane", "glass pane", "tool bar"}
STRUCTURE |= {"menu bar", "page tab list", "scroll bar", "separator", "invalid", "grouping"}
TEXT_CAP = 200


@dataclass
class Element:
    """One element kept from the tree: ``ref`` is its (bus name, object path)."""

    id: str
    ref: tuple[str, str]
    role: str
    name: str
    states: frozenset[str]
    bounds: tuple[int, int, int, int]  # x, y, width, height on the screen
    text: str = ""
    value: float | None = None
    interfaces: frozenset[str] = frozenset()
    extent: tuple[int, int, int, int] | None = None
    """The bounds the application reports when a scroll area shows only ``bounds`` of it."""
    offset: tuple[int, int] = (0, 0)
    """What was added to the application's coordinates to place it on the screen: its
    window's origin where the toolkit reports window-relative ones (GTK 3 on Wayland)."""

    @property
    def center(self) -> tuple[int, int]:
        x, y, w, h = self.bounds
        return x + w // 2, y + h // 2

    def line(self) -> str:
        x, y, w, h = self.bounds
        out = f"[{self.id}] {self.role}"
        if self.name:
            out += f" {quote(self.name)}"
        if self.text and self.text != self.name:
            out += f" text={quote(self.text)}"
        if self.value is not None:
            out += f" value={self.value:g}"
        shown = [s for s in SHOWN_STATES if s in self.states]
        if shown:
            out += " " + ",".join(shown)
        return out + f" @{x},{y} {w}x{h}"


@dataclass
class Tree:
    """The pruned tree of one window at one moment."""

    window: str
    elements: list[Element]
    visited: int  # elements read before pruning
    seconds: float
    box: tuple[int, int, int, int] = (0, 0, 0, 0)  # the window's frame on the screen
    window_id: int = 0  # the X top-level window it was read for (0: not known)
    by_id: dict[str, Element] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_id = {e.id: e for e in self.elements}

    def renumbered(self, first: int) -> Tree:
        """This tree with its ids counted from ``e{first}`` (a second window's tree in the
        same step: ids stay unique within the step)."""
        elements = [dataclasses.replace(e, id=f"e{n}") for n, e in enumerate(self.elements, first)]
        return dataclasses.replace(self, elements=elements)

    def render(self, max_chars: int, what: str = "Accessibility tree") -> str:
        head = f"{what} of {self.window} ({len(self.elements)} elements):"
        lines = [head]
        used = len(head)
        for i, element in enumerate(self.elements):
            line = element.line()
            if used + len(line) + 1 > max_chars:
                lines.append(f"... {len(self.elements) - i} more elements left out (size cap)")
                break
            lines.append(line)
            used += len(line) + 1
        return "\n".join(lines)


def quote(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > 80:
        text = text[:79] + "…"
    return '"' + text.replace('"', "'") + '"'
