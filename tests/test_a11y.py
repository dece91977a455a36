"""The accessibility tree beside the screenshot, on Xvfb with real applications.

mousepad (GTK 3), featherpad (Qt 5) and a Chromium page on a loopback server publish
their widgets on a private accessibility bus; the tests read the tree through a Desktop
with ``observation = screenshot+tree``, check its bounds against X window geometry, the
screen's pixels and the page's own rectangles, and act through ``click_element``,
``focus_element`` and ``set_value``. The Tk test app publishes nothing: its observation
is the screenshot alone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from jarvis.config import Settings
from jarvis.desktop.a11y import A11yReader, Element, Tree
from jarvis.desktop.a11y.session import PUBLISH_ENV, A11ySession
from jarvis.desktop.a11y.view import MARK_COLOURS
from jarvis.desktop.desktop import Desktop
from jarvis.tools.computer import build_registry
from jarvis.tools.results import INVALID_PARAMS
from tests.a11yapps import EventPage, publishing_env, start_chromium
from tests.a11yseen import Seen, find, seen_on
from tests.realapps import App, focus, grab
from tests.tkdriver import TkApp
from tests.xserver import Xvfb


@pytest.fixture(scope="module")
def session(xserver: Xvfb) -> Iterator[A11ySession]:
    with A11ySession(xserver.env()) as started:
        yield started


@pytest.fixture
def seen(xserver: Xvfb, session: A11ySession, tmp_path: Path) -> Iterator[Seen]:
    with seen_on(xserver, session, tmp_path) as opened:
        yield opened


def test_the_element_tools_are_offered_only_with_a_tree(tmp_path: Path) -> None:
    plain = build_registry(Settings(data_dir=tmp_path), presets=[]).names
    assert "click_element" not in plain
    marks = build_registry(Settings(data_dir=tmp_path, observation="screenshot+marks"), [])
    assert {"click_element", "focus_element", "set_value"} <= set(marks.names)


# --- mousepad (GTK 3) ------------------------------------------------------------------
@pytest.fixture(scope="class")
def mousepad(
    xserver: Xvfb, session: A11ySession, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[App]:
    work = tmp_path_factory.mktemp("mousepad")
    app = App.start("mousepad", work, publishing_env(work, xserver.env(), session))
    try:
        yield app
    finally:
        app.close()


@pytest.mark.usefixtures("mousepad")
class TestMousepad:
    def test_tree_lists_the_menus_and_the_text(self, seen: Seen, mousepad: App) -> None:
        focus(mousepad.window)
        text, tree = seen.look()
        assert tree is not None
        assert tree.window.endswith('Mousepad"')
        for menu in ("File", "Edit", "Search", "View", "Document", "Help"):
            assert f'menu "{menu}"' in text
        editor = next(e for e in tree.elements if e.role == "text" and "editable" in e.states)
        assert editor.text.startswith("line 1\nline 2")
        assert tree.visited > len(tree.elements)  # pruned
        # bounds shown in the screenshot's space: 1920x1080 seen as 1280x720
        x, y, _w, _h = editor.bounds
        shown = seen.desktop.screen.to_model(x, y)
        assert f"@{shown[0]},{shown[1]} " in text

    def test_menu_and_menu_item_clicks_land_and_stale_ids_are_refused(
        self, seen: Seen, mousepad: App
    ) -> None:
        focus(mousepad.window)
        _, tree = seen.look()
        assert tree is not None
        file_menu = find(tree, "menu", "File")
        assert seen.run("click_element", {"id": file_menu.id}).ok
        tree = seen.until(lambda t: any(e.name == "New Window" for e in t.elements))
        new = find(tree, "menu item", "New")
        popup = popup_box(seen, mousepad)  # the X window the menu is drawn in
        assert popup is not None
        assert abs(new.bounds[0] - popup[0]) <= 2 and abs(new.bounds[1] - popup[1]) <= 2
        assert abs(new.bounds[2] - popup[2]) <= 2
        quit_item = find(tree, "menu item", "Quit")
        assert abs(quit_item.bounds[1] + quit_item.bounds[3] - (popup[1] + popup[3])) <= 2
        tabs_before = sum(e.role == "page tab" for e in tree.elements)
        assert seen.run("click_element", {"id": new.id}).ok  # File > New: a second tab
        # still this step's tree: "Print..." was read while the menu was open; once the
        # menu has closed, its id is stale
        assert popup_box(seen, mousepad, gone=True) is None
        printing = find(tree, "menu item", "Print...")
        stale = seen.run("click_element", {"id": printing.id})
        assert not stale.ok and stale.error is not None
        assert stale.error.code == INVALID_PARAMS
        assert f"element {printing.id} is" in stale.error.message
        tree = seen.until(lambda t: sum(e.role == "page tab" for e in t.elements) >= 2)
        assert tabs_before < 2
        unknown = seen.run("click_element", {"id": "e999"})
        assert unknown.error is not None and unknown.error.code == INVALID_PARAMS

    def test_a_covered_menu_item_is_activated_through_its_action(
        self, seen: Seen, mousepad: App, session: A11ySession
    ) -> None:
        focus(mousepad.window)
        _, tree = seen.look()
        assert tree is not None
        tabs = sum(e.role == "page tab" for e in tree.elements)
        assert seen.run("click_element", {"id": find(tree, "menu", "File").id}).ok
        tree = seen.until(lambda t: any(e.name == "New Window" for e in t.elements))
        new = find(tree, "menu item", "New")
        cover = TkApp.start({"DBUS_SESSION_BUS_ADDRESS": session.address, **PUBLISH_ENV})
        try:  # full screen over the open menu: a click at the item would hit the Tk app
            assert seen.desktop.windows.at(*new.center).id not in (mousepad.window, 0)
            mark = cover.mark()
            result = seen.run("click_element", {"id": new.id})
            assert result.ok and result.data["via"] == "action", result
            assert cover.events("click", since=mark) == []
        finally:
            cover.close()
        assert popup_box(seen, mousepad, gone=True) is None  # the activated menu closed
        focus(mousepad.window)
        seen.until(lambda t: sum(e.role == "page tab" for e in t.elements) == max(tabs, 1) + 1)

    def test_set_value_fills_the_text_view(self, seen: Seen, mousepad: App) -> None:
        focus(mousepad.window)
        _, tree = seen.look()
        assert tree is not None
        editor = next(e for e in tree.elements if e.role == "text" and "editable" in e.states)
        result = seen.run("set_value", {"id": editor.id, "value": "written by set_value"})
        assert result.ok, result
        tree = seen.until(
            lambda t: any(e.text == "written by set_value" for e in t.elements if e.role == "text")
        )
        focused = seen.desktop.windows.focused()
        assert focused.title.startswith("*")  # mousepad marks the document as changed
        no_value = seen.run("set_value", {"id": find(tree, "menu", "Help").id, "value": "x"})
        assert no_value.error is not None and no_value.error.code == INVALID_PARAMS

    @pytest.mark.serial  # a healthy read must end inside 300 ms: not on a starved core
    def test_a_read_of_a_stopped_app_ends_at_its_limit_and_falls_back(
        self, xserver: Xvfb, session: A11ySession, mousepad: App, tmp_path: Path
    ) -> None:
        focus(mousepad.window)
        settings = Settings(data_dir=tmp_path, observation="screenshot+tree", tree_timeout_ms=300)
        with Desktop.open(settings, xserver.where, session_bus=session.address) as desktop:
            view = desktop.elements
            assert view is not None
            assert view.look(desktop.screen.capture()).tree.startswith("Accessibility tree")
            os.kill(mousepad.proc.pid, signal.SIGSTOP)  # it answers no D-Bus call now
            try:
                started = time.monotonic()
                observation = view.look(desktop.screen.capture())
                took = time.monotonic() - started
            finally:
                os.kill(mousepad.proc.pid, signal.SIGCONT)
            assert view.tree is None and observation.data  # the screenshot alone
            assert observation.tree == (
                "(no accessibility tree (the accessibility tree took too long to read): "
                "the screenshot alone.)"
            )
            assert took < 0.3 + 1.0, took  # the limit, plus the screenshot's own work
            deadline = time.monotonic() + 10
            while view.tree is None:  # running again: the tree is back
                view.look(desktop.screen.capture())
                assert time.monotonic() < deadline, "no tree after SIGCONT"
                time.sleep(0.05)


# --- featherpad (Qt) ---------------------------------------------------------------------
@pytest.fixture(scope="class")
def featherpad(
    xserver: Xvfb, session: A11ySession, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[App]:
    work = tmp_path_factory.mktemp("featherpad")
    app = App.start("featherpad", work, publishing_env(work, xserver.env(), session))
    try:
        yield app
    finally:
        app.close()


class TestFeatherpad:
    def test_qt_menu_bounds_and_clicks(self, seen: Seen, featherpad: App) -> None:
        focus(featherpad.window)
        tree = seen.until(lambda t: any(e.name == "File" for e in t.elements))
        assert "Accessibility tree of" in tree.render(6000)
        assert any(e.role == "push button" for e in tree.elements)  # the tool bar
        editor = next(e for e in tree.elements if e.role == "text" and "editable" in e.states)
        assert editor.text.startswith("line 1")
        assert seen.run("click_element", {"id": find(tree, "menu item", "File").id}).ok
        popup = popup_box(seen, featherpad)
        assert popup is not None
        tree = seen.until(lambda t: sum(e.role == "menu item" for e in t.elements) > 8)
        items = [e for e in tree.elements if e.role == "menu item" and e.bounds[1] >= popup[1]]
        assert items, tree.render(6000)
        for item in items:  # every item of the open menu lies inside the menu's X window
            x, y, w, h = item.bounds
            assert popup[0] - 2 <= x and x + w <= popup[0] + popup[2] + 2, (item, popup)
            assert popup[1] - 2 <= y and y + h <= popup[1] + popup[3] + 2, (item, popup)
        seen.desktop.input.press_key("esc")
        assert popup_box(seen, featherpad, gone=True) is None

    def test_qt_bounds_match_the_x_windows_and_the_pixels(
        self, seen: Seen, featherpad: App
    ) -> None:
        tree = open_menu(seen, featherpad, "Options")
        popup = popup_box(seen, featherpad)  # the menu's own X window
        assert popup is not None
        items = sorted(
            (e for e in tree.elements if e.role == "menu item" and e.bounds[1] >= popup[1] - 2),
            key=lambda e: e.bounds[1],
        )
        assert len(items) >= 5, tree.render(6000)
        first, last = items[0].bounds, items[-1].bounds
        assert abs(first[0] - popup[0]) <= 2 and abs(first[1] - popup[1]) <= 2, (first, popup)
        assert abs(last[1] + last[3] - (popup[1] + popup[3])) <= 2, (last, popup)
        assert all(abs(e.bounds[2] - popup[2]) <= 2 for e in items), (items, popup)
        dialog = open_preferences(seen, featherpad, tree)
        box = popup_box(seen, featherpad, title="Preferences")  # the dialog's X window
        assert box is not None
        assert all(abs(a - b) <= 2 for a, b in zip(dialog.box, box, strict=True)), dialog.box
        # Qt's dialog layout keeps one margin on every side: the outermost controls
        # (the tab bar at the top, Help and Close at the bottom) are inset alike
        tabs = find(dialog, "page tab list", "Window").bounds
        helps, close = (find(dialog, "push button", n).bounds for n in ("Help", "Close"))
        insets = (
            helps[0] - box[0],
            box[0] + box[2] - (close[0] + close[2]),
            tabs[1] - box[1],
            box[1] + box[3] - (close[1] + close[3]),
        )
        assert max(insets) - min(insets) <= 2 and 0 <= min(insets) < 40, insets
        # the real screen: each button's outline and the check box's square lie where
        # the tree says (the darkest pixel within 4 px of each reported edge)
        shot = grab(box)
        for control in (find(dialog, "push button", "Close"), find(dialog, "push button", "Help")):
            x, y, w, h = control.bounds
            row, col = shot[y + h // 2 - box[1]], shot[:, x + 4 - box[0]]
            found = (dark_edge(row, box[0], x), dark_edge(col, box[1], y))
            found += (dark_edge(row, box[0], x + w - 1), dark_edge(col, box[1], y + h - 1))
            want = (x, y, x + w - 1, y + h - 1)
            assert all(abs(a - b) <= 2 for a, b in zip(found, want, strict=True)), (control, found)
        x, y, _, h = find(dialog, "check box", "Do not show toolbar").bounds
        assert abs(dark_edge(shot[y + h // 2 - box[1]], box[0], x) - x) <= 2
        seen.desktop.input.press_key("esc")
        assert popup_box(seen, featherpad, gone=True, title="Preferences") is None

    def test_click_element_on_a_qt_checkbox_and_button(self, seen: Seen, featherpad: App) -> None:
        for hidden in (True, False):  # hide the main window's tool bar, then show it again
            dialog = open_preferences(seen, featherpad, open_menu(seen, featherpad, "Options"))
            check = find(dialog, "check box", "Do not show toolbar")
            assert ("checked" in check.states) is not hidden
            result = seen.run("click_element", {"id": check.id})
            assert result.ok and result.data["via"] == "pointer", result
            dialog = seen.until(
                lambda t, h=hidden: any(
                    e.name == "Do not show toolbar" and ("checked" in e.states) is h
                    for e in t.elements
                )
            )
            result = seen.run("click_element", {"id": find(dialog, "push button", "Close").id})
            assert result.ok, result
            assert popup_box(seen, featherpad, gone=True, title="Preferences") is None
            focus(featherpad.window)
            seen.until(
                lambda t, h=hidden: (
                    t.window.endswith('featherpad.txt"')
                    and any(e.name == "New" for e in t.elements) is not h
                )
            )

    def test_controls_scrolled_out_of_view_and_a_closed_combo_list_are_left_out(
        self, seen: Seen, featherpad: App
    ) -> None:
        """Qt keeps the Preferences page's lower check boxes SHOWING and VISIBLE though its
        scroll area shows only the top of the page, and the closed Tab position combo box's
        items SHOWING at 0,0: a click there would land nowhere. Only what is in view is
        listed (cut to the part in view), until the page is scrolled or the combo opened."""
        hidden = ("Tab navigation wraps around", "Do not show a single tab")
        dialog = open_preferences(seen, featherpad, open_menu(seen, featherpad, "Options"))
        page = find(dialog, "panel", "Window Settings")
        assert page.extent is not None and page.extent[3] > page.bounds[3]  # cut
        view = page.bounds  # the scroll area's viewport: above the dialog's buttons
        bottom = view[1] + view[3]
        assert bottom <= find(dialog, "push button", "Help").bounds[1]
        names = {e.name for e in dialog.elements}
        assert not names & set(hidden), dialog.render(6000)
        assert not [e for e in dialog.elements if e.role == "list item"], dialog.render(6000)
        combo = find(dialog, "combo box", "North")  # half in view: its bounds are cut
        assert combo.extent is not None and combo.bounds[1] + combo.bounds[3] == bottom
        for e in dialog.elements:  # nothing on the page is listed beyond the viewport
            if e.bounds[1] > view[1]:
                assert e.bounds[1] + e.bounds[3] <= bottom or e.bounds[1] >= bottom + 10, e
        # the open combo's list is its own pop-up over the scroll area: listed, not cut
        assert seen.run("click_element", {"id": combo.id}).ok  # checked against the live tree
        opened = seen.until(lambda t: any(e.name == "East" for e in t.elements))
        east = find(opened, "list item", "East")
        assert east.extent is None and east.bounds[1] + east.bounds[3] > bottom
        assert abs(east.bounds[0] - combo.bounds[0]) <= 2
        seen.desktop.input.press_key("esc")
        seen.until(
            lambda t: (
                t.window == '"Preferences"' and not any(e.role == "list item" for e in t.elements)
            )
        )
        # scrolled down (the wheel over an empty part of the page), they are in view
        seen.desktop.input.scroll(view[0] + view[2] - 30, view[1] + view[3] // 2, "down", 10)
        moved = seen.until(lambda t: all(any(e.name == n for e in t.elements) for n in hidden))
        wraps = find(moved, "check box", hidden[0])
        assert view[1] <= wraps.bounds[1] and wraps.bounds[1] + wraps.bounds[3] <= bottom
        for state in (True, False):  # a click on it now does what it says, twice
            assert ("checked" in wraps.states) is not state
            assert seen.run("click_element", {"id": wraps.id}).ok
            moved = seen.until(
                lambda t, s=state: any(
                    e.name == hidden[0] and ("checked" in e.states) is s for e in t.elements
                )
            )
            wraps = find(moved, "check box", hidden[0])
        seen.desktop.input.press_key("esc")
        assert popup_box(seen, featherpad, gone=True, title="Preferences") is None


def open_menu(seen: Seen, app: App, menu: str) -> Tree:
    """The tree once ``app``'s menu ``menu`` (a menu bar item) is open."""
    focus(app.window)
    tree = seen.until(lambda t: any(e.name == menu for e in t.elements))
    assert seen.run("click_element", {"id": find(tree, "menu item", menu).id}).ok
    return seen.until(lambda t: sum(e.role == "menu item" for e in t.elements) > 8)


