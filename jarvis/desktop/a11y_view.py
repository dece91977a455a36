"""The accessibility tree as a second observation, beside the screenshot.

:class:`ElementView` belongs to one desktop: each step :meth:`ElementView.look` reads the
tree of the focused window (the reader's time limit applies), keeps it as the step's tree
(its ids are what ``click_element`` and friends name until the next look) and returns the
observation with the tree's text (``screenshot+tree``) or with numbered boxes drawn on the
screenshot and a shorter legend (``screenshot+marks``). When the bus is absent or the
window publishes nothing, the observation is the screenshot alone and a note says so once
(per window, so a later window that does publish is still seen).

Bounds are shown in the screenshot's pixel space (what the model's coordinates mean).
"""

from __future__ import annotations

import dataclasses
import io
import logging
import threading
from typing import Literal

from PIL import ImageDraw

from jarvis.desktop.a11y import A11yReader, Element, Tree
from jarvis.desktop.a11y_bus import A11yError
from jarvis.desktop.screen import Observation, Screen
from jarvis.desktop.windows import Windows

log = logging.getLogger(__name__)

ObservationKind = Literal["screenshot", "screenshot+tree", "screenshot+marks"]
MARK_COLOURS = ("#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#008080")


class ElementView:
    """The step's accessibility tree on one desktop (thread-safe)."""

    def __init__(
        self,
        reader: A11yReader,
        windows: Windows,
        screen: Screen,
        kind: ObservationKind = "screenshot+tree",
        max_chars: int = 6000,
    ) -> None:
        self.reader = reader
        self.windows = windows
        self.screen = screen
        self.kind = kind
        self.max_chars = max_chars
        self.tree: Tree | None = None
        self._said: set[str] = set()
        self._lock = threading.Lock()

    def read(self) -> tuple[Tree | None, str]:
        """The focused window's tree (None when there is none) and why there is none."""
        window = self.windows.focused()
        try:
            tree = self.reader.read(window.box, window.title)
        except A11yError as exc:
            return None, f"no accessibility tree ({exc}): the screenshot alone"
        if tree is None or not tree.elements:
            return None, (f"{window.label()} publishes no accessibility tree: the screenshot alone")
        return tree, ""

    def look(self, observation: Observation) -> Observation:
        """``observation`` with this step's tree added; the tree is kept for the tools."""
        tree, why = self.read()
        with self._lock:
            self.tree = tree
        if tree is None:
            key = why.split(":")[0]
            if key in self._said:
                return observation
            self._said.add(key)
            return dataclasses.replace(observation, tree=f"({why}.)")
        shown = [m for e in tree.elements if (m := self._in_model(e)) is not None]
        model_tree = dataclasses.replace(tree, elements=shown)
        text = model_tree.render(self.max_chars)
        if self.kind == "screenshot+marks":
            observation = self._marked(observation, model_tree)
            text = (
                f"{text}\n(The numbered boxes on the screenshot are these elements: "
                "box n is element en.)"
            )
        return dataclasses.replace(observation, tree=text, tree_seconds=tree.seconds)

    def element(self, element_id: str) -> Element:
        """The element ``element_id`` of this step's tree (real screen bounds); KeyError
        with the reason when there is no such element."""
        with self._lock:
            tree = self.tree
        if tree is None:
            raise KeyError("there is no accessibility tree this step")
        found = tree.by_id.get(element_id.strip())
        if found is None:
            raise KeyError(f"no element {element_id!r} in this step's tree")
        return found

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

    def _marked(self, observation: Observation, tree: Tree) -> Observation:
        image = observation.image.copy().convert("RGB")
        sx = image.width / observation.model_size.width
        sy = image.height / observation.model_size.height
        draw = ImageDraw.Draw(image)
        for n, element in enumerate(tree.elements):
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
