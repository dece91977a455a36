"""The accessibility tree as a second observation, beside the screenshot.

:class:`ElementView` belongs to one desktop: each step :meth:`ElementView.look` reads the
tree of the focused window (the reader's time limit applies), keeps it as the step's tree
(its ids are what ``click_element`` and friends name until the next look) and returns the
observation with the tree's text (``screenshot+tree``) or with numbered boxes drawn on the
screenshot and a shorter legend (``screenshot+marks``). When the bus is absent or the
window publishes nothing, the observation is the screenshot alone and a note says so once
(per window, so a later window that does publish is still seen). Given the last step's
pointer targets, a target in a window other than the focused one has that window's tree
read and shown too (same time limit and pruning; its ids follow on).

Bounds are shown in the screenshot's pixel space (what the model's coordinates mean).

On Wayland (``window_relative``) a client does not know where its window is: GTK 3 under
sway reports its frame at 0,0 with the window's size wherever sway put it (measured on
sway 1.7, on a scale-1 and a scale-2 output, tiled and floating). Such a tree is moved by
the window's origin as the compositor reports it (:func:`placed_in_window`), only when
the frame's size is the window's; otherwise the read fails in one line and no element is
placed. Before a pointer click an element whose window has moved since counts as covered:
the tools use its accessible action, never a guessed place.
"""

from __future__ import annotations

import dataclasses
import io
import logging
import threading
from collections.abc import Sequence
from typing import Literal

from PIL import ImageDraw

from jarvis.desktop.a11y.bus import A11yError
from jarvis.desktop.a11y.reader import A11yReader
from jarvis.desktop.a11y.tree import Element, Tree
from jarvis.desktop.screen import Observation, Screen
from jarvis.desktop.windows import WindowInfo, Windows
from jarvis.desktop.wlroots.windows import WlWindows

log = logging.getLogger(__name__)

ObservationKind = Literal["screenshot", "screenshot+tree", "screenshot+marks"]
UNDER_TARGET = "Accessibility tree (the window under the last pointer target)"
MARK_COLOURS = ("#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#008080")
SIZE_SLACK = 2