def open_preferences(seen: Seen, app: App, menu: Tree) -> Tree:
    """featherpad's Preferences dialog's tree, opened from the open Options menu: the
    item is drawn in the menu's own X window, so the click is the pointer's."""
    result = seen.run("click_element", {"id": find(menu, "menu item", "Preferences").id})
    assert result.ok and result.data["via"] == "pointer", result
    return seen.until(lambda t: t.window == '"Preferences"' and len(t.elements) > 10)


def dark_edge(line: np.ndarray, start: int, at: int) -> int:
    """The screen coordinate of the darkest pixel within 4 px of ``at`` on ``line`` (a row
    or column of grey pixels that begins at screen coordinate ``start``): a drawn edge."""
    lo = at - 4 - start
    band = line[max(lo, 0) : lo + 9]
    assert band.size and band.min() < np.median(line) - 40, f"no edge drawn near {at}: {band}"
    return start + max(lo, 0) + int(band.argmin())


def popup_box(
    seen: Seen, app: App, gone: bool = False, title: str = ""
) -> tuple[int, int, int, int] | None:
    """The mapped top-level window of ``app`` other than its main window (a menu, or
    the one named ``title``); with ``gone``, None once there is no such window."""
    from Xlib import X
    from Xlib.error import XError

    display = seen.desktop.where.open()
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            found = None
            for child in display.screen().root.query_tree().children:
                try:
                    attrs, geom = child.get_attributes(), child.get_geometry()
                    names = child.get_wm_class() or ("", ""), child.get_wm_name()
                except XError:  # destroyed since the query (a closed menu or dialog)
                    continue
                if child.id == app.window or attrs.map_state != X.IsViewable:
                    continue
                if app.name not in names[0][0].lower() or (title and names[1] != title):
                    continue
                if geom.width > 50 and geom.height > 50:
                    found = (geom.x, geom.y, geom.width, geom.height)
            if (found is None) == gone:
                return found
            time.sleep(0.05)
    finally:
        display.close()
    what = f"the window {title!r}" if title else "the menu window"
    raise AssertionError(f"{what} stayed" if gone else f"{what} did not appear")


