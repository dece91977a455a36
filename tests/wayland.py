"""A private headless sway for tests, and Wayland-native test windows on it.

``start_sway(outputs)`` is a context manager yielding a running
:class:`~jarvis.safety.wayland_sandbox.PrivateSway` (run as the unprivileged ``jarvis-wl``
when the tests run as root, with its own 0700 runtime dir); the default is two outputs
side by side, HEADLESS-1 at scale 1 (1280x720) and HEADLESS-2 at scale 2 (1600x900
device pixels, 800x450 logical). :class:`Wev` is ``wev`` (an event viewer) opened on one
output: it reports every pointer event with surface coordinates, so a test reads where a
click landed. :func:`wait_window` waits for a client's window in sway's tree.
"""

from __future__ import annotations

import queue
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from jarvis.desktop.wlroots.session import swaymsg
from jarvis.safety.wayland_sandbox import OutputSpec, PrivateSway

TWO_OUTPUTS = [OutputSpec(1280, 720, 1.0, 0, 0), OutputSpec(1600, 900, 2.0, 1280, 0)]
WAIT_S = 15.0

needs_sway = pytest.mark.skipif(
    not all(shutil.which(c) for c in ("sway", "grim", "wtype", "foot", "wev", "wl-copy")),
    reason="sway, grim, wtype, foot, wev and wl-clipboard are needed (make system)",
)


@contextmanager
def start_sway(outputs: list[OutputSpec] | None = None) -> Iterator[PrivateSway]:
    with PrivateSway(outputs or TWO_OUTPUTS) as sway:
        yield sway


def _nodes(tree: Any) -> Iterator[dict[str, Any]]:
    yield tree
    for child in [*tree.get("nodes", []), *tree.get("floating_nodes", [])]:
        yield from _nodes(child)


def wait_window(sway: PrivateSway, match: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The first window in sway's tree that ``match`` accepts, once it is mapped with a
    size (asked again until it is; the map is the compositor's signal)."""
    assert sway.where is not None
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        for node in _nodes(swaymsg(sway.where, "-t", "get_tree")):
            if node.get("pid") and match(node) and node["rect"]["width"] > 0:
                return node
        time.sleep(0.02)
    raise AssertionError(f"no window appeared in {WAIT_S} s")


def surface_origin(node: dict[str, Any]) -> tuple[int, int]:
    """Where the window's surface (0, 0) is in the layout (logical pixels)."""
    return node["rect"]["x"] + node["window_rect"]["x"], node["rect"]["y"] + node["window_rect"][
        "y"
    ]


_MOTION = re.compile(r"wl_pointer\] (?:enter|motion): .*x, y: ([-\d.]+), ([-\d.]+)")
_BUTTON = re.compile(r"wl_pointer\] button: .*button: (\d+) .*state: (\d)")
_AXIS = re.compile(r"wl_pointer\] axis: .*axis: (\d) .*value: ([-\d.]+)")


class Wev:
    """``wev`` on ``output``: its window's origin and the pointer events it reports."""

    def __init__(self, sway: PrivateSway, output: str) -> None:
        assert sway.where is not None
        self.sway = sway
        swaymsg(sway.where, f"focus output {output}")
        self.proc = sway.run_app(["stdbuf", "-oL", "wev"])
        pid = self.proc.pid
        self.node = wait_window(sway, lambda n: n.get("pid") == pid)
        self.origin = surface_origin(self.node)
        self._lines: queue.Queue[str] = queue.Queue()
        self.position: tuple[float, float] | None = None
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        width, height = self.node["rect"]["width"], self.node["rect"]["height"]
        sized = re.compile(rf"xdg_toplevel\] configure: width: {width}; height: {height}")
        self.next_event(sized)  # wev has its tiled size: it draws at it next

    def __enter__(self) -> Wev:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End wev and wait until sway has unmapped its window (the next one tiles alone)."""
        self.proc.terminate()
        self.proc.wait(timeout=WAIT_S)
        pid = self.proc.pid
        deadline = time.monotonic() + WAIT_S
        while any(n.get("pid") == pid for n in _nodes(swaymsg(self.sway.where, "-t", "get_tree"))):
            assert time.monotonic() < deadline, "wev's window stayed after it ended"
            time.sleep(0.02)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self._lines.put(raw.decode(errors="replace"))

    def next_event(self, pattern: re.Pattern[str]) -> re.Match[str]:
        """The next line matching ``pattern`` (tracking the pointer's position on the way)."""
        deadline = time.monotonic() + WAIT_S
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                break
            self.seen.append(line.rstrip())
            if moved := _MOTION.search(line):
                self.position = float(moved[1]), float(moved[2])
            if found := pattern.search(line):
                return found
        tail = "\n".join(self.seen[-25:])
        raise AssertionError(f"wev reported no {pattern.pattern!r} in {WAIT_S} s; last:\n{tail}")

    def next_press(self) -> tuple[int, tuple[float, float]]:
        """The next button press: its button code and where (surface coordinates)."""
        while True:
            found = self.next_event(_BUTTON)
            if found[2] == "1":
                assert self.position is not None
                return int(found[1]), self.position

    def next_axis(self) -> tuple[int, float]:
        found = self.next_event(_AXIS)
        return int(found[1]), float(found[2])
