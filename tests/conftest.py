"""Shared fixtures: a real X display and a real Tk window to act on.

- ``xserver`` (session): a private Xvfb 1920x1080x24 started with ``-displayfd``,
  ``-noreset`` and its own cookie in a temporary ``XAUTHORITY`` file. It sets
  ``DISPLAY`` and ``XAUTHORITY`` in ``os.environ`` for the whole session, so import
  pyautogui (or build a ``jarvis.desktop.input.Input``) only inside tests that use
  it. Attributes: ``.display`` (":N"), ``.width``, ``.height``, ``.xauthority``,
  ``.env()``. For another screen size use ``tests.xserver.start_xvfb(w, h)`` and
  drive it from a child process: pyautogui stays bound to the first display it saw.
- ``tkapp`` (function): the Tk test app (``tests/tkapp.py``, a separate process)
  filling that screen, reset for each test (texts cleared, pad focused, event log
  emptied). One process serves the session and is restarted if it died. See
  ``tests/tkdriver.py`` for its API: ``events(kind)``, ``wait_for(pred)``,
  ``wait_kind(kind, **fields)``, ``mark()``, ``sync()``, ``focus(name)``,
  ``entry_text()``, ``notes_text()``, ``ok_pressed()``, ``widget_center(name)``
  (box, ok, notes, pad), ``animate(ms)``.
- ``desktop_input`` (function): ``Input(failsafe=True)`` for the session display.
- Every test that uses the session display starts with its pointer off the fail-safe
  corners (an earlier test may have left it at (1919, 0)); a test of the fail-safe moves
  it into a corner itself.
- A private temporary folder per pytest-xdist worker (``TMPDIR``, mode 1777 like /tmp):
  tests that count what lies in ``tempfile.gettempdir()`` (or processes whose command
  names a folder there) see only their own worker's, never a neighbour's.
- Under ``--dist loadgroup``, the tests of a module that share a module- or class-scoped
  set-up run on one worker (``pytest_collection_modifyitems``).
- A test marked ``serial`` must sit in a file that spells ``mark.serial``: `make test`'s
  serial pass collects only those files (a grep), so it is refused anywhere else.
- A network guard (session, automatic): in this process a socket may connect only to
  loopback (127.0.0.0/8, ::1) or a Unix socket. Anything else is refused, and the
  session ends with an error naming each address that was tried.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from jarvis.desktop.x11 import XDisplay, close_display
from tests.tkdriver import TkApp
from tests.xserver import start_xvfb

# the scripted model (`fake_model` fixture) for every test module
pytest_plugins = ["tests.fake_model"]

if TYPE_CHECKING:
    from jarvis.desktop.input import Input
    from tests.xserver import Xvfb


_WORKER_TMP = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist each worker gets its own ``TMPDIR`` (kept short: Unix socket
    paths live there) before any test runs; its children inherit it."""
    worker = getattr(config, "workerinput", {}).get("workerid")
    if worker is None:
        return
    folder = tempfile.mkdtemp(prefix=f"jt-{worker}-", dir=tempfile.gettempdir())
    os.chmod(folder, 0o1777)  # sandboxed apps run as other users, as they do in /tmp
    config.stash[_WORKER_TMP] = folder
    os.environ["TMPDIR"] = folder
    tempfile.tempdir = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_WORKER_TMP, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


_SHARED_SCOPES = ("package", "module", "class")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses a module- or class-scoped set-up (an app, a compositor, a matrix
    run in child processes) stays with its module on one pytest-xdist worker under
    ``--dist loadgroup``: the set-up runs once, not once on each worker that got one of
    its tests. A test that names its own ``xdist_group`` keeps it."""
    for item in items:
        _check_serial_mark(item)
        info = getattr(item, "_fixtureinfo", None)
        if info is None or item.get_closest_marker("xdist_group") is not None:
            continue
        scopes = {defs[-1].scope for defs in info.name2fixturedefs.values() if defs}
        if scopes & set(_SHARED_SCOPES):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


SERIAL_MARK = "mark.serial"


def _check_serial_mark(item: pytest.Item) -> None:
    """`make test`'s serial pass collects only the files that spell ``mark.serial`` (its
    grep): a serial test whose file does not would run in neither pass."""
    if item.get_closest_marker("serial") is None:
        return
    source = item.path.read_text(encoding="utf-8")
    if SERIAL_MARK not in source:
        raise pytest.UsageError(
            f"{item.nodeid} is marked serial, but its file never spells {SERIAL_MARK!r}: "
            "the Makefile's serial pass would not collect it"
        )


def _utf8(value: Any, depth: int = 0) -> Any:
    """``value`` writable as UTF-8: in a string, a lone surrogate (a byte read with
    surrogateescape) becomes its backslash escape; lists, tuples and the attributes of
    pytest's failure reports are fixed in place, all the way down."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if depth > 12:
        return value
    if isinstance(value, list):
        value[:] = [_utf8(item, depth + 1) for item in value]
    elif isinstance(value, tuple):
        return tuple(_utf8(item, depth + 1) for item in value)
    elif type(value).__module__.startswith("_pytest.") and hasattr(value, "__dict__"):
        for name, item in vars(value).items():
            setattr(value, name, _utf8(item, depth + 1))
    return value


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist sends the report
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """A pytest-xdist worker sends each report to the controller as UTF-8; a captured log
    or a failure holding a lone surrogate (tests/test_inbox_hostile.py logs junk bytes)
    would end the worker with an internal error. Such text is sent with backslash escapes."""
    if "PYTEST_XDIST_WORKER" in os.environ:
        report.sections = _utf8(report.sections)
        report.longrepr = _utf8(report.longrepr)


