"""Typing and pointer actions in real applications, read back byte for byte.

For each of mousepad (GTK 3), featherpad (Qt), xterm, xfce4-terminal (VTE) and
Chromium (a textarea on a loopback page), on a 1920x1080 and a 2560x1440 screen:

- ``scroll``: one wheel click on a long file, scroll-back or page moves the content
  the asked way (down for the editors and the page, up for the terminals), measured
  on screenshots before and after;
- ``type``: the corpus (printable ASCII, accents, a CJK paragraph with more distinct
  characters than there are spare keycodes, emoji, mixed lines, newlines and tabs),
  typed with the default method (keys), arrives exactly: the editor's saved file
  (ctrl+s), the file ``cat`` writes in the terminal, the value the page's script
  posts; the clipboard holds what it held before;
- ``chord``: select all (ctrl+a) and delete, then undo (ctrl+z), each state saved and
  read back; in the terminals (no select all or undo) ctrl+u kills the typed line;
- ``paste``: the clipboard method with the application's own paste key arrives
  exactly, and CLIPBOARD (and PRIMARY in the terminals) hold what they held before;
- ``drag`` and ``double_click``: on a typed line "alpha bravo gamma" found on the
  screen, a drag from its start to its middle selects a prefix and a double click
  in the middle selects "bravo" (read from PRIMARY);
- ``right_click``: a context menu opens there, seen on a fresh screenshot (xterm has
  no plain right-click menu: its menu is ctrl+right-click).

Each screen size runs in a child process with its own Xvfb (pyautogui binds to one
display per process): ``python -m tests.test_real_apps WxH`` prints the results as
JSON; each application is started once per screen, with HOME and the XDG dirs in a
temp dir, and the tests assert the results case by case. Bare Xvfb has no window
manager, so each window is given the keyboard focus when it appears.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from jarvis.desktop.x11 import XDisplay
from tests.realapps import (
    APPS,
    EDITORS,
    TERMINALS,
    App,
    PageServer,
    app_env,
    changed,
    changed_box,
    grab,
    have_apps,
    selection,
    set_clipboard,
    settled,
    vertical_shift,
)

ROOT = Path(__file__).resolve().parent.parent
SIZES = ("1920x1080", "2560x1440")
CASES = ("scroll", "type", "chord", "paste", "drag", "double_click", "right_click")
CJK = (
    "春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。床前明月光，疑是地上霜。"
    "举头望明月，低头思故乡。白日依山尽，黄河入海流。欲穷千里目，更上一层楼。"
)
CORPUS = (
    "".join(chr(c) for c in range(32, 127))
    + "\nCrème brûlée, façade, naïve, Ångström, Straße, Łódź, ž\n"
    + CJK
    + "\n😀🎉👍🚀 ❤️ 👨‍👩‍👧\nGrüße 你好 <tag> ~|{} é😀\n\tindented\tcells\n"
)
LINE = "alpha bravo gamma"
PASTED = "pasted: Grüße 你好 <tag> ~|{} é😀\n\tnext 中文 line\n"


@dataclass
class Case:
    app: App
    page: PageServer | None
    inp: Any  # jarvis.desktop.input.Input, imported in the worker
    screen: tuple[int, int]
    paster: Any = None  # an Input with type_method="clipboard"

    @property
    def kind(self) -> str:
        return "editor" if self.app.name in EDITORS else self.app.name

    def terminal(self) -> bool:
        return self.app.name in TERMINALS

    def click_in(self) -> None:
        left, top, _, _ = self.app.box
        if self.app.name == "chromium":
            self.inp.click(left + 300, top + 100)  # the textarea
        else:
            self.inp.click(*self.app.center())

    def saved(self, expected: str, timeout: float = 10.0) -> str:
        """Save (editors) and wait until the file (or page) holds ``expected``."""
        if self.page is not None:
            return self.page.wait_value(expected, timeout) or ""
        if self.app.name in EDITORS:
            self.inp.hotkey("ctrl+s")
        path = self.app.files["doc"]
        deadline = time.monotonic() + timeout
        while True:
            got = path.read_bytes().decode("utf-8", "replace")
            if got == expected or time.monotonic() > deadline:
                return got
            time.sleep(0.01)  # a poll, not a spin: the app that writes it needs the CPU


def _wait(predicate: Callable[[], Any], what: str, timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{what}: not seen within {timeout:.0f} s (PRIMARY holds {selection()!r})"
            )
        time.sleep(0.05)


# ----------------------------------------------------------------------- cases


def case_scroll(c: Case) -> dict[str, Any]:
    c.click_in()
    direction = "up" if c.terminal() else "down"
    x, y = c.app.center()
    before = settled(c.app.box)
    c.inp.scroll(x, y, direction, 1)
    _wait(lambda: int(changed(before, grab(c.app.box)).sum()) > 500, "the content moving")
    shift = vertical_shift(before, settled(c.app.box))
    c.inp.scroll(x, y, "down" if direction == "up" else "up", 1)  # back for the next cases
    expected_sign = 1 if direction == "down" else -1
    assert shift * expected_sign >= 5, f"scrolled {direction}, the content moved {shift} rows"
    return {"direction": direction, "shift": shift}


def case_type(c: Case) -> dict[str, Any]:
    held = f"held before typing into {c.app.name} ✓ 中"
    set_clipboard(held)
    c.click_in()
    if not c.terminal():
        c.inp.hotkey("ctrl+a")  # the typed text replaces the document
    typed = c.inp.type_text(CORPUS)
    got = c.saved(CORPUS)
    assert got == CORPUS, f"typed {len(CORPUS)} characters, {len(got)} arrived: {got!r}"
    kept = selection("CLIPBOARD")
    assert kept == held, f"the clipboard held {held!r} before typing and {kept!r} after"
    assert typed.chars == len(CORPUS)
    return {"method": typed.method, "chars": typed.chars, "into": typed.target}


def case_chord(c: Case) -> dict[str, Any]:
    if c.terminal():
        c.inp.type_text("wrong words")
        c.inp.hotkey("ctrl+u")  # the tty's line kill
        c.inp.type_text("right\n")
        got = c.saved(CORPUS + "right\n")
        assert got == CORPUS + "right\n", f"after ctrl+u: {got[-40:]!r}"
        return {"chord": "ctrl+u"}
    c.inp.hotkey("ctrl+a")
    c.inp.press_key("backspace")
    got = c.saved("")
    assert got == "", f"after select all and delete the document holds {got[:60]!r}"
    c.inp.hotkey("ctrl+z")
    got = c.saved(CORPUS)
    assert got == CORPUS, f"after undo the document holds {got[:60]!r}..."
    return {"chord": "ctrl+a, ctrl+z"}


def case_paste(c: Case) -> dict[str, Any]:
    """The clipboard method: the app's own paste key and selection (shift+Insert and
    PRIMARY in xterm, ctrl+shift+v in xfce4-terminal, ctrl+v elsewhere); both
    selections hold afterwards what they held before."""
    held = {"CLIPBOARD": f"clipboard before pasting into {c.app.name} ✓"}
    if c.terminal():  # nothing selects text in them meanwhile
        held["PRIMARY"] = f"primary before pasting into {c.app.name} ✓"
    for name, text in held.items():
        set_clipboard(text, name)
    expected = CORPUS + "right\n" + PASTED if c.terminal() else PASTED
    if not c.terminal():
        c.click_in()
        c.inp.hotkey("ctrl+a")
    typed = c.paster.type_text(PASTED)
    got = c.saved(expected)
    assert got == expected, f"pasted {PASTED!r}, the document ends with {got[-60:]!r}"
    for name, text in held.items():
        assert selection(name) == text, f"{name} held {text!r}, now {selection(name)!r}"
    assert (typed.method, typed.chars) == ("clipboard", len(PASTED))
    return {"method": typed.method, "paste_key": typed.paste_key}


def _line_on_screen(c: Case) -> tuple[int, int, int]:
    """Type LINE on an empty line and find it: (x start, x middle, y middle). The
    document is read back empty and then holding LINE before the screen is compared,
    and the line's box must be the same on two settled screenshots (a busy machine
    paints a line in more than one go)."""
    if not c.terminal():
        c.inp.hotkey("ctrl+a")
        c.inp.press_key("backspace")
        assert c.saved("") == "", "the document was not emptied"
    before = settled(c.app.box)
    c.inp.type_text(LINE)
    if not c.terminal():
        assert c.saved(LINE) == LINE, "the line did not arrive"
    seen: list[Any] = [None]

    def stable_box() -> Any:
        box, last = changed_box(before, settled(c.app.box)), seen[-1]
        seen.append(box)
        if box is None or last is None:
            return None
        # a blinking caret at the end of the line moves the edge by its width
        return box if all(abs(a - b) <= 3 for a, b in zip(box, last, strict=True)) else None

    box = _wait(stable_box, "the typed line", timeout=20)
    left, top, _, _ = c.app.box
    x0, y0, x1, y1 = box
    return left + x0, left + (x0 + x1) // 2, top + (y0 + y1) // 2


def case_drag(c: Case) -> dict[str, Any]:
    start, middle, y = _line_on_screen(c)
    c.inp.drag(start + 1, y, middle, y)
    what = f"a prefix selected by a drag from ({start + 1}, {y}) to ({middle}, {y})"
    got = _wait(lambda: (s := selection()) and LINE.startswith(s) and len(s) >= 3 and s, what)
    assert len(got) < len(LINE), f"the drag to the middle selected {got!r}"
    if c.terminal():
        c.inp.hotkey("ctrl+u")
    return {"selected": got}


def case_double_click(c: Case) -> dict[str, Any]:
    _, middle, y = _line_on_screen(c)
    c.inp.double_click(middle, y)
    what = f"'bravo' selected by a double click at ({middle}, {y})"
    got = _wait(lambda: (s := selection()) and s.strip() == "bravo" and s, what)
    if c.terminal():
        c.inp.hotkey("ctrl+u")
    return {"selected": got}


def case_right_click(c: Case) -> dict[str, Any]:
    x, y = c.app.center()
    width, height = c.screen
    region = (
        max(0, x - 300),
        max(0, y - 300),
        min(600, width - x + 300),
        min(600, height - y + 300),
    )
    before = settled(region)
    if c.app.name != "xterm":
        c.inp.right_click(x, y)
        _wait(lambda: int(changed(before, grab(region)).sum()) > 4000, "a menu")
    else:  # xterm's menus are ctrl+button, shown while the button is held
        from jarvis.desktop.x11 import xdotool

        c.inp.move(x, y)
        xdotool("keydown", "Control_L")
        c.inp.gui.mouseDown(x, y, button="right")
        try:
            _wait(lambda: int(changed(before, grab(region)).sum()) > 4000, "a menu")
        finally:
            c.inp.gui.mouseUp(x, y, button="right")
            xdotool("keyup", "Control_L")
    c.inp.press_key("esc")
    return {"menu_seen": True}


CASE_FUNCS: dict[str, Callable[[Case], dict[str, Any]]] = {
    "scroll": case_scroll,
    "type": case_type,
    "chord": case_chord,
    "paste": case_paste,
    "drag": case_drag,
    "double_click": case_double_click,
    "right_click": case_right_click,
}


def run_app(name: str, case: Case) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for case_name in CASES:
        started = time.monotonic()
        try:
            result = {"error": None, **CASE_FUNCS[case_name](case)}
        except Exception as exc:  # reported per case; the worker goes on
            result = {"error": f"{type(exc).__name__}: {exc}"[:1500]}
        result["seconds"] = round(time.monotonic() - started, 2)
        out[case_name] = result
    return out


def main(argv: list[str]) -> None:
    """Worker: ``python -m tests.test_real_apps WxH [APP...]`` prints JSON results."""
    from tests.xserver import start_xvfb

    width, height = (int(v) for v in argv[0].split("x"))
    apps = argv[1:] or list(APPS)
    results: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory(prefix="jarvis-apps-") as tmp,
        start_xvfb(width, height, set_env=True) as server,
    ):
        from jarvis.desktop.input import Input

        inp = Input(failsafe=True, display=XDisplay.from_env())
        paster = Input(failsafe=True, type_method="clipboard", display=XDisplay.from_env())
        page = PageServer(lines=300)
        try:
            for name in apps:
                started = time.monotonic()
                work = Path(tmp) / name
                work.mkdir()
                env = app_env(work / "home", server.env())
                try:
                    app = App.start(name, work, env, url=page.url)
                except AssertionError as exc:
                    results[name] = {c: {"error": str(exc)} for c in CASES}
                    continue
                try:
                    if name == "chromium":
                        assert page.wait_value("", timeout=30) == "", "the page did not load"
                    served = page if name == "chromium" else None
                    case = Case(app, served, inp, (width, height), paster)
                    results[name] = run_app(name, case)
                finally:
                    app.close()
                results[name]["_seconds"] = round(time.monotonic() - started, 2)
        finally:
            page.close()
    print(json.dumps(results))


# ----------------------------------------------------------------------- tests

pytestmark = pytest.mark.skipif(bool(have_apps()), reason=f"not installed: {have_apps()}")


@pytest.fixture(scope="module")
def matrix() -> Iterator[dict[str, Any]]:
    children = {
        size: subprocess.Popen(
            [sys.executable, "-m", "tests.test_real_apps", size],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for size in SIZES
    }
    results: dict[str, Any] = {}
    try:
        for size, child in children.items():
            out, err = child.communicate(timeout=400)
            assert child.returncode == 0, f"worker for {size} failed: {err[-3000:]}"
            results[size] = json.loads(out)
        yield results
    finally:
        for child in children.values():
            if child.poll() is None:
                child.kill()
                child.communicate()


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("app", APPS)
@pytest.mark.parametrize("size", SIZES)
def test_real_app(matrix: dict[str, Any], size: str, app: str, case: str) -> None:
    result = matrix[size][app][case]
    assert result["error"] is None, result["error"]
    if case == "type":
        assert result["method"] == "xdotool" and result["chars"] == len(CORPUS)
    if case == "paste":
        assert result["method"] == "clipboard"


def test_the_corpus_needs_more_keycodes_than_there_are_spare(xserver: object) -> None:
    from jarvis.desktop.keymap import read_keymap

    assert len(set(CJK)) > read_keymap(XDisplay.from_env()).capacity()
    assert len(CJK) >= 65


if __name__ == "__main__":
    main(sys.argv[1:])
