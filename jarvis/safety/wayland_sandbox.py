"""A private headless sway: a Wayland desktop Jarvis can drive without touching the
person's session (``--sandbox wayland``, the tests).

sway refuses to run as root, so when this process is root it runs as an unprivileged
system user (``jarvis-wl``, created when missing) through ``setpriv``; otherwise as this
process's user. Either way it gets its own 0700 ``XDG_RUNTIME_DIR``. This process reaches
the compositor through the socket's absolute path (root passes the directory's mode; a
same-user process owns it). Outputs are headless (``WLR_BACKENDS=headless``, pixman
rendering, no input devices); each is set over IPC once sway answers, and
:attr:`PrivateSway.outputs` is what sway reports back, never what was asked.
Apps run as the compositor's user (:meth:`PrivateSway.run_app`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from jarvis.desktop.wlroots.session import Output, WaylandDisplay, WaylandError, read_outputs
from jarvis.safety.sandbox import _end, parse_size

if TYPE_CHECKING:
    from jarvis.config import Settings
    from jarvis.desktop.backend import Where

log = logging.getLogger(__name__)

SANDBOX_KINDS = ("x11", "wayland")
"""The private displays ``--sandbox`` starts: Xvfb (the default) or a headless sway."""
USER = "jarvis-wl"
START_TIMEOUT_S = 20.0
STOP_GRACE_S = 5.0
POLL_S = 0.02


@dataclass(frozen=True)
class OutputSpec:
    """An output to make: its mode in device pixels, its scale and its position."""

    width: int
    height: int
    scale: float = 1.0
    x: int = 0
    y: int = 0


def sway_user() -> pwd.struct_passwd | None:
    """The user sway runs as: None for this process's own user; when root, the system
    user ``jarvis-wl`` (created with ``useradd`` when missing)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(USER)