@pytest.fixture(scope="session")
def xserver() -> Iterator[Xvfb]:
    if "pyautogui" in sys.modules:  # it would act on whatever display it opened at import
        pytest.fail("pyautogui was imported before the xserver fixture started; import it lazily")
    with start_xvfb(1920, 1080, set_env=True) as server:
        yield server


class _Pointer:
    """One connection to the session display that puts its pointer back in the middle
    when a test left it in a fail-safe corner (a later test's ``Input(failsafe=True)``
    would take that for a person stopping Jarvis)."""

    def __init__(self, server: Xvfb) -> None:
        self.server = server
        self.display = server.where.open()

    def off_the_corners(self) -> None:
        root = self.display.screen().root
        at = root.query_pointer()
        right, bottom = self.server.width - 1, self.server.height - 1
        if at.root_x in (0, right) and at.root_y in (0, bottom):
            root.warp_pointer(self.server.width // 2, self.server.height // 2)
            self.display.sync()


@pytest.fixture(scope="session")
def _session_pointer(xserver: Xvfb) -> Iterator[_Pointer]:
    pointer = _Pointer(xserver)
    yield pointer
    close_display(pointer.display)


@pytest.fixture(autouse=True)
def _pointer_off_the_corners(request: pytest.FixtureRequest) -> None:
    """Every test on the session display starts with the pointer off its fail-safe
    corners, whatever the tests before it (on this pytest-xdist worker) did with it; a
    test of the fail-safe puts it in a corner itself."""
    if "xserver" in request.fixturenames:
        request.getfixturevalue("_session_pointer").off_the_corners()


class _AppHolder:
    """Keeps one Tk app for the session; starts a new one if the last one died."""

    def __init__(self) -> None:
        self.app: TkApp | None = None

    def get(self) -> TkApp:
        if self.app is None or not self.app.alive():
            if self.app is not None:
                self.app.close()
            self.app = TkApp.start()
        return self.app

    def close(self) -> None:
        if self.app is not None:
            self.app.close()


@pytest.fixture(scope="session")
def _tkapp_holder(xserver: Xvfb) -> Iterator[_AppHolder]:
    holder = _AppHolder()
    yield holder
    holder.close()


@pytest.fixture
def tkapp(_tkapp_holder: _AppHolder) -> TkApp:
    app = _tkapp_holder.get()
    app.reset()
    return app


@pytest.fixture
def desktop_input(xserver: Xvfb) -> Input:
    from jarvis.desktop.input import Input

    return Input(failsafe=True, display=XDisplay.from_env())


def _loopback(address: object) -> bool:
    if isinstance(address, (str, bytes)):  # a Unix socket path (or abstract name)
        return True
    host = address[0] if isinstance(address, tuple) and address else None
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(str(host)).is_loopback
    except ValueError:
        return False


@pytest.fixture(scope="session", autouse=True)
def network_guard() -> Iterator[list[str]]:
    """Tests talk only to 127.0.0.1: refuse and remember any other connection."""
    tried: list[str] = []
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def check(address: object) -> None:
        if not _loopback(address):
            tried.append(repr(address))
            raise ConnectionRefusedError(f"test network guard: {address!r} is not loopback")

    def connect(self: socket.socket, address: object) -> None:
        check(address)
        real_connect(self, address)  # type: ignore[arg-type]

    def connect_ex(self: socket.socket, address: object) -> int:
        check(address)
        return real_connect_ex(self, address)  # type: ignore[arg-type]

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    try:
        yield tried
    finally:
        socket.socket.connect, socket.socket.connect_ex = real_connect, real_connect_ex  # type: ignore[method-assign]
    if tried:
        pytest.fail(f"tests tried to reach the network: {sorted(set(tried))}")


BIG_COMPARISON = 20_000


def pytest_assertrepr_compare(op: str, left: object, right: object) -> list[str] | None:
    """A failing ``==`` between two large sequences (screen bytes, long texts) is told in
    one line: pytest's own diff is quadratic and ran for hours on two screenshots."""
    if op not in ("==", "!=") or not isinstance(left, bytes | str | list | tuple):
        return None
    if not isinstance(right, bytes | str | list | tuple):
        return None
    if max(len(left), len(right)) < BIG_COMPARISON:
        return None
    first = next(
        (i for i, (a, b) in enumerate(zip(left, right, strict=False)) if a != b),
        min(len(left), len(right)),
    )
    kind = type(left).__name__
    return [f"{kind} of {len(left)} {op} {len(right)} items: first difference at index {first}"]
