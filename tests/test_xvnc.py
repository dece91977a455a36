"""Jarvis on TigerVNC's Xvnc, started as people start it: no cookie file at all.

mss's default (XCB) backend refuses Xvnc ("drawable's visual not found in screen's
supported visuals"); Jarvis falls back to mss's xlib backend and says so once in the log.
Screenshots, clicks (through the tools) and typing go through the real Desktop onto the
real Tk app, which reports what reached it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from jarvis.config import Settings
from jarvis.desktop.desktop import Desktop
from jarvis.desktop.monitors import mss_for
from jarvis.geometry import Size
from jarvis.tools.computer import build_registry
from jarvis.tools.context import ToolContext
from tests.tkdriver import TkApp
from tests.xserver import environment
from tests.xservers import Xvnc, xvnc_missing

pytestmark = pytest.mark.skipif(xvnc_missing() is not None, reason=str(xvnc_missing()))

FALLBACK = "mss's default backend fails"


@pytest.fixture(scope="module")
def xvnc() -> Iterator[Xvnc]:
    with Xvnc(1280, 800) as server:
        assert not Path(str(server.xauthority)).exists()  # no cookie: as people run it
        yield server


class Said(logging.Handler):
    """The fallback's warnings while this module runs (from its first connection on)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if FALLBACK in record.getMessage():
            self.lines.append(record.getMessage())


@pytest.fixture(scope="module", autouse=True)
def said() -> Iterator[Said]:
    handler = Said()
    logger = logging.getLogger("jarvis.desktop.monitors")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


@pytest.fixture(scope="module")
def app(xvnc: Xvnc) -> Iterator[TkApp]:
    app = TkApp.start(env=xvnc.env())
    try:
        yield app
    finally:
        app.close()


def test_default_backend_fails_there(xvnc: Xvnc) -> None:
    """The reason for the fallback, measured: if mss's default backend ever works on Xvnc,
    this test says the fallback is no longer needed."""
    import mss

    with pytest.raises(mss.ScreenShotError, match="visual"):
        mss.MSS(display=xvnc.display)


def test_screenshots_clicks_and_typing(xvnc: Xvnc, app: TkApp, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, image_format="png")
    with Desktop.open(settings, xvnc.where) as desktop:
        assert desktop.screen.backend == "xlib"
        obs = desktop.screen.capture()
        assert obs.screen_size == Size(1280, 800)
        assert obs.physical_size == Size(1280, 800)
        # the picture is the Tk app's: its background colour fills most of it
        colours = obs.image.getcolors(maxcolors=1 << 20)
        assert colours is not None
        count, top = max(colours)
        assert top == (0xDF, 0xE6, 0xEE) and count > obs.image.width * obs.image.height // 2

        registry = build_registry(settings, presets=[])
        ctx = ToolContext.for_task(settings, "t-xvnc", screen=desktop.screen, input=desktop.input)
        bx, by = app.widget_center("box")
        mark = app.mark()
        result = asyncio.run(registry.execute("click", {"x": bx, "y": by}, ctx))
        assert result.ok, result.error
        click = app.wait_for(lambda e: e["kind"] == "click", since=mark)
        assert (click["x"], click["y"], click["widget"]) == (bx, by, "box")

        text = "Jarvis on Xvnc: ä€ß {x} <y>"
        typed = asyncio.run(registry.execute("type", {"text": text}, ctx))
        assert typed.ok, typed.error
        app.wait_for(lambda e: e["kind"] == "text" and e["widget"] == "box" and e["text"] == text)
        app.sync()
        assert app.entry_text() == text


def test_doctor_names_the_xlib_backend(xvnc: Xvnc, tmp_path: Path) -> None:
    from jarvis.doctor import check_display

    with environment(xvnc.env()):
        check = check_display(Settings(data_dir=tmp_path))
    assert check.ok, check.detail
    assert "captured monitor 1: 1280x800" in check.detail
    assert "mss's xlib backend" in check.detail
    assert "1 monitor(s): 1: 1280x800 at 0,0" in check.detail


def test_the_fallback_is_said_once(xvnc: Xvnc, tmp_path: Path, said: Said) -> None:
    settings = Settings(data_dir=tmp_path)
    for _ in range(2):  # however often a desktop, a live view or a grab connects
        with Desktop.open(settings, xvnc.where) as desktop:
            assert desktop.screen.backend == "xlib"
            assert desktop.screen.capture().screen_size == Size(1280, 800)
        with mss_for(xvnc.where) as sct:
            assert sct.grab(sct.monitors[1]).size == (1280, 800)
    assert len(said.lines) == 1, said.lines
    assert xvnc.display in said.lines[0] and "visual" in said.lines[0]
