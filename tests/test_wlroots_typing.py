"""The typing matrix on a real headless sway with two outputs (scale 1 and scale 2),
filling what test_wlroots_desktop and test_wlroots_session leave open: the native GTK 3
app (mousepad with GDK_BACKEND=wayland) under the us and fr layouts as well as de, on
either output, and foot on the scale-2 output; drag and scroll on the scale-1 output
(test_wlroots_desktop has them on the scale-2 one)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jarvis.config import Settings
from jarvis.desktop.wlroots.desktop import WlrootsDesktop
from jarvis.desktop.wlroots.session import swaymsg
from jarvis.desktop.wlroots.windows import WlWindows
from jarvis.safety.wayland_sandbox import PrivateSway
from tests.wayland import Wev, needs_sway, start_sway, wait_window

pytestmark = needs_sway

TEXT = "yz@#/-{} ä€ß Привет"
WIDE = TEXT + " 漢字かな 中文 😀👍🎉"


@pytest.fixture(scope="module")
def sway() -> Iterator[PrivateSway]:
    with start_sway() as running:
        yield running


@pytest.fixture(scope="module")
def desktop(sway: PrivateSway) -> Iterator[WlrootsDesktop]:
    assert sway.where is not None
    with WlrootsDesktop.open(Settings(monitor=0), sway.where) as opened:
        yield opened


def test_drag_and_scroll_on_the_scale_1_output(sway: PrivateSway, desktop: WlrootsDesktop) -> None:
    """As on the scale-2 output: a drag presses where it starts and lets go where it
    ends, each to the pixel; wheel clicks arrive as the axis and sign asked. First in the
    module: wev 1.0 crashes (SIGSEGV) on its keyboard's enter once wtype has typed on the
    seat, which foot and GTK take in their stride."""
    pointer = desktop.input
    with Wev(sway, "HEADLESS-1") as wev:
        ox, oy = wev.origin
        pointer.drag(100, 80, 1100, 650)
        assert wev.next_press() == (272, (100 - ox, 80 - oy))
        wev.next_event(re.compile(r"button: .*state: 0"))
        assert wev.position == (1100 - ox, 650 - oy)
        pointer.scroll(700, 400, "down", 3)
        assert wev.next_axis() == (0, 45.0)
        pointer.scroll(700, 400, "left", 1)
        assert wev.next_axis() == (1, -15.0)


def _clipboard_becomes(desktop: WlrootsDesktop, text: str) -> str:
    deadline, got = time.monotonic() + 15, None
    while time.monotonic() < deadline:  # mousepad offers the selection once it copied
        got = desktop.read_clipboard()
        if got is not None and got.data == text.encode():
            break
        time.sleep(0.02)
    return "" if got is None else got.data.decode(errors="replace")


@pytest.mark.parametrize(
    ("layout", "output"), [("us", "HEADLESS-2"), ("fr", "HEADLESS-1"), ("de", "HEADLESS-2")]
)
def test_gtk_app_gets_every_character_under_each_layout(
    sway: PrivateSway, desktop: WlrootsDesktop, layout: str, output: str
) -> None:
    """What is typed into mousepad, selected with ctrl+a and copied with ctrl+c, is
    exactly the text, byte for byte, whatever the seat's layout and the output's scale."""
    assert sway.where is not None
    swaymsg(sway.where, f"input type:keyboard xkb_layout {layout}")
    swaymsg(sway.where, f"focus output {output}")
    home = sway.runtime_dir.parent / f"home-{layout}"  # its own: no session to restore
    home.mkdir()
    if sway.user is not None:
        os.chown(home, sway.user.pw_uid, sway.user.pw_gid)
    env = {"GDK_BACKEND": "wayland", "NO_AT_BRIDGE": "1", "HOME": str(home)}
    app = sway.run_app(["dbus-run-session", "--", "mousepad"], env=env)
    try:
        node = wait_window(sway, lambda n: n.get("app_id") == "mousepad" and n.get("focused"))
        assert (node["rect"]["x"] >= 1280) == (output == "HEADLESS-2")
        typed = desktop.input.type_text(WIDE)
        assert (typed.target, typed.chars) == ("mousepad", len(WIDE))
        desktop.input.hotkey("ctrl+a")
        desktop.input.hotkey("ctrl+c")
        assert _clipboard_becomes(desktop, WIDE) == WIDE
    finally:  # ended, not closed (it would ask to save); no later window loses the focus
        _end(sway, app)


def _end(sway: PrivateSway, app: subprocess.Popen[bytes]) -> None:
    os.killpg(app.pid, signal.SIGTERM)
    app.wait(timeout=15)
    deadline = time.monotonic() + 15
    while any(w.wm_class == "mousepad" for w in WlWindows(sway.where).list()):  # type: ignore[arg-type]
        assert time.monotonic() < deadline, "mousepad's window stayed after it ended"
        time.sleep(0.02)


def _line(path: Path) -> bytes:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().endswith(b"\n"):
            return path.read_bytes()
        time.sleep(0.02)
    got = path.read_bytes() if path.exists() else None
    raise AssertionError(f"no line arrived in {path}: {got!r}")


def test_foot_on_the_scale_2_output_gets_every_character(
    sway: PrivateSway, desktop: WlrootsDesktop
) -> None:
    assert sway.where is not None
    swaymsg(sway.where, "input type:keyboard xkb_layout fr")
    swaymsg(sway.where, "focus output HEADLESS-2")
    out = sway.runtime_dir.parent / "scale2.txt"
    sway.run_app(["foot", "-a", "jarvis-scale2", "sh", "-c", f"stty -echo; cat > {out}"])
    node = wait_window(sway, lambda n: n.get("app_id") == "jarvis-scale2" and n.get("focused"))
    assert node["rect"]["x"] >= 1280  # on HEADLESS-2
    assert desktop.input.type_text(WIDE + "\n").target == "jarvis-scale2"
    assert _line(out) == (WIDE + "\n").encode()
    swaymsg(sway.where, "[app_id=jarvis-scale2] kill")


@pytest.mark.parametrize("layout", ["fr", "de", "us"])
def test_chords_keep_their_keys_after_the_layout_changes(
    sway: PrivateSway, desktop: WlrootsDesktop, layout: str
) -> None:
    """sway applies a layout command to the seat's virtual keyboard too: a chord pressed
    after it is still the chord asked for (under fr, ctrl+a once arrived as ctrl+q)."""
    assert sway.where is not None
    swaymsg(sway.where, f"input type:keyboard xkb_layout {layout}")
    swaymsg(sway.where, "focus output HEADLESS-1")
    name = f"jarvis-chords-{layout}"
    out = sway.runtime_dir.parent / f"{name}.txt"
    sway.run_app(["foot", "-a", name, "sh", "-c", f"stty -echo; cat -v > {out}"])
    wait_window(sway, lambda n: n.get("app_id") == name and n.get("focused"))
    for chord in ("ctrl+a", "ctrl+b", "a", "q", "y", "z", "m", "shift+2"):
        desktop.input.hotkey(chord)
    desktop.input.press_key("enter")
    assert _line(out) == b"^A^Baqyzm@\n"
    swaymsg(sway.where, f"[app_id={name}] kill")
