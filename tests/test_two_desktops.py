"""Two Desktops in one process drive two Xvfb displays at once (DESIGN 1: a desktop is an
object you hold). Each display runs its own Tk test app; both desktops click, drag and
type concurrently from two threads, and each app sees only its own desktop's input."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from jarvis.config import Settings
from jarvis.desktop.desktop import Desktop
from jarvis.desktop.x11 import XDisplay
from tests.tkdriver import TkApp
from tests.xserver import Xvfb, start_xvfb


@pytest.fixture
def second_display() -> Iterator[Xvfb]:
    with start_xvfb(1280, 800) as server:  # another size: each screen is its own
        yield server


def _work(desktop: Desktop, app: TkApp, word: str, errors: list[BaseException]) -> None:
    try:
        box = app.widget_center("box")
        for _ in range(4):
            desktop.input.click(*box)
            desktop.input.type_text(word)
        desktop.input.press_key("end")
        desktop.input.press_key("!")
        desktop.input.click(*app.widget_center("ok"))
    except BaseException as exc:  # reported by the main thread
        errors.append(exc)


def test_two_desktops_drive_two_displays_at_once(xserver: Xvfb, second_display: Xvfb) -> None:
    settings = Settings(failsafe=False, type_method="xdotool")
    first_where = XDisplay(xserver.display, xserver.xauthority)
    second_where = XDisplay(second_display.display, second_display.xauthority)
    first_app = TkApp.start(env=first_where.env())
    second_app = TkApp.start(env=second_where.env())
    try:
        with (
            Desktop.open(settings, first_where) as first,
            Desktop.open(settings, second_where) as second,
        ):
            assert first.screen.size.width == 1920 and second.screen.size.width == 1280
            errors: list[BaseException] = []
            threads = [
                threading.Thread(target=_work, args=(first, first_app, "alpha", errors)),
                threading.Thread(target=_work, args=(second, second_app, "beta", errors)),
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=60)
            assert not errors, errors
            first_app.sync()
            second_app.sync()
            assert first_app.ok_pressed() == "alpha" * 4 + "!"
            assert second_app.ok_pressed() == "beta" * 4 + "!"
            first_clicks = first_app.events("click")
            second_clicks = second_app.events("click")
            box1, ok1 = first_app.widget_center("box"), first_app.widget_center("ok")
            box2, ok2 = second_app.widget_center("box"), second_app.widget_center("ok")
            assert [(c["x"], c["y"]) for c in first_clicks] == [box1] * 4 + [ok1]
            assert [(c["x"], c["y"]) for c in second_clicks] == [box2] * 4 + [ok2]
            typed1 = "".join(e["char"] for e in first_app.events("key") if not e["modifier"])
            typed2 = "".join(e["char"] for e in second_app.events("key") if not e["modifier"])
            assert typed1 == "alpha" * 4 + "!"  # every key reached its own display only
            assert typed2 == "beta" * 4 + "!"
            # each screen shows its own app: the captures differ in size and content
            assert first.screen.capture().screen_size != second.screen.capture().screen_size
    finally:
        first_app.close()
        second_app.close()


def _path_without(tool: str, into: Path) -> str:
    """A PATH with every program of this one but ``tool``: links in ``into``."""
    into.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            link = into / entry.name
            if entry.name != tool and not link.exists():
                link.symlink_to(entry.path)
    return str(into)


def test_keys_without_xdotool_land_on_their_own_display(
    xserver: Xvfb, second_display: Xvfb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without xdotool a chord goes through XTEST on the Desktop's own connection: pyautogui
    would press it on the process's DISPLAY (the first display here)."""
    first_where = XDisplay(xserver.display, xserver.xauthority)
    second_where = XDisplay(second_display.display, second_display.xauthority)
    assert os.environ["DISPLAY"] == first_where.name
    first_app = TkApp.start(env=first_where.env())
    second_app = TkApp.start(env=second_where.env())
    try:
        monkeypatch.setenv("PATH", _path_without("xdotool", tmp_path / "bin"))
        assert shutil.which("xdotool") is None and shutil.which("xclip") is not None
        with Desktop.open(Settings(failsafe=False), second_where) as second:
            second.input.click(*second_app.widget_center("box"))
            second.input.hotkey("shift+x")
            second.input.press_key("!")
            second.input.click(*second_app.widget_center("ok"))
            second_app.sync()
            first_app.sync()
            assert second_app.ok_pressed() == "X!"
            keys = [(e["char"], e["mods"]) for e in second_app.events("key") if not e["modifier"]]
            assert keys == [("X", ["shift"]), ("!", ["shift"])]
            assert first_app.events("key") == []
            assert first_app.ok_pressed() is None
    finally:
        first_app.close()
        second_app.close()
