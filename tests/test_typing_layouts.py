"""Typing under keyboard layouts other than US, read back byte for byte from real
applications (``tests/realapps.py``), on an Xvfb started with ``-noreset`` (without it
Xvfb resets its keymap when its last client leaves, and ``setxkbmap`` seems to do nothing).

- The matrix: ``us``, ``de``, ``fr`` and ``us,ru`` with the Russian group locked, in
  xterm, mousepad (GTK), featherpad (Qt) and Chromium (a textarea on a loopback page), one
  test per application: it is started once, and under each layout the text (ASCII
  symbols, accented letters, Cyrillic, CJK with more distinct characters than half the
  spare keycodes, so the keycodes are remapped between pieces, and emoji) is typed five
  times, cleared in between (the terminal's ``cat`` appends), and read back. After each
  run the user's group is in force again and no spare keycode is left mapped. Each test
  has an Xvfb of its own, so under pytest-xdist the applications type on separate workers.
- Hotkeys name keys: under ``de`` (z and y swapped), ``fr`` (azerty) and ``us,ru`` (the
  Russian group active), ctrl+a, ctrl+z (undo) and ctrl+y (redo) do what they say in
  mousepad, through xdotool and through XTEST on our own connection.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from jarvis.desktop import keymap, xkb
from jarvis.desktop.x11 import XDisplay, keysym_number
from tests.realapps import App, PageServer, app_env, have_apps
from tests.test_real_apps import Case
from tests.xserver import Xvfb, start_xvfb

pytestmark = pytest.mark.skipif(bool(have_apps()), reason=f"not installed: {have_apps()}")
SIZE = (1280, 800)
LAYOUTS = (("us", 0), ("de", 0), ("fr", 0), ("us,ru", 1))
RUNS = 5
TEXT = (
    "yz@#/-{}[]<tag> ~|\\$ äöüß é€ç Grüße, Привет мир! "
    "春眠不觉晓处处闻啼鸟夜来风雨声花落知多少床前明月光 😀🎉👍\n"
)


@dataclass
class Bench:
    server: Xvfb
    work: Path
    page: PageServer
    inp: Any  # jarvis.desktop.input.Input

    def start(self, name: str) -> App:
        work = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.work))
        app = App.start(name, work, app_env(work / "home", self.server.env()), url=self.page.url)
        if name == "chromium":
            assert self.page.wait_value("", timeout=30) == "", "the page did not load"
        return app


@pytest.fixture  # each test its own Xvfb (a second): the slow ones can run on other workers
def bench() -> Iterator[Bench]:
    with (
        tempfile.TemporaryDirectory(prefix="jarvis-layouts-") as tmp,
        start_xvfb(*SIZE, set_env=True) as server,
    ):
        from jarvis.desktop.input import Input

        page = PageServer(lines=5)
        try:
            yield Bench(server, Path(tmp), page, Input(failsafe=False, display=server.where))
        finally:
            page.close()


def set_layout(where: XDisplay, layout: str, group: int) -> None:
    """``layout``, with ``group`` locked the way a layout switcher locks it (XKB
    LatchLockState)."""
    subprocess.run(["setxkbmap", "-layout", layout, "-option", ""], env=where.env(), check=True)
    display = where.open()
    try:
        xkb.lock_group(display, group)
        display.sync()
        assert xkb.active_group(display) == group
    finally:
        display.close()


def keyboard_state(where: XDisplay) -> tuple[int, dict[int, int]]:
    """(the active group, the spare keycodes that hold our keysyms)."""
    display = where.open()
    try:
        return xkb.active_group(display), keymap.Keymap.read(display).ours()
    finally:
        display.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "layouts"),
    [
        ("xterm", LAYOUTS),
        ("mousepad", LAYOUTS),
        ("featherpad", LAYOUTS),
        ("chromium", LAYOUTS),
    ],
)
def test_typing_is_exact_under_every_layout(
    bench: Bench, name: str, layouts: tuple[tuple[str, int], ...]
) -> None:
    app = bench.start(name)
    where = bench.server.where
    case = Case(app, bench.page if name == "chromium" else None, bench.inp, SIZE)
    failures: list[str] = []
    written = ""  # what the terminal's cat has written so far
    try:
        for layout, group in layouts:
            set_layout(where, layout, group)
            for run in range(RUNS):
                if not case.terminal():
                    case.click_in()
                    bench.inp.hotkey("ctrl+a")  # the text replaces the last run's
                typed = bench.inp.type_text(TEXT)
                expected = written + TEXT if case.terminal() else TEXT
                got = case.saved(expected)
                written = got if case.terminal() else written
                tail = got[len(expected) - len(TEXT) :]
                if got != expected:
                    failures.append(f"{layout} run {run}: {tail!r}")
                assert typed.chars == len(TEXT) and typed.method == "xdotool"
                assert keyboard_state(where) == (group, {}), f"{layout}: the keyboard was left"
    finally:
        app.close()
        set_layout(where, "us", 0)
    runs = RUNS * len(layouts)
    assert not failures, f"{name}: {len(failures)} of {runs} runs differ: {failures}"


@pytest.mark.slow
def test_hotkeys_name_keys_under_other_layouts(bench: Bench) -> None:
    app = bench.start("mousepad")
    where = bench.server.where
    case = Case(app, None, bench.inp, SIZE)
    words = "undo and redo: Straße ü"
    try:
        for layout, group in (("de", 0), ("fr", 0), ("us,ru", 1)):
            set_layout(where, layout, group)
            case.click_in()
            bench.inp.hotkey("ctrl+a")
            bench.inp.type_text(words)
            assert case.saved(words) == words, layout
            bench.inp.hotkey("ctrl+a")
            bench.inp.press_key("backspace")
            assert case.saved("") == "", f"{layout}: ctrl+a and backspace left text"
            bench.inp.hotkey("ctrl+z")
            assert case.saved(words) == words, f"{layout}: ctrl+z did not undo"
            bench.inp.hotkey("ctrl+y")
            assert case.saved("") == "", f"{layout}: ctrl+y did not redo"
            display = where.open()  # the same through XTEST, without xdotool
            try:
                keymap.key_chord(display, [keysym_number("ctrl"), keysym_number("z")])
            finally:
                display.close()
            assert case.saved(words) == words, f"{layout}: ctrl+z through XTEST did not undo"
            assert keyboard_state(where)[0] == group
    finally:
        app.close()
        set_layout(where, "us", 0)