# --- Chromium, a page on a loopback server ----------------------------------------------
@pytest.fixture(scope="class")
def page() -> Iterator[EventPage]:
    served = EventPage()
    try:
        yield served
    finally:
        served.close()


@pytest.fixture(scope="class")
def chromium(
    xserver: Xvfb,
    session: A11ySession,
    page: EventPage,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[App]:
    work = tmp_path_factory.mktemp("chromium")
    app = start_chromium(work, publishing_env(work, xserver.env(), session), page.url)
    try:
        yield app
    finally:
        app.close()


def _page_tree(seen: Seen) -> Tree:
    return seen.until(lambda t: any(e.name == "Launch the rocket" for e in t.elements), 20)


class TestChromium:
    def test_bounds_match_the_page_rectangles(
        self, seen: Seen, chromium: App, page: EventPage
    ) -> None:
        focus(chromium.window)
        tree = _page_tree(seen)
        rects = page.rects()
        for role, name, key in (
            ("push button", "Hello", "hello"),
            ("check box", "Agree", "agree"),
            ("entry", "Full name", "name"),
            ("toggle button", "Launch the rocket", "launch"),
        ):
            element = find(tree, role, name)
            left, top, width, height = rects[key]
            want = (rects["dx"] + left, rects["dy"] + top, width, height)
            assert all(abs(a - b) <= 2 for a, b in zip(element.bounds, want, strict=True)), (
                name,
                element.bounds,
                want,
            )

    def test_click_a_button_and_a_checkbox(
        self, seen: Seen, chromium: App, page: EventPage
    ) -> None:
        focus(chromium.window)
        tree = _page_tree(seen)
        assert seen.run("click_element", {"id": find(tree, "push button", "Hello").id}).ok
        page.wait("clicked hello")
        agree = find(tree, "check box", "Agree")
        assert "checked" not in agree.states
        assert seen.run("click_element", {"id": agree.id}).ok
        page.wait("agree true")
        tree = seen.until(lambda t: "checked" in find(t, "check box", "Agree").states)

    def test_set_value_and_focus_fill_the_entry(
        self, seen: Seen, chromium: App, page: EventPage
    ) -> None:
        focus(chromium.window)
        tree = _page_tree(seen)
        entry = find(tree, "entry", "Full name")
        assert seen.run("focus_element", {"id": entry.id}).ok
        seen.until(lambda t: "focused" in find(t, "entry", "Full name").states)
        entry = find(seen.view.tree or tree, "entry", "Full name")
        result = seen.run("set_value", {"id": entry.id, "value": "Ada Lovelace"})
        assert result.ok, result
        text, _ = seen.look()
        assert 'entry "Full name" text="Ada Lovelace"' in text

    def test_a_vanished_element_is_an_error_the_model_sees(
        self, seen: Seen, chromium: App, page: EventPage
    ) -> None:
        focus(chromium.window)
        tree = _page_tree(seen)
        vanish = find(tree, "push button", "Vanish")
        assert seen.run("click_element", {"id": vanish.id}).ok
        page.wait("vanished")
        deadline = time.monotonic() + 5  # the page's accessibility tree follows the DOM
        while seen.view.reader.check(vanish) is None:
            assert time.monotonic() < deadline, "the removed button is still in the tree"
            time.sleep(0.05)
        again = seen.run("click_element", {"id": vanish.id})
        assert again.error is not None and again.error.code == INVALID_PARAMS
        assert f"element {vanish.id}" in again.error.message

    def test_a_control_disabled_after_the_read_is_not_clicked(
        self, seen: Seen, chromium: App, page: EventPage
    ) -> None:
        focus(chromium.window)
        tree = _page_tree(seen)
        target = find(tree, "push button", "Target")
        assert seen.run("click_element", {"id": find(tree, "push button", "Disable target").id}).ok
        page.wait("disabled target")  # the page's script disabled it after the tree was read
        deadline = time.monotonic() + 5  # the page's accessibility tree follows the DOM
        while seen.view.reader.check(target) is None:
            assert time.monotonic() < deadline, "the disabled button still looks enabled"
            time.sleep(0.05)
        result = seen.run("click_element", {"id": target.id})
        assert result.error is not None and result.error.code == INVALID_PARAMS
        assert f"element {target.id} is disabled now" in result.error.message
        assert "clicked target" not in page.events

    def test_set_value_types_nothing_into_another_focused_window(
        self, seen: Seen, chromium: App, page: EventPage, tmp_path: Path
    ) -> None:
        """A full-screen window over Chromium takes the keyboard back each time it loses it
        (a modal dialog that keeps the focus): GrabFocus answers yes, yet keys sent then
        would go to that window. set_value must type nothing."""
        focus(chromium.window)
        tree = _page_tree(seen)
        entry = find(tree, "entry", "Full name")
        keys = tmp_path / "keys.txt"
        keys.write_text("")
        holder = subprocess.Popen(
            [sys.executable, "-c", FOCUS_HOLDER, str(keys)], env=seen.desktop.where.env()
        )
        try:
            deadline = time.monotonic() + 20
            while (over := seen.desktop.windows.at(*entry.center)).id in (0, chromium.window):
                assert time.monotonic() < deadline, "the focus holder showed no window"
                time.sleep(0.05)
            focus(over.id)
            deadline = time.monotonic() + 5
            while seen.desktop.windows.focused().id != over.id:
                assert time.monotonic() < deadline, "the holder did not take the keyboard"
                time.sleep(0.05)
            result = seen.run("set_value", {"id": entry.id, "value": "Grace Hopper"})
            assert not result.ok and result.error is not None, result
            assert "nothing typed" in result.error.message
            seen.desktop.input.press_key("f9")  # a marker: the holder does get keys
            deadline = time.monotonic() + 5
            while "F9" not in keys.read_text():
                assert time.monotonic() < deadline, "the holder got no keys at all"
                time.sleep(0.05)
            assert keys.read_text().split() == ["F9"]  # nothing of set_value reached it
        finally:
            holder.terminate()
            holder.wait(5)

    def test_marks_draw_numbered_boxes_on_the_screenshot(
        self, xserver: Xvfb, session: A11ySession, chromium: App, tmp_path: Path
    ) -> None:
        focus(chromium.window)
        settings = Settings(data_dir=tmp_path, observation="screenshot+marks", image_format="png")
        with Desktop.open(settings, xserver.where, session_bus=session.address) as desktop:
            assert desktop.elements is not None
            plain = desktop.screen.capture()
            marked = desktop.elements.look(desktop.screen.capture())
            tree = desktop.elements.tree
            assert tree is not None and marked.data != plain.data
            assert "box n is element en" in marked.tree
            hello = find(tree, "push button", "Hello")
            x, y = desktop.screen.to_model(hello.bounds[0], hello.bounds[1])
            before, after = plain.image.convert("RGB"), marked.image.convert("RGB")
            # the box's left edge is drawn in a mark colour where the page was plain
            assert after.getpixel((x, y + 6)) != before.getpixel((x, y + 6))
            assert after.getpixel((x, y + 6)) in {_rgb(c) for c in MARK_COLOURS}


FOCUS_HOLDER = """
import sys, tkinter as tk
root = tk.Tk()
root.geometry("1920x1080+0+0")
out = open(sys.argv[1], "a")
def key(e):
    out.write(e.keysym + "\\n"); out.flush()
root.bind("<KeyPress>", key)
root.bind("<FocusOut>", lambda e: root.after_idle(root.focus_force))
root.mainloop()
"""


def _rgb(colour: str) -> tuple[int, int, int]:
    return (int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16))


