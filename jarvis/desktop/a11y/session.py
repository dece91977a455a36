"""A private session bus and accessibility bus for one X display.

:class:`A11ySession` starts ``dbus-daemon --session`` (its own process, not forked away,
so it is stopped with the session) and the AT-SPI bus launcher on it for a display, and
gives the environment applications started there need to publish their widgets
(:meth:`A11ySession.publish_env`, :meth:`A11ySession.app_env`): the bus address, the
switches GTK and Qt read, and a ``PATH`` that starts with a folder of Chromium launchers
adding ``--force-renderer-accessibility`` (Chromium reads no environment variable for its
pages' trees, and Debian's ``/usr/bin/chromium`` resets ``CHROMIUM_FLAGS``), so a Chromium
the model opens later from a terminal or a launcher publishes its pages too. Nothing here
writes this process's environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from jarvis.desktop.a11y.bus import A11yError, accessibility_address

LAUNCHER = "/usr/libexec/at-spi-bus-launcher"
CHROMIUM_FLAG = "--force-renderer-accessibility"
PUBLISH_ENV = {
    "NO_AT_BRIDGE": "0",  # GTK 3: load the AT-SPI bridge
    "GTK_A11Y": "atspi",  # GTK 4
    "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1",  # Qt 5/6 without a screen reader running
    "QT_ACCESSIBILITY": "1",
    "ACCESSIBILITY_ENABLED": "1",  # Java, LibreOffice
}
CHROMIUMS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def can_start() -> str | None:
    """Why a session cannot be started here (a missing program), or None."""
    if shutil.which("dbus-daemon") is None:
        return "dbus-daemon is not installed (Debian: dbus)"
    if not os.access(LAUNCHER, os.X_OK):
        return f"{LAUNCHER} is missing (Debian: at-spi2-core)"
    return None


class A11ySession:
    """A session bus with the accessibility bus on it; stop it when done."""

    def __init__(self, display_env: dict[str, str], timeout: float = 10.0) -> None:
        why = can_start()
        if why:
            raise A11yError(why)
        base = {k: v for k, v in os.environ.items() if not k.startswith(("DBUS_", "DISPLAY"))}
        base.update(display_env)
        self._procs: list[subprocess.Popen[bytes]] = []
        self._shims: tempfile.TemporaryDirectory[str] | None = None
        daemon = subprocess.Popen(
            ["dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1"],
            env=base,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._procs.append(daemon)
        assert daemon.stdout is not None
        line = daemon.stdout.readline().decode().strip()
        if not line:
            self.stop()
            raise A11yError("dbus-daemon gave no address")
        self.address = line
        base["DBUS_SESSION_BUS_ADDRESS"] = line
        self.env = base
        self._procs.append(
            subprocess.Popen(
                [LAUNCHER, "--launch-immediately"],
                env=base,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        deadline = time.monotonic() + timeout
        while True:  # the launcher owns org.a11y.Bus once it answers GetAddress
            try:
                accessibility_address(line, timeout=1.0)
                break
            except A11yError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise A11yError("the accessibility bus did not start in time") from None
                time.sleep(0.05)

    def publish_env(self) -> dict[str, str]:
        """What an application on this display needs to publish its tree (added to an
        environment): the session bus, the toolkits' switches and the launchers' ``PATH``."""
        path = os.environ.get("PATH", os.defpath)
        shims = self._chromium_shims()
        return {
            **PUBLISH_ENV,
            "DBUS_SESSION_BUS_ADDRESS": self.address,
            "PATH": f"{shims}{os.pathsep}{path}" if shims else path,
        }

    def _chromium_shims(self) -> str:
        """A folder of launchers, one for each Chromium installed, that start it with its
        pages' accessibility on; empty when none is installed."""
        if self._shims is None:
            found = {name: shutil.which(name) for name in CHROMIUMS}
            if not any(found.values()):
                return ""
            self._shims = tempfile.TemporaryDirectory(prefix="jarvis-a11y-bin-")
            for name, real in found.items():
                if real is None:
                    continue
                shim = Path(self._shims.name) / name
                shim.write_text(f'#!/bin/sh\nexec {real} {CHROMIUM_FLAG} "$@"\n')
                shim.chmod(0o755)
        return self._shims.name

    def app_env(self, home: Path | None = None) -> dict[str, str]:
        """The environment for an application on this display that publishes its tree."""
        env = dict(self.env)
        env.update(self.publish_env())
        if home is not None:
            env["HOME"] = str(home)
        return env

    def stop(self) -> None:
        for proc in reversed(self._procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=5)
            if proc.stdout is not None:
                proc.stdout.close()
        self._procs.clear()
        if self._shims is not None:
            self._shims.cleanup()
            self._shims = None

    def __enter__(self) -> A11ySession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
