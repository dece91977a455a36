"""The accessibility tree on a wlroots desktop (sway 1.7, headless, two outputs).

Measured first: GTK 3 under sway reports its frame at 0,0 with the window's size, and
every element relative to it, wherever sway put the window (here on the scale-2 output at
1280,0). The wlroots desktop places such a tree by the window's origin as sway reports
it, so the element tools click where the element is; a frame that is not the window's
own is refused in one line, and an element whose window moved since the read is never
clicked by its old place. Qt 5 on Wayland (featherpad, through qtwayland5) does the
same."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jarvis.config import Settings
from jarvis.desktop.a11y.bus import A11yError
from jarvis.desktop.a11y.session import A11ySession, can_start
from jarvis.desktop.a11y.tree import Element, Tree
from jarvis.desktop.a11y.view import placed_in_window
from jarvis.desktop.wlroots.desktop import WlrootsDesktop
from jarvis.desktop.wlroots.session import WaylandDisplay, swaymsg
from jarvis.safety.wayland_sandbox import PrivateSway
from jarvis.tools.computer import build_registry
from jarvis.tools.context import ToolContext
from tests.a11yseen import Seen, find
from tests.wayland import needs_sway, start_sway, wait_window

FILE_MENU = (0, 0, 40, 26)  # mousepad's File menu in its window (GTK 3, default theme)


def _tree(box: tuple[int, int, int, int]) -> Tree:
    element = Element("e1", ("app", "/a"), "push button", "OK", frozenset(), (10, 20, 30, 40))
    return Tree("w", [element], 1, 0.0, box)


@pytest.mark.parametrize(
    ("frame", "window", "placed"),
    [
        ((0, 0, 800, 450), (1280, 0, 800, 450), (1290, 20, 30, 40)),
        ((0, 0, 801, 449), (1280, 0, 800, 450), (1290, 20, 30, 40)),  # rounding at scale 2
        ((0, 0, 1024, 720), (1168, -135, 1024, 720), (1178, -115, 30, 40)),  # floating
    ],
)
def test_a_window_relative_tree_is_placed_by_the_window(
    frame: tuple[int, int, int, int],
    window: tuple[int, int, int, int],
    placed: tuple[int, int, int, int],
) -> None:
    tree = placed_in_window(_tree(frame), window)
    assert tree.elements[0].bounds == placed
    assert tree.elements[0].offset == window[:2]
    assert tree.box[:2] == window[:2]


@pytest.mark.parametrize(
    ("frame", "window"),
    [
        ((0, 0, 860, 510), (1280, 0, 800, 450)),  # a frame with shadows: not the window
        ((30, 30, 800, 450), (1280, 0, 800, 450)),  # neither relative nor on the screen
    ],
)
def test_a_frame_that_is_not_the_window_is_refused_in_one_line(
    frame: tuple[int, int, int, int], window: tuple[int, int, int, int]
) -> None:
    with pytest.raises(A11yError, match="their places are unknown") as caught:
        placed_in_window(_tree(frame), window)
    assert "\n" not in str(caught.value)


@pytest.fixture(scope="module")
def sway() -> Iterator[PrivateSway]:
    with start_sway() as running:
        yield running


@pytest.fixture(scope="module")
def session(sway: PrivateSway) -> Iterator[A11ySession]:
    if can_start():
        pytest.skip(str(can_start()))
    assert sway.where is not None
    started = A11ySession({"WAYLAND_DISPLAY": sway.where.socket})
    yield started
    started.stop()


@pytest.fixture(scope="module")
def mousepad(
    sway: PrivateSway, session: A11ySession, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, object]]:
    """mousepad on the scale-2 output, publishing on the session's accessibility bus
    (run as this process's user: the bus is this user's), with a home of its own (it
    keeps an autosave and asks to restore it after an unclean end)."""
    assert sway.where is not None
    swaymsg(sway.where, "focus output HEADLESS-2")
    home = tmp_path_factory.mktemp("mousepad-home")
    env = {**session.app_env(home), "WAYLAND_DISPLAY": sway.where.socket}
    for name, sub in (("CONFIG", ".config"), ("DATA", ".local/share"), ("CACHE", ".cache")):
        env[f"XDG_{name}_HOME"] = str(home / sub)
    env["GDK_BACKEND"] = "wayland"
    # no dconf: the session bus would start dconf-service with this process's HOME, and
    # the killed mousepad's session (an autosave to restore) would land in the person's
    # settings, where every later mousepad on the machine asks to restore it
    env["GSETTINGS_BACKEND"] = "memory"
    env.pop("DISPLAY", None)
    env["XDG_RUNTIME_DIR"] = str(sway.runtime_dir.parent)
    app = subprocess.Popen(
        ["mousepad"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    # tiled over the whole output (sway places it in steps: wait for the last one)
    yield wait_window(sway, lambda n: n.get("app_id") == "mousepad" and n["rect"]["x"] == 1280)
    os.killpg(app.pid, 15)
    app.wait(timeout=15)


@pytest.fixture(scope="module")
def desktop(sway: PrivateSway, session: A11ySession) -> Iterator[WlrootsDesktop]:
    assert sway.where is not None
    where = WaylandDisplay(sway.where.socket, sway.where.swaysock, session.address)
    settings = Settings(monitor=0, observation="screenshot+tree", tree_timeout_ms=5000)
    with WlrootsDesktop.open(settings, where) as opened:
        yield opened


def _file_menu(desktop: WlrootsDesktop) -> Element:
    assert desktop.elements is not None
    deadline = time.monotonic() + 15
    while True:
        desktop.elements.look(desktop.screen.capture())
        tree = desktop.elements.tree
        found = [e for e in (tree.elements if tree else []) if e.name == "File"]
        if found:
            return found[0]
        assert time.monotonic() < deadline, "mousepad published no File menu"
        time.sleep(0.1)


@needs_sway
def test_gtk_elements_are_placed_where_sway_put_the_window(
    sway: PrivateSway, desktop: WlrootsDesktop, mousepad: dict[str, object]
) -> None:
    rect: dict[str, int] = mousepad["rect"]  # type: ignore[assignment]
    assert rect["x"] == 1280  # on the scale-2 output
    menu = _file_menu(desktop)
    x, y, w, h = FILE_MENU
    assert menu.bounds == (rect["x"] + x, rect["y"] + y, w, h)
    assert desktop.elements is not None
    assert desktop.elements.reader.check(menu) is None  # the live tree agrees
    assert not desktop.elements.covered(menu)
    desktop.input.click(*menu.center)  # a click at its place opens the menu
    deadline = time.monotonic() + 10
    while "selected" not in desktop.elements.reader.states(menu):
        assert time.monotonic() < deadline, "the click did not open the File menu"
        time.sleep(0.05)
    desktop.input.press_key("escape")


@needs_sway
def test_an_element_whose_window_moved_is_never_clicked_by_its_old_place(
    sway: PrivateSway, desktop: WlrootsDesktop, mousepad: dict[str, object]
) -> None:
    assert sway.where is not None and desktop.elements is not None
    menu = _file_menu(desktop)
    swaymsg(sway.where, "[app_id=mousepad] move to output HEADLESS-1")
    try:
        deadline = time.monotonic() + 10
        while not desktop.elements.covered(menu):
            assert time.monotonic() < deadline, "the moved window's element still counts"
            time.sleep(0.05)
        moved = _file_menu(desktop)  # a new look places it anew
        assert moved.bounds[0] < 1280 and not desktop.elements.covered(moved)
    finally:
        swaymsg(sway.where, "[app_id=mousepad] move to output HEADLESS-2")


@needs_sway
def test_the_element_tools_click_and_set_values_in_gtk(
    sway: PrivateSway, desktop: WlrootsDesktop, mousepad: dict[str, object]
) -> None:
    """click_element and set_value as the agent runs them: the window's focus is checked
    and given through sway, the text arrives in the text view."""
    assert sway.where is not None
    settings = Settings(observation="screenshot+tree")
    ctx = ToolContext.for_task(
        settings, "t-wl-a11y", screen=desktop.screen, input=desktop.input,
        elements=desktop.elements,
    )  # fmt: skip
    seen = Seen(desktop, build_registry(settings, presets=[]), ctx)  # type: ignore[arg-type]
    swaymsg(sway.where, "[app_id=mousepad] focus")
    tree = seen.until(
        lambda t: any(e.role == "text" and "editable" in e.states for e in t.elements)
    )
    editor = next(e for e in tree.elements if e.role == "text" and "editable" in e.states)
    text = "set on Wayland: Привет 漢字"
    result = seen.run("set_value", {"id": editor.id, "value": text})
    assert result.ok, result
    seen.until(lambda t: any(e.text == text for e in t.elements if e.role == "text"))
    clicked = seen.run("click_element", {"id": find(seen.until(bool), "menu", "Edit").id})
    assert clicked.ok, clicked
    assert clicked.data["via"] == "pointer"  # placed on the screen, not only its action
    desktop.input.press_key("escape")


@needs_sway
def test_qt_elements_are_placed_and_clicked_too(
    sway: PrivateSway,
    session: A11ySession,
    desktop: WlrootsDesktop,
    mousepad: dict[str, object],
    tmp_path: Path,
) -> None:
    """featherpad (Qt 5 on Wayland through qtwayland5) reports window-relative bounds as
    GTK does; beside mousepad on the scale-2 output it is not at the output's origin."""
    assert sway.where is not None and desktop.elements is not None
    swaymsg(sway.where, "focus output HEADLESS-2")
    env = {**session.app_env(tmp_path), "WAYLAND_DISPLAY": sway.where.socket}
    env.update(QT_QPA_PLATFORM="wayland", XDG_RUNTIME_DIR=str(tmp_path))
    env.pop("DISPLAY", None)
    app = subprocess.Popen(
        ["featherpad"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        node = wait_window(sway, lambda n: n.get("pid") == app.pid and n["rect"]["x"] > 1280)
        x, y = node["rect"]["x"], node["rect"]["y"]
        deadline = time.monotonic() + 15
        while True:
            desktop.elements.look(desktop.screen.capture())
            tree = desktop.elements.tree
            items = [e for e in (tree.elements if tree else []) if e.name == "Edit"]
            if items and items[0].role == "menu item":
                break
            assert time.monotonic() < deadline, "featherpad published no Edit menu"
            time.sleep(0.1)
        menu = items[0]
        assert menu.offset == (x, y)
        bx, by, bw, _ = menu.bounds
        assert x <= bx and bx + bw <= x + node["rect"]["width"] and y <= by < y + 40
        assert desktop.elements.reader.check(menu) is None
        assert not desktop.elements.covered(menu)
        desktop.input.click(*menu.center)  # a click at its place opens the menu under it
        deadline = time.monotonic() + 10
        while True:
            desktop.elements.look(desktop.screen.capture())
            tree = desktop.elements.tree
            opened = [e for e in (tree.elements if tree else []) if e.name == "Select All"]
            if opened and "focused" in desktop.elements.reader.states(menu):
                break
            assert time.monotonic() < deadline, "the click did not open the Edit menu"
            time.sleep(0.05)
        assert opened[0].bounds[0] == bx and opened[0].bounds[1] > by  # the menu, below it
        desktop.input.press_key("escape")
    finally:
        os.killpg(app.pid, 15)
        app.wait(timeout=15)
