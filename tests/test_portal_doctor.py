"""`jarvis doctor` and the backend choice on a portal desktop, against the fake portal:
the interface versions, the restore token's state, one line when the portal is missing,
consent is refused or no picture comes; and PortalDesktop.open failing in one line
rather than handing out a desktop that cannot see."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from jarvis.config import Settings
from jarvis.desktop.backend import (
    BackendError,
    choose_backend,
    reach_problem,
    task_display,
    waits_for_consent,
)
from jarvis.desktop.portal import frames
from jarvis.desktop.portal.bus import PortalError
from jarvis.desktop.portal.desktop import PortalDesktop
from jarvis.desktop.portal.display import PortalDisplay
from jarvis.desktop.settings import DesktopSettings
from jarvis.desktop.x11 import XDisplay
from jarvis.doctor import check_backend, check_display, check_input
from tests.portal_fake import FakePortal, SessionBus
from tests.xserver import environment

RD, SC = "org.freedesktop.portal.RemoteDesktop", "org.freedesktop.portal.ScreenCast"


@pytest.fixture(scope="module")
def session_bus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SessionBus]:
    bus = SessionBus(tmp_path_factory.mktemp("bus"))
    yield bus
    bus.close()


@pytest.fixture
def portal(session_bus: SessionBus) -> Iterator[FakePortal]:
    fake = FakePortal(session_bus.address).serve()
    yield fake
    fake.close()
    assert fake.errors == [], "the fake portal refused a call's arguments"


@pytest.fixture
def gnome(session_bus: SessionBus) -> Iterator[dict[str, str]]:
    env = {
        "WAYLAND_DISPLAY": "wayland-0",
        "XDG_RUNTIME_DIR": "/run/user/1000",
        "XDG_CURRENT_DESKTOP": "GNOME",
        "DBUS_SESSION_BUS_ADDRESS": session_bus.address,
        "SWAYSOCK": "",
    }
    with environment(env):
        yield env


def _settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, desktop=DesktopSettings(backend="auto"))


def test_doctor_names_versions_token_state_and_asks_consent_once(
    portal: FakePortal, gnome: dict[str, str], tmp_path: Path
) -> None:
    settings = _settings(tmp_path)
    backend = check_backend(settings)
    assert backend.ok, backend.detail
    assert backend.detail == (
        f"portal on GNOME: {RD} v2, {SC} v4; restore token none; "
        "ConnectToEIS not used (Debian 12 has no libei)"
    )
    assert reach_problem(PortalDisplay.from_env(gnome)) is None
    first = check_input(settings)
    assert first.ok and first.detail == f"pointer and keyboard granted by {RD} over 1 stream(s)"
    assert "restore token stored" in check_backend(settings).detail
    assert check_input(settings).ok and portal.dialogs == 1


def test_doctor_fails_in_one_line_when_consent_is_refused(
    portal: FakePortal, gnome: dict[str, str], tmp_path: Path
) -> None:
    portal.start_code = 1
    check = check_input(_settings(tmp_path))
    assert not check.ok
    assert check.detail == "the desktop refused remote control: the consent dialog was cancelled"


def test_doctor_display_fails_in_one_line_when_no_picture_comes(
    portal: FakePortal, gnome: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(frames, "FIRST_FRAME_TIMEOUT_S", 1.0)
    check = check_display(_settings(tmp_path))  # the fake's PipeWire fd leads nowhere
    assert not check.ok
    assert check.detail == "no picture came from screen-cast stream 42 in 1 s"


def test_doctor_says_an_old_portal_asks_every_time(
    portal: FakePortal, gnome: dict[str, str], tmp_path: Path
) -> None:
    portal.versions = (1, 4)
    detail = check_backend(_settings(tmp_path)).detail
    assert f"{RD} v1" in detail and "consent is asked every time" in detail


def test_doctor_fails_in_one_line_without_a_portal(
    session_bus: SessionBus, gnome: dict[str, str], tmp_path: Path
) -> None:
    for check in (check_backend, check_input):
        found = check(_settings(tmp_path))
        assert not found.ok and "\n" not in found.detail
        assert found.detail.startswith("no xdg-desktop-portal on the session bus"), found.detail
    problem = reach_problem(PortalDisplay.from_env(gnome))  # what run's preflight asks
    assert problem is not None and problem.startswith("no xdg-desktop-portal on the session bus")


def test_opening_the_desktop_fails_in_one_line_and_closes_the_session(
    portal: FakePortal, gnome: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    told: list[str] = []
    where = PortalDisplay.from_env(gnome)
    monkeypatch.setattr(frames, "FIRST_FRAME_TIMEOUT_S", 1.0)
    with pytest.raises(PortalError, match=r"^no picture came from screen-cast stream 42") as failed:
        PortalDesktop.open(_settings(tmp_path), where, notify=told.append)
    assert "\n" not in str(failed.value)
    assert told == [
        "the desktop asks whether Jarvis may control it: answer the remote desktop dialog "
        "on its own screen (GNOME)"
    ]
    assert [name for _i, name, _a in portal.calls][-1] == "Close"


def test_the_backend_choice() -> None:
    gnome = {"WAYLAND_DISPLAY": "w", "XDG_CURRENT_DESKTOP": "ubuntu:GNOME"}
    assert choose_backend("portal", {}) == "portal"
    assert choose_backend("auto", gnome) == "portal"
    assert (
        choose_backend("auto", {"WAYLAND_DISPLAY": "w", "XDG_CURRENT_DESKTOP": "KDE"}) == "portal"
    )
    person = XDisplay(":7")
    env = {**gnome, "XDG_RUNTIME_DIR": "/run/u", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/b"}
    assert task_display("auto", env, person) == PortalDisplay(
        "/run/u/w", "", "unix:path=/b", "ubuntu:GNOME"
    )
    with pytest.raises(BackendError, match="DBUS_SESSION_BUS_ADDRESS is not set"):
        task_display("portal", {"WAYLAND_DISPLAY": "w"}, person)
    assert waits_for_consent(task_display("auto", env, person))
    assert not waits_for_consent(person)
