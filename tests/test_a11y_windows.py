"""Two windows at once: a tree read for the window under a pointer target, and elements
another window covers, clicked through their accessible action.

Chromium shows the page of controls (tests/a11yapps.py); the Tk test app (which publishes
no tree) is the other window: full screen on top of the page, or moved aside. A click at
a covered element's centre would land in the Tk window, so ``click_element`` runs the
element's own action (AT-SPI ``Action.DoAction``) and the page says it happened, while the
Tk app sees no click. With the Tk app focused, the tree of the window under a pointer
target (the page) is read beside the focused window's, and its ids can be clicked.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jarvis.agent.brain import Brain
from jarvis.config import Settings
from jarvis.desktop.a11y.session import PUBLISH_ENV, A11ySession
from jarvis.desktop.a11y.view import UNDER_TARGET
from jarvis.events import EventBus
from tests.a11yapps import EventPage, publishing_env, start_chromium
from tests.a11yseen import Seen, find, seen_on
from tests.realapps import App, focus
from tests.tkdriver import TkApp
from tests.xserver import Xvfb


@pytest.fixture(scope="module")
def session(xserver: Xvfb) -> Iterator[A11ySession]:
    with A11ySession(xserver.env()) as started:
        yield started


@pytest.fixture(scope="module")
def page() -> Iterator[EventPage]:
    served = EventPage()
    try:
        yield served
    finally:
        served.close()


@pytest.fixture(scope="module")
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


@pytest.fixture
def seen(xserver: Xvfb, session: A11ySession, tmp_path: Path) -> Iterator[Seen]:
    with seen_on(xserver, session, tmp_path) as opened:
        yield opened


@pytest.fixture
def tk(session: A11ySession) -> Iterator[TkApp]:
    app = TkApp.start({"DBUS_SESSION_BUS_ADDRESS": session.address, **PUBLISH_ENV})
    try:
        yield app
    finally:
        app.close()


def count(page: EventPage, event: str) -> int:
    with page.cond:
        return sum(e == event for e in page.events)


def wait_count(page: EventPage, event: str, at_least: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    with page.cond:
        while sum(e == event for e in page.events) < at_least:
            left = deadline - time.monotonic()
            assert left > 0, f"{event!r} not posted {at_least} times; got {page.events}"
            page.cond.wait(left)


def page_tree_seen(seen: Seen, chromium: App) -> None:
    focus(chromium.window)
    seen.until(lambda t: any(e.name == "Launch the rocket" for e in t.elements), 20)


def test_covered_controls_are_clicked_through_their_action(
    seen: Seen, chromium: App, page: EventPage, xserver: Xvfb, session: A11ySession
) -> None:
    page_tree_seen(seen, chromium)
    tree = seen.view.tree
    assert tree is not None
    hello = find(tree, "push button", "Hello")
    agree = find(tree, "check box", "Agree")
    checked = "checked" in agree.states
    hellos = count(page, "clicked hello")
    cover = TkApp.start({"DBUS_SESSION_BUS_ADDRESS": session.address, **PUBLISH_ENV})
    try:  # full screen, mapped on top of the page: a click at the button would hit it
        assert seen.desktop.windows.at(*hello.center).id != chromium.window
        mark = cover.mark()
        pressed = seen.run("click_element", {"id": hello.id})
        assert pressed.ok, pressed
        assert pressed.data["via"] == "action" and pressed.data["action"]
        wait_count(page, "clicked hello", hellos + 1)
        toggled = seen.run("click_element", {"id": agree.id})
        assert toggled.ok and toggled.data["via"] == "action", toggled
        want = f"agree {str(not checked).lower()}"
        page.wait(want)
        assert cover.events("click", since=mark) == []  # nothing reached the covering window
    finally:
        cover.close()
    after = seen.until(lambda t: ("checked" in find(t, "check box", "Agree").states) != checked)
    assert find(after, "push button", "Hello").bounds == hello.bounds


def test_the_window_under_a_pointer_target_is_read_too(
    seen: Seen, chromium: App, page: EventPage, tk: TkApp, tmp_path: Path
) -> None:
    assert tk.proc.poll() is None
    page_tree_seen(seen, chromium)
    tree = seen.view.tree
    assert tree is not None
    hello = find(tree, "push button", "Hello")
    # the Tk window (no tree) moves to the right half and takes the focus; the page's
    # controls on the left are shown again
    display = seen.desktop.where.open()
    try:
        right = seen.desktop.screen.size.width // 2
        top = seen.desktop.windows.at(right + 100, 100)
        assert top.known and top.id != chromium.window
        window = display.create_resource_object("window", top.id)
        window.configure(x=right, y=0, width=right, height=seen.desktop.screen.size.height)
        display.sync()
    finally:
        display.close()
    deadline = time.monotonic() + 5
    while seen.desktop.windows.at(*hello.center).id != chromium.window:
        assert time.monotonic() < deadline, "the Tk window still covers the page"
        time.sleep(0.05)
    focus(top.id)
    assert seen.desktop.windows.focused().id == top.id
    capture = seen.desktop.screen.capture
    alone = seen.view.look(capture())
    assert seen.view.tree is None and "publishes no accessibility tree" in alone.tree
    target = seen.desktop.screen.to_model(*hello.center)
    looked = seen.view.look(capture(), [target])
    assert looked.tree.startswith(UNDER_TARGET), looked.tree
    assert 'push button "Hello"' in looked.tree
    under = seen.view.trees
    assert len(under) == 1 and under[0].window_id == chromium.window
    again = find(under[0], "push button", "Hello")
    assert (
        abs(again.bounds[0] - hello.bounds[0]) <= 2 and abs(again.bounds[1] - hello.bounds[1]) <= 2
    )
    # the agent's brain looks the same way at the last step's pointer targets
    settings = Settings(data_dir=tmp_path, observation="screenshot+tree")
    brain = Brain(_NoModel(), seen.desktop.screen, settings, EventBus(), seen.view)
    assert UNDER_TARGET in brain._observe([target]).tree
    hellos = count(page, "clicked hello")
    clicked = seen.run("click_element", {"id": again.id})
    assert clicked.ok and clicked.data["via"] == "pointer", clicked
    wait_count(page, "clicked hello", hellos + 1)
    # a point in the focused window itself adds nothing
    focus(top.id)
    right_point = seen.desktop.screen.to_model(right + 100, 100)
    same = seen.view.look(capture(), [right_point])
    assert UNDER_TARGET not in same.tree and seen.view.trees == []


class _NoModel:
    """The provider slot of a Brain that only perceives (never asked anything)."""

    name = "anthropic"
