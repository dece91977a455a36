"""Where a wlroots desktop is, and its outputs as the compositor reports them.

:class:`WaylandDisplay` is the Wayland counterpart of
:class:`~jarvis.desktop.x11.XDisplay`: the compositor's socket (an absolute path, so a
client needs no ``XDG_RUNTIME_DIR`` of its own and a root process can reach a private
compositor run as another user) and sway's IPC socket. :func:`read_outputs` asks sway
for every active output's logical box and scale: positions are read back, never taken
from a config, since a compositor may place an output elsewhere.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

from jarvis.desktop.errors import InputError

IPC_TIMEOUT_S = 10.0
NEEDED = {
    "zwlr_virtual_pointer_manager_v1": "the pointer",
    "zwp_virtual_keyboard_manager_v1": "typing",
    "zwlr_screencopy_manager_v1": "screenshots",
}
"""The globals Jarvis cannot see or act without, and what each is for."""


class WaylandError(InputError):
    """The compositor, one of its protocols or one of the tools is missing or failed: an
    input action that meets it was not delivered."""


@dataclass(frozen=True)
class WaylandDisplay:
    """A Wayland compositor: its socket (absolute path), sway's IPC socket and the
    session bus of its session (whose accessibility bus the tree is read from)."""

    socket: str
    swaysock: str = ""
    session_bus: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> WaylandDisplay:
        """The compositor this process was started in (``WAYLAND_DISPLAY``, relative to
        ``XDG_RUNTIME_DIR`` unless absolute, and ``SWAYSOCK``), or the one ``env`` names."""
        env = os.environ if env is None else env
        name = env.get("WAYLAND_DISPLAY", "")
        if not name:
            raise WaylandError("WAYLAND_DISPLAY is not set: no Wayland compositor to drive")
        if not os.path.isabs(name):
            name = os.path.join(env.get("XDG_RUNTIME_DIR", ""), name)
        return cls(name, env.get("SWAYSOCK", ""), env.get("DBUS_SESSION_BUS_ADDRESS", ""))

    @property
    def name(self) -> str:
        return self.socket

    def env(self) -> dict[str, str]:
        """An environment for a child process (grim, wtype, wl-clipboard, swaymsg) that
        works on this compositor and on no other display."""
        base = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "XAUTHORITY")}
        base["WAYLAND_DISPLAY"] = self.socket
        if self.swaysock:
            base["SWAYSOCK"] = self.swaysock
        return base


@dataclass(frozen=True)
class Output:
    """One output: its name, logical box in the layout (x, y, width, height), scale."""

    name: str
    box: tuple[int, int, int, int]
    scale: float

    def contains(self, x: int, y: int) -> bool:
        left, top, width, height = self.box
        return left <= x < left + width and top <= y < top + height


def layout_box(outputs: list[Output]) -> tuple[int, int, int, int]:
    """The box around every output (x, y, width, height): the virtual pointer's extents."""
    if not outputs:
        raise WaylandError("the compositor reports no active output")
    left = min(o.box[0] for o in outputs)
    top = min(o.box[1] for o in outputs)
    right = max(o.box[0] + o.box[2] for o in outputs)
    bottom = max(o.box[1] + o.box[3] for o in outputs)
    return left, top, right - left, bottom - top


def swaymsg(where: WaylandDisplay, *args: str) -> object:
    """One sway IPC request through ``swaymsg -r``; its JSON answer."""
    if not where.swaysock:
        raise WaylandError("no sway IPC socket (SWAYSOCK) for this compositor")
    try:
        done = subprocess.run(
            ["swaymsg", "-s", where.swaysock, "-r", *args],
            capture_output=True,
            timeout=IPC_TIMEOUT_S,
            env=where.env(),
        )
    except FileNotFoundError as exc:
        raise WaylandError("swaymsg is not installed (apt install sway)") from exc
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).decode(errors="replace").strip()
        raise WaylandError(f"swaymsg {' '.join(args)} failed: {detail[:300]}")
    return json.loads(done.stdout or b"null")


def read_outputs(where: WaylandDisplay) -> list[Output]:
    """The active outputs, left to right then top to bottom, as sway reports them."""
    found = swaymsg(where, "-t", "get_outputs")
    outputs = [
        Output(
            str(o["name"]),
            (
                int(o["rect"]["x"]),
                int(o["rect"]["y"]),
                int(o["rect"]["width"]),
                int(o["rect"]["height"]),
            ),
            float(o.get("scale") or 1.0),
        )
        for o in found  # type: ignore[attr-defined]
        if o.get("active")
    ]
    return sorted(outputs, key=lambda o: (o.box[0], o.box[1]))


def compositor_globals(socket: str) -> dict[str, int]:
    """The interfaces the compositor at ``socket`` offers, with their versions (one
    registry roundtrip)."""
    from pywayland.client import Display

    display = Display(socket)
    try:
        display.connect()
    except Exception as exc:  # pywayland raises ValueError or RuntimeError
        raise WaylandError(f"cannot connect to the compositor at {socket}: {exc}") from exc
    found: dict[str, int] = {}
    try:
        registry = display.get_registry()

        def on_global(_registry: object, _name: int, interface: str, version: int) -> None:
            found[interface] = max(version, found.get(interface, 0))

        registry.dispatcher["global"] = on_global
        display.roundtrip()
    finally:
        display.disconnect()
    return found


def missing_protocols(offered: Mapping[str, int]) -> str | None:
    """One line naming the protocols Jarvis needs that the compositor does not offer."""
    gone = [f"{name} ({purpose})" for name, purpose in NEEDED.items() if name not in offered]
    if not gone:
        return None
    return f"the compositor offers no {', '.join(gone)}: Jarvis cannot act there"
