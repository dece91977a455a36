"""A ``type`` whose text did not arrive is an error, never a success.

The receivers are small X clients (``tests/pasteapp.py``) that take the keyboard focus
and misbehave on purpose: one reads the clipboard on its own but never pastes on the
key (only fetches stamped after the paste key count), one is frozen with the focus
(it never handles the typed keys), and a well-behaved one shows the same paths
succeed. Without any focused window, typing is refused too.
"""

from __future__ import annotations

import asyncio
import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from jarvis.config import Settings
from jarvis.desktop.clipboard import PasteRoute, _time_after
from jarvis.desktop.input import Input, InputError
from jarvis.desktop.x11 import XDisplay
from jarvis.tools.context import ToolContext
from tests.realapps import selection, set_clipboard

ROOT = Path(__file__).resolve().parent.parent


def _set_focus(target: int) -> None:
    from Xlib import X
    from Xlib.display import Display

    display = Display()
    try:
        display.set_input_focus(target, X.RevertToPointerRoot, X.CurrentTime)
        display.sync()
    finally:
        display.close()


@pytest.fixture(autouse=True)
def _focus_follows_the_pointer_again(xserver: object) -> Iterator[None]:
    """The session display starts with PointerRoot focus (keys go to the window under
    the pointer), which the other tests rely on; these tests move the focus away."""
    yield
    from Xlib import X

    _set_focus(X.PointerRoot)