# --- nothing published ------------------------------------------------------------------
def test_a_tk_app_gives_the_screenshot_alone_said_once(
    xserver: Xvfb, session: A11ySession, seen: Seen
) -> None:
    env = {"DBUS_SESSION_BUS_ADDRESS": session.address, **PUBLISH_ENV}
    app = TkApp.start(env)
    try:
        app.focus("box")
        window = seen.desktop.windows.focused()
        assert window.known
        first, tree = seen.look()
        assert tree is None
        assert "publishes no accessibility tree: the screenshot alone" in first
        second, _ = seen.look()
        assert second == ""  # said once
        result = seen.run("click_element", {"id": "e1"})
        assert result.error is not None and result.error.code == INVALID_PARAMS
    finally:
        app.close()


def test_no_bus_gives_the_screenshot_alone(xserver: Xvfb, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, observation="screenshot+tree")
    with Desktop.open(settings, xserver.where, session_bus="") as desktop:
        assert desktop.elements is not None
        observation = desktop.elements.look(desktop.screen.capture())
        assert observation.tree.startswith("(no accessibility tree")
        assert desktop.elements.look(desktop.screen.capture()).tree == ""
    reader = A11yReader("unix:path=/nonexistent/bus")
    assert not reader.available()


# --- set-up: a private display Jarvis starts ------------------------------------------
def test_a_sandbox_starts_the_accessibility_bus_for_its_apps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jarvis.safety.sandbox import Sandbox
    from jarvis.safety.settings import SandboxSettings

    # the sandbox's apps get this process's environment: no dconf, so a session that an
    # earlier mousepad on this machine left in the settings (killed: "restore it?") is
    # not read, and this one, stopped with the sandbox, leaves none
    monkeypatch.setenv("GSETTINGS_BACKEND", "memory")
    apps = [["mousepad", "--disable-server"]]
    settings = Settings(data_dir=tmp_path, observation="screenshot+tree")
    with Sandbox(SandboxSettings(size="1024x768", apps=apps), accessibility=True) as box:
        assert box.where.session_bus
        with Desktop.open(settings, box.where) as desktop:
            view = desktop.elements
            assert view is not None
            deadline = time.monotonic() + 20
            while True:  # mousepad starts and maps its window
                observation = view.look(desktop.screen.capture())
                if view.tree is not None and any(e.name == "File" for e in view.tree.elements):
                    break
                assert time.monotonic() < deadline, observation.tree
                time.sleep(0.1)
    with Sandbox(SandboxSettings(size="1024x768")) as plain:
        assert plain.where.session_bus == ""


