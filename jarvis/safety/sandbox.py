"""A private virtual display for a task (``jarvis run --sandbox``, ``safety.sandbox``).

:class:`Sandbox` starts Xvfb at the configured size on a free display number
(``-displayfd``: the server picks it and reports it once it accepts connections) with
its own MIT-MAGIC-COOKIE, so only holders of the cookie can connect; then a light window
manager (``safety.sandbox.window_manager``, default matchbox-window-manager, skipped
with a warning when it is not installed) and the applications of ``safety.sandbox.apps``.
``where`` is the display (name and cookie file) a :class:`~jarvis.desktop.desktop.Desktop`
is opened on; ``env()`` is what a child process needs to work on it (``DISPLAY``,
``XAUTHORITY``). ``stop()`` ends every process it started (each in its own process group)
and removes the cookie. This process's own ``DISPLAY`` is never changed: the agent gets a
Desktop on the sandbox, the kill switch stays on the person's display.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING

from jarvis.desktop.a11y.bus import A11yError
from jarvis.desktop.a11y.session import CHROMIUM_FLAG, CHROMIUMS, A11ySession
from jarvis.desktop.x11 import X11Error, XDisplay
from jarvis.safety.settings import SandboxSettings

if TYPE_CHECKING:
    from jarvis.config import Settings

log = logging.getLogger(__name__)

_FAMILY_LOCAL, _FAMILY_WILD = 256, 0xFFFF
STOP_WAIT_S = 5.0


def xauth_entries(number: str, cookie: bytes) -> bytes:
    """Xauthority records for display ``number``: this host (FamilyLocal, what
    python-xlib looks up) and any host (FamilyWild, what libXau also accepts)."""

    def field(data: bytes) -> bytes:
        return len(data).to_bytes(2, "big") + data

    def entry(family: int, address: bytes) -> bytes:
        return (
            family.to_bytes(2, "big")
            + field(address)
            + field(number.encode())
            + field(b"MIT-MAGIC-COOKIE-1")
            + field(cookie)
        )

    return entry(_FAMILY_LOCAL, socket.gethostname().encode()) + entry(_FAMILY_WILD, b"")


def parse_size(text: str) -> tuple[int, int]:
    width, _, height = text.lower().partition("x")
    return int(width), int(height)


class Sandbox:
    """Xvfb, a window manager and apps on a private display; a context manager."""

    dir_prefix = "jarvis-sandbox-"
    """Of the temporary folder that holds the cookie (and names the Xvfb's -auth file)."""

    def __init__(self, settings: SandboxSettings, accessibility: bool = False) -> None:
        self.settings = settings
        self.accessibility = accessibility
        """Start a session bus with the accessibility bus for the display's apps."""
        self._a11y: A11ySession | None = None
        self.width, self.height = parse_size(settings.size)
        self.display = ""
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self.xauthority = ""
        self._xvfb: subprocess.Popen[bytes] | None = None
        self._children: list[subprocess.Popen[bytes]] = []
        self._log: IO[bytes] | None = None
        self._xvfb_log = Path(os.devnull)

    @property
    def log_path(self) -> Path | None:
        """Where the window manager and the apps write their output."""
        return Path(self._dir.name) / "apps.log" if self._dir is not None else None

    def env(self) -> dict[str, str]:
        env = {"DISPLAY": self.display, "XAUTHORITY": self.xauthority}
        if self._a11y is not None:  # apps publish their widgets on its accessibility bus
            env.update(self._a11y.publish_env())
        return env

    @property
    def where(self) -> XDisplay:
        """The display, for a Desktop on it (once started)."""
        bus = self._a11y.address if self._a11y is not None else ""
        return XDisplay(self.display, self.xauthority, bus, private=True)

    def start(self) -> Sandbox:
        if shutil.which("Xvfb") is None:
            raise X11Error("a private display needs Xvfb (Debian/Ubuntu: apt-get install xvfb)")
        self._dir = tempfile.TemporaryDirectory(prefix=self.dir_prefix)
        self.xauthority = str(Path(self._dir.name) / "Xauthority")
        try:
            self._start_xvfb()
            self._log = open(Path(self._dir.name) / "apps.log", "ab")  # noqa: SIM115
            if self.accessibility:
                try:
                    self._a11y = A11ySession(
                        {"DISPLAY": self.display, "XAUTHORITY": self.xauthority}
                    )
                except A11yError as exc:
                    log.warning("sandbox: no accessibility bus (%s); the screenshot alone", exc)
            wm = self.settings.window_manager
            if wm and shutil.which(wm[0]):
                self._spawn(wm)
            elif wm:
                log.warning("sandbox: window manager %s is not installed; none started", wm[0])
            for app in self.settings.apps:
                self._spawn(app)
        except BaseException:
            self.stop()
            raise
        log.info("sandbox display %s (%dx%d) started", self.display, self.width, self.height)
        return self

    def _start_xvfb(self) -> None:
        cookie = secrets.token_bytes(16)
        Path(self.xauthority).write_bytes(xauth_entries("0", cookie))
        read_fd, write_fd = os.pipe()
        assert self._dir is not None
        # to a file, not a pipe: a pipe nobody reads fills up and then the server stops
        self._xvfb_log = Path(self._dir.name) / "xvfb.log"
        cmd = [
            *("Xvfb", "-displayfd", str(write_fd), "-noreset", "-nolisten", "tcp"),
            *("-auth", self.xauthority, "-screen", "0", f"{self.width}x{self.height}x24"),
        ]
        with self._xvfb_log.open("ab") as errors:  # the server keeps its own copy
            self._xvfb = subprocess.Popen(
                cmd,
                pass_fds=(write_fd,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=errors,
                start_new_session=True,
            )
        os.close(write_fd)
        try:
            number = self._read_number(read_fd)
        finally:
            os.close(read_fd)
        self.display = f":{number}"
        Path(self.xauthority).write_bytes(xauth_entries(number, cookie))

    def _read_number(self, fd: int) -> str:
        assert self._xvfb is not None
        deadline = time.monotonic() + self.settings.start_timeout_s
        data = b""
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(0.0, left))
            chunk = os.read(fd, 64) if ready else b""
            if not chunk:
                if self._xvfb.poll() is None:
                    self._xvfb.kill()
                self._xvfb.wait(timeout=STOP_WAIT_S)
                tail = self._xvfb_log.read_text(errors="replace").strip()[-300:]
                raise X11Error(f"the sandbox's Xvfb did not report a display: {tail}")
            data += chunk
        return data.decode().strip()

    def _spawn(self, command: list[str]) -> None:
        if self._a11y is not None and Path(command[0]).name in CHROMIUMS:
            command = [command[0], CHROMIUM_FLAG, *command[1:]]  # its pages' trees too
        try:
            proc = subprocess.Popen(
                command,
                env=app_env(self.env()),
                stdin=subprocess.PIPE,  # held open: some apps quit at EOF on stdin
                stdout=self._log,
                stderr=self._log,
                start_new_session=True,
            )
        except OSError as exc:
            raise X11Error(f"sandbox: cannot start {command[0]!r}: {exc}") from exc
        self._children.append(proc)

    @property
    def running(self) -> list[subprocess.Popen[bytes]]:
        """The processes started on the display that have not exited."""
        procs = [*self._children, *([self._xvfb] if self._xvfb is not None else [])]
        return [p for p in procs if p.poll() is None]

    def wait_ended(self) -> int | None:
        """Block until the display's server exits (its status); None when not started."""
        xvfb = self._xvfb
        return xvfb.wait() if xvfb is not None else None

    def stop(self) -> None:
        """End the apps, the window manager and the display, in that order."""
        for proc in reversed(self._children):
            _end(proc)
        self._children = []
        if self._a11y is not None:
            self._a11y.stop()
            self._a11y = None
        if self._xvfb is not None:
            _end(self._xvfb)
            self._xvfb = None
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def __enter__(self) -> Sandbox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def app_env(display: dict[str, str]) -> dict[str, str]:
    """The environment of an app on the private display: this process's without its
    secrets (the model sees the screen, so an app could show them), on ``display``."""
    from jarvis.redaction import is_secret_env

    return {**{k: v for k, v in os.environ.items() if not is_secret_env(k)}, **display}


def _end(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, then SIGKILL what is left after a grace period."""
    if proc.stdin is not None:
        with contextlib.suppress(OSError):
            proc.stdin.close()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=STOP_WAIT_S)
            return
        except subprocess.TimeoutExpired:
            continue


def wants_tree(settings: Settings) -> bool:
    """Whether the agent reads the accessibility tree (the ``observation`` setting and the
    model profile both ask for it): then a display Jarvis starts gets the bus too."""
    from jarvis.llm.profiles.select import observation_kind

    return observation_kind(settings) != "screenshot"


def sandboxed(settings: Settings, body: Callable[[XDisplay], int]) -> int:
    """Run a command's ``body`` with the private display it is to work on (``jarvis run``
    and ``jarvis serve`` with ``--sandbox``); 1 when the display cannot be started."""
    try:
        with Sandbox(settings.safety.sandbox, wants_tree(settings)) as box:
            print(f"jarvis: running on the private display {box.display}", file=sys.stderr)
            return body(box.where)
    except X11Error as exc:
        print(f"jarvis: {exc}", file=sys.stderr)
        return 1
