"""`jarvis doctor` on a real headless sway: it names the wlroots backend, the compositor,
the protocols with their versions and each output's scale, captures through screencopy
and has the compositor accept the virtual devices; a compositor short of a protocol Jarvis
needs fails in one line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jarvis.config import Settings
from jarvis.desktop.settings import DesktopSettings
from jarvis.desktop.wlroots.desktop import WlrootsDesktop
from jarvis.desktop.wlroots.session import WaylandDisplay, WaylandError, compositor_globals
from jarvis.doctor import check_backend, check_display, check_input
from jarvis.doctor_wayland import missing_protocols
from jarvis.safety.wayland_sandbox import PrivateSway
from tests.wayland import needs_sway, start_sway
from tests.wayland_filter import HidingProxy
from tests.xserver import environment


@pytest.fixture(scope="module")
def sway() -> Iterator[PrivateSway]:
    with start_sway() as running:
        yield running


@needs_sway
def test_doctor_names_the_wlroots_desktop(sway: PrivateSway) -> None:
    assert sway.where is not None
    settings = Settings(monitor=2)
    with environment({"WAYLAND_DISPLAY": sway.where.socket, "SWAYSOCK": sway.where.swaysock}):
        backend, display, input_ = (
            check_backend(settings),
            check_display(settings),
            check_input(settings),
        )
    assert backend.ok, backend.detail
    assert backend.detail.startswith(f"wlroots on sway 1.7 at {sway.where.socket}: ")
    assert "zwlr_virtual_pointer_manager_v1 v2" in backend.detail
    assert "zwlr_screencopy_manager_v1 v" in backend.detail
    assert "HEADLESS-1 1280x720+0+0 scale 1, HEADLESS-2 800x450+1280+0 scale 2" in backend.detail
    assert display.ok, display.detail
    assert "800x450 logical, 1600x900 device pixels" in display.detail
    assert input_.ok and "virtual pointer and keyboard accepted" in input_.detail


@needs_sway
def test_doctor_fails_in_one_line_on_a_portal_desktop_without_a_portal(
    sway: PrivateSway, tmp_path: Path
) -> None:
    assert sway.where is not None
    env = {"WAYLAND_DISPLAY": sway.where.socket, "SWAYSOCK": "", "XDG_CURRENT_DESKTOP": "GNOME"}
    env["DBUS_SESSION_BUS_ADDRESS"] = f"unix:path={tmp_path}/no-bus"
    with environment(env):
        checks = [check(Settings()) for check in (check_backend, check_display, check_input)]
    for check in checks:
        assert not check.ok and "\n" not in check.detail
        assert check.detail.startswith("no xdg-desktop-portal on the session bus"), check.detail


def test_a_compositor_without_the_virtual_pointer_is_named_in_one_line() -> None:
    offered = {"wl_seat": 7, "zwp_virtual_keyboard_manager_v1": 1, "zwlr_screencopy_manager_v1": 3}
    line = missing_protocols(offered)
    assert line == (
        "the compositor offers no zwlr_virtual_pointer_manager_v1 (the pointer): "
        "Jarvis cannot act there"
    )
    assert missing_protocols({**offered, "zwlr_virtual_pointer_manager_v1": 2}) is None


@needs_sway
def test_a_compositor_hiding_the_virtual_pointer_fails_doctor_and_opens_no_desktop(
    sway: PrivateSway, tmp_path: Path
) -> None:
    """The real sway behind a socket that withholds zwlr_virtual_pointer_manager_v1:
    doctor fails in one line under every backend setting that reaches it, and no
    desktop opens, so no click can be reported done."""
    assert sway.where is not None
    relay = HidingProxy(sway.where.socket, set(), tmp_path / "wayland-all")  # the control
    with relay, environment({"WAYLAND_DISPLAY": relay.path, "SWAYSOCK": sway.where.swaysock}):
        assert check_input(Settings()).ok and check_backend(Settings()).ok
    hidden = {"zwlr_virtual_pointer_manager_v1"}
    with HidingProxy(sway.where.socket, hidden, tmp_path / "wayland-hidden") as proxy:
        offered = compositor_globals(proxy.path)
        assert "zwlr_virtual_pointer_manager_v1" not in offered
        assert "zwp_virtual_keyboard_manager_v1" in offered
        env = {"WAYLAND_DISPLAY": proxy.path, "SWAYSOCK": sway.where.swaysock}
        with environment(env):
            chosen = Settings(desktop=DesktopSettings(backend="wlroots"))
            checks = [check_backend(chosen), check_input(chosen), check_backend(Settings())]
        assert checks[0].detail == (
            f"wlroots at {proxy.path}: the compositor offers no zwlr_virtual_pointer_manager_v1 "
            "(the pointer): Jarvis cannot act there"
        )
        assert "offers no zwlr_virtual_pointer_manager_v1" in checks[1].detail
        assert all(not c.ok and "\n" not in c.detail for c in checks)
        with pytest.raises(WaylandError, match="no zwlr_virtual_pointer_manager_v1"):
            WlrootsDesktop.open(Settings(), WaylandDisplay(proxy.path, sway.where.swaysock))