def test_doctor_says_whether_the_tree_can_be_read(session: A11ySession, tmp_path: Path) -> None:
    from jarvis.doctor import check_accessibility

    good = Settings(data_dir=tmp_path, a11y_session_bus=session.address)
    check = check_accessibility(good)
    assert check.ok and "the tree can be read" in check.detail
    gone = "unix:path=/nonexistent/jarvis-bus"
    wanted = Settings(data_dir=tmp_path, a11y_session_bus=gone, observation="screenshot+tree")
    check = check_accessibility(wanted)
    assert not check.ok and "cannot be read" in check.detail
    assert check_accessibility(Settings(data_dir=tmp_path, a11y_session_bus=gone)).ok
    grammar = wanted.model_copy(update={"model_profile": "ui-tars-1.5"})
    check = check_accessibility(grammar)  # its profile takes no tree: nothing is missing
    assert check.ok and "profile ui-tars-1.5 does not take the tree" in check.detail


def test_the_rendered_tree_is_capped_and_says_what_it_left_out() -> None:
    elements = [
        Element(
            f"e{n}",
            (":1.1", f"/o/{n}"),
            "push button",
            f'Button "{n}"\n  padded   ',
            frozenset({"enabled", "focused"} if n == 1 else {"enabled"}),
            (10 * n, 20, 30, 12),
        )
        for n in range(1, 201)
    ]
    tree = Tree("the window", elements, visited=450, seconds=0.01)
    text = tree.render(1000)
    assert len(text) <= 1000 + 60
    lines = text.splitlines()
    assert lines[0] == "Accessibility tree of the window (200 elements):"
    assert lines[1] == "[e1] push button \"Button '1' padded\" focused @10,20 30x12"
    shown = len(lines) - 2
    assert lines[-1] == f"... {200 - shown} more elements left out (size cap)"
    assert tree.by_id["e200"].center == (2015, 26)
