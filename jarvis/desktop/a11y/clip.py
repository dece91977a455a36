"""What part of an element the window really shows: clipping by scrolled containers.

Toolkits keep an element SHOWING and VISIBLE when it lies in a scroll area but outside the
part scrolled into view (Qt does), and a closed Qt combo box keeps its pop-up list and
items SHOWING at 0,0. A pointer click at such an element lands elsewhere or nowhere, so
:class:`Clips` follows the walk of the tree and says, from the bounds already read for the
ancestors (no extra D-Bus call), which rectangle each element may show in:

- a ``scroll pane``, ``viewport`` or ``filler`` (Qt publishes a scroll area's viewport as
  an unnamed filler) with a size limits its descendants to its box;
- a ``menu`` or ``menu item`` opens a pop-up menu, a window of its own: nothing limits
  its descendants (GTK's menu bar lies in a filler the open menu reaches far beyond; a Qt
  menu's items are children of the menu-bar entry);
- other roles pass their ancestors' limit on unchanged;
- a combo box's ``list`` or ``menu`` child is its pop-up, a window of its own: nothing
  limits it when it has a size, and while it has none (the combo is closed) it and all
  its descendants are hidden. Open, it may reach past the window the tree was read for
  (:meth:`Clips.popped` says so: the window's own box does not limit it either).
"""

from __future__ import annotations

Box = tuple[int, int, int, int]
Ref = tuple[str, str]

CLIPPING = frozenset({"scroll pane", "viewport", "filler"})
POPUPS = frozenset({"list", "menu"})
MENUS = frozenset({"menu", "menu item"})


def intersect(a: Box, b: Box) -> Box | None:
    """The part of ``a`` inside ``b``; None when they do not overlap."""
    x1, y1 = max(a[0], b[0]), max(a[1], b[1])
    x2, y2 = min(a[0] + a[2], b[0] + b[2]), min(a[1] + a[3], b[1] + b[3])
    if x2 <= x1 or y2 <= y1:
        return None
    return (x1, y1, x2 - x1, y2 - y1)


class Clips:
    """The visible rectangle each element of one walk may show in (None: no limit).

    The walk tells it each element's children (:meth:`adopt`), then each element's role
    and bounds once read (:meth:`settle`), or that they will not be read
    (:meth:`pass_on`); an element's own limit is known once its parent is settled."""

    def __init__(self) -> None:
        self._parent: dict[Ref, Ref] = {}
        self._role: dict[Ref, str] = {}
        self._inner: dict[Ref, Box | None] = {}  # the limit for an element's children
        self._hidden: set[Ref] = set()  # closed pop-ups: them and all below
        self._popped: set[Ref] = set()  # open pop-ups: them and all below

    def adopt(self, parent: Ref, children: list[Ref]) -> None:
        for child in children:
            self._parent[child] = parent

    def hidden(self, ref: Ref) -> bool:
        """Whether ``ref`` lies under a closed pop-up (its parent was found to be one)."""
        return self._parent.get(ref) in self._hidden

    def limit(self, ref: Ref) -> Box | None:
        """The rectangle ``ref`` may show in, from its settled ancestors."""
        parent = self._parent.get(ref)
        return None if parent is None else self._inner.get(parent)

    def popup(self, ref: Ref, role: str) -> bool:
        """Whether ``ref`` (of ``role``) is a combo box's pop-up list or menu."""
        parent = self._parent.get(ref)
        return role in POPUPS and parent is not None and self._role.get(parent) == "combo box"

    def popped(self, ref: Ref) -> bool:
        """Whether ``ref`` is, or lies in, an open pop-up of a combo box (settled)."""
        return ref in self._popped

    def pass_on(self, ref: Ref) -> None:
        """``ref``'s role and bounds are not read: its children get its own limit."""
        self._inner[ref] = self.limit(ref)
        if self.hidden(ref):
            self._hidden.add(ref)
        if self._parent.get(ref) in self._popped:
            self._popped.add(ref)

    def settle(self, ref: Ref, role: str, bounds: Box) -> Box | None:
        """Record ``ref``'s role and bounds; return the part of ``bounds`` the window
        shows (None: none of it, so the element is not kept)."""
        self._role[ref] = role
        limit = self.limit(ref)
        sized = bounds[2] > 0 and bounds[3] > 0
        if self.hidden(ref) or (self.popup(ref, role) and not sized):
            self._hidden.add(ref)  # a closed combo box's list: nothing below is shown
            return None
        if self.popup(ref, role) or self._parent.get(ref) in self._popped:
            self._popped.add(ref)
        if self.popup(ref, role):
            limit = None  # drawn in a window of its own, over the scroll area
        if role in MENUS:
            self._inner[ref] = None  # what it opens is a pop-up window
        elif role in CLIPPING and sized:
            inner = bounds if limit is None else intersect(bounds, limit)
            self._inner[ref] = inner if inner is not None else (bounds[0], bounds[1], 0, 0)
        else:
            self._inner[ref] = limit
        if not sized:
            return None
        return bounds if limit is None else intersect(bounds, limit)
