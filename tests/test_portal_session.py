"""The portal session against a fake xdg-desktop-portal on a private session bus:
consent asked once, the restore token stored (0600) and reused, a token the portal
rejects dropped and consent asked again, refusals in one line, every call's arguments
checked by the fake."""

from __future__ import annotations

import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from jarvis.desktop.portal.bus import ConsentRefused, PortalBus, PortalError
from jarvis.desktop.portal.probe import portal_problem, portal_versions
from jarvis.desktop.portal.session import PortalSession
from jarvis.desktop.portal.token import RestoreToken
from tests.portal_fake import FakePortal, SessionBus


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
def bus(session_bus: SessionBus) -> Iterator[PortalBus]:
    client = PortalBus(session_bus.address, timeout=5)
    yield client
    client.close()


def test_consent_is_asked_once_and_the_token_reused(
    portal: FakePortal, bus: PortalBus, tmp_path: Path
) -> None:
    tokens, told = RestoreToken(tmp_path), []
    first = PortalSession(bus, tokens, told.append).start()
    assert portal.dialogs == 1 and first.asked_consent
    assert len(told) == 1 and "answer the remote desktop dialog" in told[0]
    assert tokens.state == "stored" and tokens.load() == "token-1"
    assert stat.S_IMODE(tokens.path.stat().st_mode) == 0o600
    assert [(s.node, s.box) for s in first.streams] == [(42, (0, 0, 1280, 720))]
    first.close()

    second = PortalSession(bus, RestoreToken(tmp_path), told.append).start()
    assert portal.dialogs == 1, "the stored token should have spared the dialog"
    assert not second.asked_consent and len(told) == 1
    devices = portal.of("SelectDevices")
    assert "restore_token" not in devices[0][1]
    assert devices[1][1]["restore_token"] == ("s", "token-1")
    assert all(options["persist_mode"] == ("u", 2) for _h, options in devices)
    assert RestoreToken(tmp_path).load() == "token-2"  # each Start brings a fresh one
    second.close()
    order = [name for _i, name, _a in portal.calls]
    assert order[:4] == ["CreateSession", "SelectDevices", "SelectSources", "Start"]
    assert order.count("Close") == 2


def test_a_rejected_token_is_dropped_and_consent_asked_again(
    portal: FakePortal, bus: PortalBus, tmp_path: Path
) -> None:
    RestoreToken(tmp_path).save("stale-token")
    session = PortalSession(bus, RestoreToken(tmp_path)).start()
    assert portal.dialogs == 1 and session.asked_consent
    starts = portal.of("SelectDevices")
    assert starts[0][1]["restore_token"] == ("s", "stale-token")
    assert "restore_token" not in starts[1][1]
    assert RestoreToken(tmp_path).load() == "token-1"
    session.close()


def test_a_rejected_token_then_a_refusal_leaves_the_state_rejected(
    portal: FakePortal, bus: PortalBus, tmp_path: Path
) -> None:
    RestoreToken(tmp_path).save("stale-token")
    portal.start_code = 1
    with pytest.raises(ConsentRefused):
        PortalSession(bus, RestoreToken(tmp_path)).start()
    assert RestoreToken(tmp_path).state == "rejected"
    assert RestoreToken(tmp_path).load() is None


@pytest.mark.parametrize(
    ("code", "line"),
    [
        (1, "the desktop refused remote control: the consent dialog was cancelled"),
        (2, "the desktop refused remote control: the portal ended the request"),
    ],
)
def test_a_refusal_is_one_line_and_closes_the_session(
    portal: FakePortal, bus: PortalBus, tmp_path: Path, code: int, line: str
) -> None:
    portal.start_code = code
    with pytest.raises(ConsentRefused) as refused:
        PortalSession(bus, RestoreToken(tmp_path)).start()
    assert str(refused.value) == line and refused.value.code == code
    assert RestoreToken(tmp_path).state == "none"
    assert [name for _i, name, _a in portal.calls][-1] == "Close"


def test_a_session_without_the_keyboard_is_refused(
    portal: FakePortal, bus: PortalBus, tmp_path: Path
) -> None:
    portal.devices = 2  # the pointer only
    with pytest.raises(ConsentRefused, match=r"granted remote control without: keyboard$"):
        PortalSession(bus, RestoreToken(tmp_path)).start()


def test_versions_and_a_missing_portal(portal: FakePortal, session_bus: SessionBus) -> None:
    assert portal_versions(session_bus.address) == {
        "org.freedesktop.portal.RemoteDesktop": 2,
        "org.freedesktop.portal.ScreenCast": 4,
    }
    portal.close()
    problem = portal_problem(session_bus.address)
    assert problem is not None and problem.startswith("no xdg-desktop-portal on the session bus")
    assert "\n" not in problem
    portal.serve()  # the fixture closes it again


def test_no_session_bus_is_one_line(tmp_path: Path) -> None:
    problem = portal_problem(f"unix:path={tmp_path}/nothing")
    assert problem is not None and "no session bus" in problem and "\n" not in problem


def test_a_cancelled_task_stops_waiting_for_consent(
    portal: FakePortal, bus: PortalBus, tmp_path: Path
) -> None:
    portal.answer_start = False  # the dialog stays open on the desk
    stop, told = threading.Event(), []
    stop.set()  # cancelled: the wait for the dialog's answer ends at once
    session = PortalSession(bus, RestoreToken(tmp_path), told.append, stop=stop)
    with pytest.raises(PortalError, match=r"^stopped while waiting for the desktop's answer$"):
        session.start()
    assert len(told) == 1 and portal.dialogs == 1
    assert [name for _i, name, _a in portal.calls][-1] == "Close"
    assert RestoreToken(tmp_path).state == "none"
