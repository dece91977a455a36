"""`jarvis doctor` on a wlroots desktop: the backend, the compositor, the protocols it
offers and each output's scale, and one line naming what is missing when Jarvis could
not see or act there (DESIGN section 15: never a silent no-op)."""

from __future__ import annotations

import os
from collections.abc import Mapping

from jarvis.config import Settings
from jarvis.desktop.backend import BackendError, choose_backend
from jarvis.desktop.portal.bus import PortalError
from jarvis.desktop.wlroots.session import (
    NEEDED,
    WaylandDisplay,
    WaylandError,
    compositor_globals,
    missing_protocols,
    read_outputs,
    swaymsg,
)

USEFUL = ("zwlr_data_control_manager_v1", "zwlr_foreign_toplevel_manager_v1")


def backend_of(settings: Settings, env: Mapping[str, str] | None = None) -> str:
    """The backend ``desktop.backend`` picks here (BackendError when none can drive)."""
    env = os.environ if env is None else env
    return choose_backend(settings.desktop.backend, env, compositor_globals)


def describe_wlroots(env: Mapping[str, str]) -> tuple[bool, str]:
    """(ok, one line): the compositor, its protocols with versions and its outputs."""
    where = WaylandDisplay.from_env(env)
    offered = compositor_globals(where.socket)
    problem = missing_protocols(offered)
    if problem is not None:
        return False, f"wlroots at {where.socket}: {problem}"
    name = env.get("XDG_CURRENT_DESKTOP", "") or "a wlroots compositor"
    outputs = ""
    if where.swaysock:
        version = swaymsg(where, "-t", "get_version")
        if isinstance(version, dict):
            name = f"sway {version.get('human_readable', '')}".strip()
        found = read_outputs(where)
        outputs = "; outputs " + ", ".join(
            f"{o.name} {o.box[2]}x{o.box[3]}+{o.box[0]}+{o.box[1]} scale {o.scale:g}" for o in found
        )
    protocols = ", ".join(f"{n} v{offered[n]}" for n in (*NEEDED, *USEFUL) if n in offered)
    return True, f"wlroots on {name} at {where.socket}: {protocols}{outputs}"


def check_backend_line(
    settings: Settings, env: Mapping[str, str] | None = None
) -> tuple[bool, str]:
    """doctor's backend line: which backend, and on wlroots what it found."""
    env = os.environ if env is None else env
    try:
        backend = backend_of(settings, env)
        if backend == "x11":
            return True, f"x11 on DISPLAY={env.get('DISPLAY', '') or '(none)'}"
        if backend == "portal":
            from jarvis.doctor_portal import describe_portal

            return describe_portal(settings, env)
        return describe_wlroots(env)
    except (BackendError, WaylandError, PortalError) as exc:
        return False, str(exc)


def wlroots_display(settings: Settings, env: Mapping[str, str]) -> tuple[bool, str]:
    """Capture the configured monitor through screencopy (grim)."""
    from jarvis.desktop.wlroots.screen import WlScreen

    with WlScreen.for_settings(settings, WaylandDisplay.from_env(env)) as screen:
        shot = screen.capture()
    size, model, device = shot.screen_size, shot.model_size, shot.physical_size
    return True, (
        f"captured monitor {settings.monitor} through screencopy: {size.width}x{size.height} "
        f"logical, {device.width if device else 0}x{device.height if device else 0} device "
        f"pixels, model space {model.width}x{model.height}"
    )


def wlroots_input(env: Mapping[str, str]) -> tuple[bool, str]:
    """Make the virtual pointer and the seat's keyboard (the compositor accepts them or
    refuses in one line); nothing is moved or pressed."""
    from jarvis.desktop.wlroots.input import WlInput

    where = WaylandDisplay.from_env(env)
    WlInput(where).close()
    return True, f"virtual pointer and keyboard accepted by the compositor at {where.socket}"