class PrivateSway:
    """A headless sway with ``outputs``; use as a context manager or start()/stop()."""

    def __init__(self, outputs: list[OutputSpec] | None = None) -> None:
        self.specs = outputs or [OutputSpec(1280, 720)]
        self.user = sway_user()
        self.outputs: list[Output] = []
        self.where: WaylandDisplay | None = None
        self._dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._apps: list[subprocess.Popen[bytes]] = []

    @property
    def runtime_dir(self) -> Path:
        if self._dir is None:
            raise WaylandError("the private sway is not started")
        return self._dir / "run"

    def user_env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The environment of a process run as the compositor's user, in its session."""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "XDG_RUNTIME_DIR": str(self.runtime_dir),
            "HOME": str(self._dir),
        }
        if self.where is not None:
            env["WAYLAND_DISPLAY"] = self.where.socket
            env["SWAYSOCK"] = self.where.swaysock
        return {**env, **(extra or {})}

    def _as_user(self, argv: list[str]) -> list[str]:
        if self.user is None:
            return argv
        ids = [f"--reuid={self.user.pw_uid}", f"--regid={self.user.pw_gid}", "--init-groups"]
        return ["setpriv", *ids, *argv]

    def _own(self, path: Path, mode: int) -> None:
        path.chmod(mode)
        if self.user is not None:
            os.chown(path, self.user.pw_uid, self.user.pw_gid)

    def start(self) -> PrivateSway:
        if shutil.which("sway") is None:
            raise WaylandError("sway is not installed (apt install sway)")
        self._dir = Path(tempfile.mkdtemp(prefix="jarvis-sway-"))
        self._own(self._dir, 0o755)
        run = self._dir / "run"
        run.mkdir()
        self._own(run, 0o700)
        config = self._dir / "config"
        config.write_text("default_border none\ndefault_floating_border none\n")
        config.chmod(0o644)
        env = self.user_env(
            {
                "WLR_BACKENDS": "headless",
                "WLR_RENDERER": "pixman",
                "WLR_LIBINPUT_NO_DEVICES": "1",
                "WLR_HEADLESS_OUTPUTS": str(len(self.specs)),
            }
        )
        log = (self._dir / "sway.log").open("wb")
        self._proc = subprocess.Popen(
            self._as_user(["sway", "-c", str(config)]),
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        try:
            self.where = self._wait_ready()
            self._set_outputs()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> WaylandDisplay:
        """Wait for both sockets and a first IPC answer (sway's own signal that it is up)."""
        assert self._proc is not None
        uid = self.user.pw_uid if self.user is not None else os.getuid()
        ipc = self.runtime_dir / f"sway-ipc.{uid}.{self._proc.pid}.sock"
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise WaylandError(f"sway exited at start: {self.log_tail()}")
            sockets = sorted(p for p in self.runtime_dir.glob("wayland-*") if p.suffix != ".lock")
            if ipc.exists() and sockets:
                where = WaylandDisplay(str(sockets[0]), str(ipc))
                try:
                    if len(read_outputs(where)) == len(self.specs):
                        return where
                except WaylandError:
                    pass  # the IPC socket exists before sway listens on it
            time.sleep(POLL_S)
        raise WaylandError(f"sway did not come up in {START_TIMEOUT_S:.0f} s: {self.log_tail()}")

    def _set_outputs(self) -> None:
        """Give each output its mode, scale and position (sway applies an IPC command
        before it answers), then read back where sway put them."""
        from jarvis.desktop.wlroots.session import swaymsg

        assert self.where is not None
        names = [o.name for o in read_outputs(self.where)]
        for name, spec in zip(sorted(names), self.specs, strict=True):
            swaymsg(
                self.where,
                f"output {name} mode {spec.width}x{spec.height} scale {spec.scale:g} "
                f"position {spec.x} {spec.y}",
            )
        self.outputs = read_outputs(self.where)

    def log_tail(self, chars: int = 600) -> str:
        if self._dir is None or not (self._dir / "sway.log").exists():
            return ""
        return (self._dir / "sway.log").read_text(errors="replace")[-chars:]

    def run_app(
        self,
        argv: list[str],
        env: dict[str, str] | None = None,
        output: int | IO[bytes] | None = subprocess.PIPE,
    ) -> subprocess.Popen[bytes]:
        """Start ``argv`` as the compositor's user on it (its standard output to
        ``output``: a pipe to read by default); ended by :meth:`stop`."""
        proc = subprocess.Popen(
            self._as_user(argv),
            env=self.user_env(env),
            cwd=str(self._dir),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.DEVNULL if output is subprocess.PIPE else output,
            start_new_session=True,
        )
        self._apps.append(proc)
        return proc

    def stop(self) -> None:
        for proc in reversed(self._apps):
            _end(proc)
            _wait_group_gone(proc.pid)  # its children too: they may write in the home
        self._apps = []
        if self._proc is not None:
            _end(self._proc)
            self._proc = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        self.where = None

    def __enter__(self) -> PrivateSway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _wait_group_gone(pgid: int) -> None:
    """Wait (a few seconds at most) until no process of group ``pgid`` is left: an app
    started through a wrapper (dbus-run-session) outlives the wrapper by a moment and
    writes its settings on the way out."""
    deadline = time.monotonic() + STOP_GRACE_S
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(POLL_S)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def sandboxed_wayland(settings: Settings, body: Callable[[WaylandDisplay], int]) -> int:
    """Run a command's ``body`` on a private headless sway (``jarvis run --sandbox
    wayland``): one output of ``safety.sandbox.size`` at scale 1, with the apps of
    ``safety.sandbox.apps`` started on it as the compositor's user (their output in
    ``apps.log`` beside it; the window manager setting is for X11: sway is its own); 1
    when the compositor cannot be started."""
    box = settings.safety.sandbox
    width, height = parse_size(box.size)
    try:
        with PrivateSway([OutputSpec(width, height)]) as sway:
            assert sway.where is not None
            with (sway.runtime_dir.parent / "apps.log").open("ab") as apps_log:
                for app in box.apps:
                    sway.run_app(app, output=apps_log)
            log.info("private sway %s (%dx%d) started", sway.where.socket, width, height)
            print(
                f"jarvis: running on the private Wayland desktop {sway.where.socket}",
                file=sys.stderr,
            )
            return body(sway.where)
    except (WaylandError, OSError, subprocess.CalledProcessError) as exc:
        print(f"jarvis: the private Wayland desktop: {exc}", file=sys.stderr)
        return 1


def on_private_display(kind: str, settings: Settings, body: Callable[[Where], int]) -> int:
    """Run a command's ``body`` on a private display of ``kind`` (one of
    :data:`SANDBOX_KINDS`: ``serve``, ``worker`` and ``run`` with ``--sandbox [KIND]``):
    a headless sway for ``wayland``, else Xvfb; 1 when it cannot be started."""
    if kind == "wayland":
        return sandboxed_wayland(settings, body)
    from jarvis.safety.sandbox import sandboxed

    return sandboxed(settings, body)