class PasteApp:
    def __init__(self, mode: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.pasteapp", mode],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        assert self.proc.stdout is not None
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()
        first = self.lines.get(timeout=15)
        assert first == "ready", first

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.put(line.strip())

    def seen(self, timeout: float = 0.0) -> list[dict[str, Any]]:
        out = []
        try:
            out.append(json.loads(self.lines.get(timeout=timeout)))
            while True:
                out.append(json.loads(self.lines.get_nowait()))
        except queue.Empty:
            return out

    def close(self) -> None:
        self.proc.kill()
        self.proc.communicate()


@pytest.fixture
def paste_app(xserver: object, request: pytest.FixtureRequest) -> Iterator[PasteApp]:
    app = PasteApp(request.param)
    try:
        yield app
    finally:
        app.close()


@pytest.mark.parametrize("paste_app", ["stale"], indirect=True)
def test_a_fetch_that_is_not_caused_by_the_paste_key_is_no_paste(paste_app: PasteApp) -> None:
    set_clipboard("held before ✓")
    with pytest.raises(InputError, match=r"JarvisPasteApp.*did not take the pasted text"):
        Input(type_method="clipboard", display=XDisplay.from_env()).type_text("never pasted 中")
    fetches = paste_app.seen(timeout=2)
    assert any(f.get("got") for f in fetches), "the app read the clipboard on its own"
    assert selection("CLIPBOARD") == "held before ✓"


@pytest.mark.parametrize("paste_app", ["pastes"], indirect=True)
def test_a_paste_is_done_when_the_app_fetched_it_after_the_key(paste_app: PasteApp) -> None:
    set_clipboard("held before ✓")
    text = "pasted é 中 😀"
    typed = Input(type_method="clipboard", display=XDisplay.from_env()).type_text(text)
    assert (typed.method, typed.chars, typed.paste_key) == ("clipboard", len(text), "ctrl+v")
    assert typed.target == "JarvisPasteApp"
    assert paste_app.seen(timeout=5) == [{"pasted": text}]
    assert selection("CLIPBOARD") == "held before ✓"


@pytest.mark.parametrize("paste_app", ["stale"], indirect=True)
def test_the_paste_off_x11_says_it_could_not_check_delivery(
    paste_app: PasteApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Off X11 (macOS, Windows, Wayland) text goes through pyperclip and ctrl+v, or
    pyautogui.write for ASCII, and nothing tells whether the application read it. The same
    path runs here on Xvfb (``is_x11`` answers False, as it does there) into an app that
    never takes a paste: the result says delivery was not checked, never a plain success."""
    from jarvis.desktop import x11
    from jarvis.tools.computer import build_registry

    monkeypatch.setattr(x11, "is_x11", lambda where: False)
    set_clipboard("held before ✓")
    settings = Settings(data_dir=tmp_path)
    registry = build_registry(settings, presets=[])
    ctx = ToolContext.for_task(settings, "t-off-x11", input=Input(display=XDisplay.from_env()))
    for text, method in (("never pasted 中", "pyperclip"), ("never typed", "write")):
        result = asyncio.run(registry.execute("type", {"text": text}, ctx))
        assert result.ok and result.data["method"] == method, result
        delivery = result.data["delivery"]
        assert delivery.startswith("not checked: ") and "whether the text arrived" in delivery
    assert not any("pasted" in f for f in paste_app.seen(timeout=1)), "it never took a paste"
    assert selection("CLIPBOARD") == "held before ✓"  # what the clipboard held is back


@pytest.mark.parametrize("paste_app", ["frozen"], indirect=True)
def test_keys_into_a_frozen_window_are_an_error_through_the_tool(
    paste_app: PasteApp, tmp_path: Path
) -> None:
    from jarvis.tools.computer import build_registry

    settings = Settings(data_dir=tmp_path)
    registry = build_registry(settings, presets=[])
    ctx = ToolContext.for_task(settings, "t-frozen", input=Input(display=XDisplay.from_env()))
    result = asyncio.run(registry.execute("type", {"text": "lost 中文"}, ctx))
    assert not result.ok and result.error is not None
    assert "did not handle the typed keys" in result.error.message
    assert "JarvisPasteApp" in result.error.message


@pytest.mark.parametrize("paste_app", ["closes"], indirect=True)
def test_keys_that_close_the_window_are_a_success(paste_app: PasteApp) -> None:
    """A dialog that Return closes handled its keys: its window going away is no error."""
    typed = Input(display=XDisplay.from_env()).type_text("bye now\n")
    assert (typed.method, typed.chars, typed.target) == ("xdotool", 8, "JarvisPasteApp")
    assert paste_app.seen(timeout=5) == [{"typed": "bye now"}]


def test_typing_without_a_focused_window_is_refused(xserver: object) -> None:
    from Xlib import X

    _set_focus(X.NONE)
    for method in ("auto", "clipboard"):
        with pytest.raises(InputError, match="no window has the keyboard focus"):
            Input(type_method=method, display=XDisplay.from_env()).type_text("nowhere")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("wm_class", "selection_name", "key"),
    [
        (("xterm", "XTerm"), "PRIMARY", "shift+insert"),
        (("urxvt", "URxvt"), "PRIMARY", "shift+insert"),
        (("xfce4-terminal", "Xfce4-terminal"), "CLIPBOARD", "ctrl+shift+v"),
        (("gnome-terminal-server", "Gnome-terminal"), "CLIPBOARD", "ctrl+shift+v"),
        (("konsole", "konsole"), "CLIPBOARD", "ctrl+shift+v"),
        (("mate-terminal", "Mate-terminal"), "CLIPBOARD", "ctrl+shift+v"),
        (("mousepad", "Mousepad"), "CLIPBOARD", "ctrl+v"),
        (("127.0.0.1", "Chromium"), "CLIPBOARD", "ctrl+v"),
        (("", ""), "CLIPBOARD", "ctrl+v"),
    ],
)
def test_paste_route_by_application(
    wm_class: tuple[str, str], selection_name: str, key: str
) -> None:
    assert PasteRoute.for_class(wm_class) == PasteRoute(selection_name, key)


@pytest.mark.parametrize(
    ("stamp", "reference", "after"),
    [(10, 5, True), (5, 5, True), (4, 5, False), (3, 0xFFFFFFF0, True), (0xFFFFFFF0, 3, False)],
)
def test_server_times_wrap_around(stamp: int, reference: int, after: bool) -> None:
    assert _time_after(stamp, reference) is after