def placed_in_window(tree: Tree, window: tuple[int, int, int, int]) -> Tree:
    """``tree``, read with window-relative coordinates, placed on the screen by the
    origin of ``window`` (x, y, width, height); A11yError when its frame is not the
    window's own (not at 0,0, or of another size): then nobody knows where it is."""
    x, y, width, height = window
    fx, fy, fw, fh = tree.box
    if (fx, fy) != (0, 0) or abs(fw - width) > SIZE_SLACK or abs(fh - height) > SIZE_SLACK:
        raise A11yError(
            f"the window reports its elements neither on the screen nor in itself (its "
            f"frame {fw}x{fh} at {fx},{fy}, the window {width}x{height}): their places "
            "are unknown"
        )

    def moved(box: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
        return box[0] + x, box[1] + y, box[2], box[3]

    elements = [
        dataclasses.replace(
            e,
            bounds=moved(e.bounds),
            extent=moved(e.extent) if e.extent is not None else None,
            offset=(x, y),
        )
        for e in tree.elements
    ]
    return dataclasses.replace(tree, elements=elements, box=moved(tree.box))


class ElementView:
    """The step's accessibility tree on one desktop (thread-safe)."""

    def __init__(
        self,
        reader: A11yReader,
        windows: Windows | WlWindows,
        screen: Screen,
        kind: ObservationKind = "screenshot+tree",
        max_chars: int = 6000,
        window_relative: bool = False,
    ) -> None:
        self.reader = reader
        self.windows = windows
        self.window_relative = window_relative
        """Toolkits may report window-relative coordinates (a Wayland desktop)."""
        self.screen = screen
        self.kind = kind
        self.max_chars = max_chars
        self.tree: Tree | None = None
        """The first of ``trees``: the focused window's when it publishes one."""
        self.trees: list[Tree] = []
        """Every tree read this step: the focused window's, then those under the points."""
        self._said: set[str] = set()
        self._lock = threading.Lock()

    def read(self, point: tuple[int, int] | None = None) -> tuple[Tree | None, str]:
        """The tree of the focused window, or of the window under the screen point
        ``point`` (None when there is none), and why there is none."""
        window = self.windows.focused() if point is None else self.windows.at(*point)
        return self._read(window)

    def _read(self, window: WindowInfo) -> tuple[Tree | None, str]:
        try:
            tree = self.reader.read(window.box, window.title)
            if tree is None and self.window_relative and window.box is not None:
                _, _, width, height = window.box
                relative = self.reader.read((0, 0, width, height), window.title)
                tree = placed_in_window(relative, window.box) if relative else None
        except A11yError as exc:
            return None, f"no accessibility tree ({exc}): the screenshot alone"
        if tree is None or not tree.elements:
            return None, (f"{window.label()} publishes no accessibility tree: the screenshot alone")
        return dataclasses.replace(tree, window_id=window.id), ""

    def _under(self, points: Sequence[tuple[int, int]], focused: WindowInfo) -> list[Tree]:
        """The trees of the windows under ``points`` (model space) other than the focused
        one, each read once with the reader's time limit and pruning."""
        trees: list[Tree] = []
        seen = {focused.id}
        for mx, my in points:
            try:
                x, y = self.screen.to_screen(mx, my)
            except ValueError:
                continue  # not on this monitor
            window = self.windows.at(x, y)
            if not window.known or window.id in seen:
                continue
            seen.add(window.id)
            tree, why = self._read(window)
            if tree is not None:
                trees.append(tree)
            else:
                log.debug("no tree under (%d, %d): %s", mx, my, why)
        return trees

    def look(self, observation: Observation, points: Sequence[tuple[int, int]] = ()) -> Observation:
        """``observation`` with this step's tree added; the tree is kept for the tools.

        ``points`` (model space, e.g. the last step's pointer targets): where one lies in a
        window other than the focused one, that window's tree is read and shown too, its
        ids following the focused window's (unique within the step)."""
        focused = self.windows.focused()
        tree, why = self._read(focused)
        trees = [tree] if tree is not None else []
        for other in self._under(points, focused):
            if trees and other.box == trees[0].box:
                continue  # the same frame found again
            first = sum(len(t.elements) for t in trees) + 1
            trees.append(other.renumbered(first))
        with self._lock:
            self.trees = trees
            self.tree = trees[0] if trees else None
        if not trees:
            key = why.split(":")[0]
            if key in self._said:
                return observation
            self._said.add(key)
            return dataclasses.replace(observation, tree=f"({why}.)")
        shown: list[Tree] = []
        for one in trees:
            kept = [m for e in one.elements if (m := self._in_model(e)) is not None]
            shown.append(dataclasses.replace(one, elements=kept))
        parts: list[str] = []
        budget = self.max_chars
        for n, one in enumerate(shown):
            if parts and budget < 200:
                parts.append(f"({len(shown) - n} more windows' trees left out: size cap)")
                break
            what = "Accessibility tree" if n == 0 and tree is not None else UNDER_TARGET
            part = one.render(budget, what)
            parts.append(part)
            budget -= len(part) + 1
        text = "\n".join(parts)
        if self.kind == "screenshot+marks":
            every = [e for one in shown for e in one.elements]
            observation = self._marked(observation, every)
            text = (
                f"{text}\n(The numbered boxes on the screenshot are these elements: "
                "box n is element en.)"
            )
        seconds = sum(t.seconds for t in trees)
        return dataclasses.replace(observation, tree=text, tree_seconds=seconds)

    def element(self, element_id: str) -> Element:
        """The element ``element_id`` of this step's trees (real screen bounds); KeyError
        with the reason when there is no such element."""
        with self._lock:
            trees = self.trees
        if not trees:
            raise KeyError("there is no accessibility tree this step")
        for tree in trees:
            found = tree.by_id.get(element_id.strip())
            if found is not None:
                return found
        raise KeyError(f"no element {element_id!r} in this step's tree")

    def window_of(self, element: Element) -> int:
        """The X top-level window of this step's tree that holds ``element`` (0: none)."""
        with self._lock:
            trees = self.trees
        return next((t.window_id for t in trees if t.by_id.get(element.id) is element), 0)

    def covered(self, element: Element) -> bool:
        """Whether another top-level window lies over ``element``'s centre now (a click
        there would land in that window, not on the element); the application's own
        pop-up that draws the element is no cover."""
        mine = self.window_of(element)
        if not mine:
            return False
        if element.offset != (0, 0) and self._origin(mine) != element.offset:
            return True  # its window moved since the read: its place is not known now
        on_top = self.windows.at(*element.center)
        if not on_top.known or on_top.id == mine:
            return False
        return not self._drawn_in(element, mine, on_top)

    def _origin(self, window_id: int) -> tuple[int, int] | None:
        """Where window ``window_id`` is now (compositors that list their windows)."""
        listed = self.windows.list() if isinstance(self.windows, WlWindows) else []
        found = [w.box for w in listed if w.id == window_id and w.box is not None]
        return (found[0][0], found[0][1]) if found else None

    def _drawn_in(self, element: Element, mine: int, on_top: WindowInfo) -> bool:
        """Whether ``on_top`` is where ``element`` is drawn though the tree is ``mine``'s:
        a pop-up (override-redirect) window of the same X client that holds the element's
        bounds, e.g. a Qt menu whose items the main window's tree lists."""
        x, y, w, h = element.bounds
        bx, by, bw, bh = on_top.box or (0, 0, 0, 0)
        if not (bx - 2 <= x and y >= by - 2 and x + w <= bx + bw + 2 and y + h <= by + bh + 2):
            return False
        try:
            display = self.windows.where.open()  # type: ignore[union-attr]
        except Exception:  # no X display to ask (Wayland has no such pop-ups): a cover
            return False
        try:
            mask = int(display.display.info.resource_id_mask)
            popup = display.create_resource_object("window", on_top.id).get_attributes()
            same_client = on_top.id & ~mask == mine & ~mask
            return same_client and bool(popup.override_redirect)
        except Exception:  # the window went away meanwhile
            return False
        finally:
            display.close()

    def _in_model(self, element: Element) -> Element | None:
        """``element`` with its bounds in the screenshot's space, clipped to the screen;
        None when it is off the screen."""
        ox, oy = self.screen.origin
        size = self.screen.size
        x, y, w, h = element.bounds
        x1, y1 = max(x, ox), max(y, oy)
        x2, y2 = min(x + w, ox + size.width) - 1, min(y + h, oy + size.height) - 1
        if x2 < x1 or y2 < y1:
            return None
        (mx1, my1), (mx2, my2) = self.screen.to_model(x1, y1), self.screen.to_model(x2, y2)
        return dataclasses.replace(element, bounds=(mx1, my1, mx2 - mx1 + 1, my2 - my1 + 1))

    def _marked(self, observation: Observation, elements: list[Element]) -> Observation:
        image = observation.image.copy().convert("RGB")
        sx = image.width / observation.model_size.width
        sy = image.height / observation.model_size.height
        draw = ImageDraw.Draw(image)
        for n, element in enumerate(elements):
            x, y, w, h = element.bounds
            box = (x * sx, y * sy, (x + w) * sx - 1, (y + h) * sy - 1)
            colour = MARK_COLOURS[n % len(MARK_COLOURS)]
            draw.rectangle(box, outline=colour, width=2)
            label = element.id[1:]
            tw = 7 * len(label) + 4
            draw.rectangle((box[0], box[1], box[0] + tw, box[1] + 12), fill=colour)
            draw.text((box[0] + 2, box[1]), label, fill="white")
        out = io.BytesIO()
        fmt = "PNG" if observation.media_type == "image/png" else "JPEG"
        image.save(out, format=fmt)
        return dataclasses.replace(observation, image=image, data=out.getvalue())
