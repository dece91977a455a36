"""Windows on sway, through its IPC tree (``swaymsg -t get_tree``).

The same questions as :class:`~jarvis.desktop.windows.Windows` answers on X11: the window
at a point, the focused one, and focusing one. A window's id is sway's container id;
its class is the Wayland ``app_id`` (or the X11 class of an XWayland window); its box is
the layout's logical pixels.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

from jarvis.desktop.windows import UNKNOWN, WindowInfo
from jarvis.desktop.wlroots.session import WaylandDisplay, WaylandError, swaymsg

log = logging.getLogger(__name__)


def _views(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every window (a container with a client) under ``node``."""
    if node.get("pid") and node.get("type") in ("con", "floating_con"):
        yield node
    for child in [*node.get("nodes", []), *node.get("floating_nodes", [])]:
        yield from _views(child)


def describe(node: dict[str, Any]) -> WindowInfo:
    rect, inner = node["rect"], node.get("window_rect") or {"x": 0, "y": 0}
    x, y = rect["x"] + inner["x"], rect["y"] + inner["y"]
    width = inner.get("width") or rect["width"]
    height = inner.get("height") or rect["height"]
    app = node.get("app_id") or (node.get("window_properties") or {}).get("class") or ""
    return WindowInfo(
        id=int(node["id"]),
        title=node.get("name") or "",
        wm_class=app,
        box=(x, y, width, height),  # as on X11: the surface's place and size
    )


def focused_window(where: WaylandDisplay) -> WindowInfo | None:
    """The window that has the keyboard focus, None when none has (an empty workspace)."""
    tree = swaymsg(where, "-t", "get_tree")
    assert isinstance(tree, dict)
    found = [n for n in _views(tree) if n.get("focused")]
    return describe(found[0]) if found else None


class WlWindows:
    """Window lookups on one sway; every call asks sway afresh."""

    def __init__(self, where: WaylandDisplay) -> None:
        self._where = where
        self._lock = threading.Lock()

    @property
    def where(self) -> WaylandDisplay:
        return self._where

    def move_to(self, where: object) -> None:
        if isinstance(where, WaylandDisplay):
            self._where = where

    def list(self) -> list[WindowInfo]:
        """Every window, visible or not, in sway's tree order."""
        return [describe(n) for n in _views(self._tree())]

    def _tree(self) -> dict[str, Any]:
        tree = swaymsg(self._where, "-t", "get_tree")
        assert isinstance(tree, dict)
        return tree

    def at(self, x: int, y: int) -> WindowInfo:
        """The visible window containing the layout point (x, y); floating ones first."""
        try:
            views = [n for n in _views(self._tree()) if n.get("visible")]
        except WaylandError as exc:
            log.debug("window lookup at (%d, %d) failed: %s", x, y, exc)
            return UNKNOWN
        for node in sorted(views, key=lambda n: n.get("type") != "floating_con"):
            info = describe(node)
            assert info.box is not None
            left, top, width, height = info.box
            if left <= x < left + width and top <= y < top + height:
                return info
        return UNKNOWN

    def focused(self) -> WindowInfo:
        """The window that receives keys now."""
        try:
            return focused_window(self._where) or UNKNOWN
        except WaylandError as exc:
            log.debug("focus lookup failed: %s", exc)
            return UNKNOWN

    def activate(self, window_id: int) -> None:
        """Focus window ``window_id`` (sway raises and focuses it; an error if it is gone)."""
        with self._lock:
            swaymsg(self._where, f"[con_id={int(window_id)}] focus")

    def close(self) -> None:
        """Nothing held open: each lookup is one IPC request."""
