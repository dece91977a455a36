"""The wlroots Desktop as a whole on a real headless sway: opened from the settings,
key chords and the clipboard reaching a real terminal (foot), window focus through
sway, and ``desktop.backend = auto`` finding the compositor by its globals."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jarvis.config import Settings
from jarvis.desktop.backend import BackendError, choose_backend
from jarvis.desktop.clipboard import ClipboardContent
from jarvis.desktop.settings import DesktopSettings
from jarvis.desktop.wlroots.desktop import WlrootsDesktop
from jarvis.desktop.wlroots.session import compositor_globals, swaymsg
from jarvis.safety.wayland_sandbox import PrivateSway
from tests.wayland import needs_sway, start_sway, wait_window

pytestmark = needs_sway


@pytest.fixture(scope="module")
def sway() -> Iterator[PrivateSway]:
    with start_sway() as running:
        yield running


@pytest.fixture(scope="module")
def desktop(sway: PrivateSway) -> Iterator[WlrootsDesktop]:
    assert sway.where is not None
    with WlrootsDesktop.open(Settings(monitor=2), sway.where) as opened:
        yield opened


def _terminal(sway: PrivateSway, name: str, command: str) -> tuple[int, Path]:
    """A foot window (app_id ``name``) running ``command`` with its output in a file."""
    out = sway.runtime_dir.parent / f"{name}.txt"
    sway.run_app(["foot", "-a", name, "sh", "-c", f"stty -echo; {command} > {out}"])
    return int(wait_window(sway, lambda n: n.get("app_id") == name)["id"]), out


def _line(path: Path) -> bytes:
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().endswith(b"\n"):
            return path.read_bytes()
        time.sleep(0.02)
    raise AssertionError(f"no line arrived in {path}")


def test_open_reads_outputs_and_sizes_the_screen(desktop: WlrootsDesktop) -> None:
    assert desktop.backend == "wlroots"
    assert [(o.name, o.scale) for o in desktop.outputs] == [
        ("HEADLESS-1", 1.0),
        ("HEADLESS-2", 2.0),
    ]
    shot = desktop.screen.capture()
    assert (shot.screen_size.width, shot.screen_size.height) == (800, 450)
    assert shot.origin == (1280, 0)
    assert desktop.screen.to_screen(0, 0) == (1280, 0)
    assert desktop.input.bounds() == (0, 0, 2080, 720)
    assert desktop.settler.wait().frames >= 1


def test_key_chords_reach_the_focused_terminal(sway: PrivateSway, desktop: WlrootsDesktop) -> None:
    _, out = _terminal(sway, "jarvis-keys", "cat -v")
    desktop.input.hotkey("ctrl+b")
    desktop.input.hotkey("alt+x")
    desktop.input.press_key("tab")
    desktop.input.press_key("enter")
    assert _line(out) == b"^B^[x\t\n"


def test_the_clipboard_round_trips_and_pastes_into_foot(
    sway: PrivateSway, desktop: WlrootsDesktop
) -> None:
    text = "Клипборд ✓ wl-copy\n"  # its own newline: an Enter key could beat the paste
    desktop.write_clipboard(ClipboardContent("UTF8_STRING", text.encode()))
    got = desktop.read_clipboard()
    assert got is not None and got.data.decode() == text
    _, out = _terminal(sway, "jarvis-paste", "cat")
    desktop.input.hotkey("ctrl+shift+v")  # foot's paste key
    assert _line(out) == text.encode()


def test_typing_and_chords_in_a_native_gtk_app(sway: PrivateSway, desktop: WlrootsDesktop) -> None:
    """mousepad (GTK 3) on Wayland itself, under the German layout: the text typed, then
    ctrl+a and ctrl+c (pressed as a keyboard does: GTK ignores a modifier state alone)
    put exactly that text on the clipboard."""
    assert sway.where is not None
    swaymsg(sway.where, "input type:keyboard xkb_layout de")
    env = {"GDK_BACKEND": "wayland", "NO_AT_BRIDGE": "1"}
    sway.run_app(["dbus-run-session", "--", "mousepad"], env=env)
    wait_window(sway, lambda n: n.get("app_id") == "mousepad")
    text = "yz@#/-{} ä€ß Привет 漢字かな 😀"
    assert desktop.input.type_text(text).target == "mousepad"
    desktop.input.hotkey("ctrl+a")
    desktop.input.hotkey("ctrl+c")
    deadline, got = time.monotonic() + 15, None
    while time.monotonic() < deadline:  # mousepad offers the selection when it has copied
        got = desktop.read_clipboard()
        if got is not None and got.data == text.encode():
            break
        time.sleep(0.02)
    assert got is not None and got.data.decode() == text


def test_activating_a_window_moves_the_focus_and_the_typing(
    sway: PrivateSway, desktop: WlrootsDesktop
) -> None:
    first, first_out = _terminal(sway, "jarvis-first", "cat")
    second, second_out = _terminal(sway, "jarvis-second", "cat")
    assert desktop.windows.focused().id == second
    desktop.windows.activate(first)
    focused = desktop.windows.focused()
    assert (focused.id, focused.wm_class) == (first, "jarvis-first")
    assert focused.box is not None
    assert desktop.windows.at(focused.box[0] + 5, focused.box[1] + 5).id == first
    desktop.input.type_text("to the first\n")
    assert _line(first_out) == b"to the first\n"
    assert second_out.read_bytes() == b""


def test_auto_finds_the_compositor_by_its_globals(sway: PrivateSway) -> None:
    assert sway.where is not None
    env = {"WAYLAND_DISPLAY": sway.where.socket, "DISPLAY": ":0"}
    assert "zwp_virtual_keyboard_manager_v1" in compositor_globals(sway.where.socket)
    assert choose_backend("auto", env, compositor_globals) == "wlroots"


@pytest.mark.parametrize(
    ("setting", "env", "chosen"),
    [
        ("auto", {"DISPLAY": ":0"}, "x11"),
        ("auto", {}, "x11"),
        ("auto", {"XDG_SESSION_TYPE": "wayland", "DISPLAY": ":0"}, "x11"),
        ("auto", {"WAYLAND_DISPLAY": "wayland-1", "SWAYSOCK": "/run/s.sock"}, "wlroots"),
        ("auto", {"WAYLAND_DISPLAY": "wayland-1", "XDG_CURRENT_DESKTOP": "Hyprland"}, "wlroots"),
        ("x11", {"WAYLAND_DISPLAY": "wayland-1", "SWAYSOCK": "/s"}, "x11"),
        ("wlroots", {"DISPLAY": ":0"}, "wlroots"),
    ],
)
def test_choose_backend(setting: str, env: dict[str, str], chosen: str) -> None:
    assert choose_backend(setting, env, probe=lambda _s: set()) == chosen


@pytest.mark.parametrize(
    ("setting", "env", "says"),
    [
        ("auto", {"WAYLAND_DISPLAY": "w"}, "offers no zwlr_virtual_pointer_manager_v1"),
        ("auto", {"WAYLAND_DISPLAY": "w"}, "set desktop.backend = portal if it is GNOME"),
    ],
)
def test_backends_that_cannot_drive_are_refused_in_one_line(
    setting: str, env: dict[str, str], says: str
) -> None:
    with pytest.raises(BackendError, match=says) as caught:
        choose_backend(setting, env, probe=lambda _s: {"wl_seat"})
    assert "\n" not in str(caught.value)


def test_the_setting_takes_the_four_backends_and_nothing_else() -> None:
    assert Settings().desktop.backend == "auto"
    for name in ("auto", "x11", "wlroots", "portal"):
        assert Settings(desktop=DesktopSettings(backend=name)).desktop.backend == name  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="backend"):
        Settings(desktop={"backend": "mir"})  # type: ignore[arg-type]
