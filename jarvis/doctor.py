"""`jarvis doctor`: check that Jarvis can see, act, reach its model and write its data."""

from __future__ import annotations

import os
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from jarvis.config import Settings
from jarvis.desktop.x11 import XDisplay
from jarvis.preflight import KEY_ENV, URL_ENV, base_url_problem, has_key, load_presets
from jarvis.redaction import known_secrets, redact

DEFAULT_URL = {
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com/v1",
    "gemini": "https://generativelanguage.googleapis.com/",
}


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


def check_backend(settings: Settings) -> Check:
    """Which desktop backend drives this desktop, and on wlroots what it found there."""
    from jarvis.doctor_wayland import check_backend_line

    return Check("backend", *check_backend_line(settings))


def _on_wlroots(
    settings: Settings,
    name: str,
    run: Callable[[], tuple[bool, str]],
    portal: Callable[[], tuple[bool, str]] | None = None,
) -> Check | None:
    """``run``'s check when the desktop is a wlroots one, ``portal``'s on a portal one,
    else None (the X11 check runs)."""
    from jarvis.desktop.errors import InputError
    from jarvis.doctor_wayland import backend_of

    try:
        backend = backend_of(settings)
        if backend == "portal" and portal is not None:
            return Check(name, *portal())
        if backend != "wlroots":
            return None
        return Check(name, *run())
    except InputError as exc:  # the backend, a part or consent is missing: its own line
        return Check(name, False, str(exc))
    except Exception as exc:  # doctor reports any failure as a failed check
        return Check(name, False, f"{name} on the Wayland desktop failed: {exc}")


def check_display(settings: Settings) -> Check:
    from jarvis.doctor_portal import portal_display
    from jarvis.doctor_wayland import wlroots_display

    wayland = _on_wlroots(
        settings,
        "display",
        lambda: wlroots_display(settings, os.environ),
        lambda: portal_display(settings, os.environ),
    )
    if wayland is not None:
        return wayland
    where = XDisplay.from_env()
    if not where.name and os.name == "posix" and not _is_macos():
        return Check("display", False, "DISPLAY is not set: run on a desktop or inside xvfb-run")
    from jarvis.desktop.screen import Screen
    from jarvis.llm.profiles.select import screen_sizer

    try:
        screen = Screen.from_settings(
            settings, screen_sizer(settings), where if where.name else None
        )
        try:
            obs = screen.capture()
            monitors = screen.monitors
        finally:
            screen.close()
    except Exception as exc:  # doctor reports any failure as a failed check
        return Check("display", False, f"cannot capture the screen: {exc}")
    size, model = obs.screen_size, obs.model_size
    listed = "; ".join(m.line() for m in monitors[1:])
    backend = (
        " (mss's xlib backend: its default one fails here)" if screen.backend == "xlib" else ""
    )
    return Check(
        "display",
        True,
        f"captured monitor {settings.monitor}: {size.width}x{size.height}, "
        f"model space {model.width}x{model.height} ({obs.timings_ms.get('total', 0):.0f} ms)"
        f"{backend}; {len(monitors) - 1} monitor(s): {listed}",
    )


def check_input(settings: Settings) -> Check:
    """Move the pointer one pixel and back (on a real desktop too: it is one pixel)."""
    from jarvis.doctor_portal import portal_input
    from jarvis.doctor_wayland import wlroots_input

    wayland = _on_wlroots(
        settings,
        "input",
        lambda: wlroots_input(os.environ),
        lambda: portal_input(settings, os.environ),
    )
    if wayland is not None:
        return wayland
    display = XDisplay.from_env().name
    if not display:
        return Check("input", False, "no display to send input to")
    from jarvis.desktop.input import Input

    try:
        inp = Input.from_settings(settings, display=XDisplay.from_env())
        x, y = inp.position()
        target = (x + 1, y) if x < 10 else (x - 1, y)
        inp.move(*target)
        deadline = time.monotonic() + 1.0
        while inp.position() != target and time.monotonic() < deadline:
            time.sleep(0.01)
        moved = inp.position() == target
        inp.move(x, y)
    except Exception as exc:  # doctor reports any failure as a failed check
        return Check("input", False, f"cannot inject input: {exc}")
    if not moved:
        return Check("input", False, "the pointer did not move when asked")
    return Check("input", True, f"pointer moved and returned to ({x}, {y}) on {display}")


def check_provider(settings: Settings) -> Check:
    key_env, url_env = KEY_ENV[settings.provider], URL_ENV[settings.provider]
    if not has_key(settings.provider):
        return Check("provider", False, f"{key_env} is not set (provider {settings.provider})")
    problem = base_url_problem(settings.provider)
    if problem is not None:
        return Check("provider", False, problem)
    url = os.environ.get(url_env) or DEFAULT_URL[settings.provider]
    problem = endpoint_problem(url)
    if problem is not None:
        return Check("provider", False, f"{settings.provider} at {url}: {problem}")
    from jarvis.llm.profiles.select import active_profile

    choice = active_profile(settings)
    profile = f"profile {choice.profile.name} ({choice.reason})"
    if choice.warning:
        profile += " - no profile matched: the generic one, set model_profile if it is wrong"
    return Check(
        "provider",
        True,
        f"{settings.provider}: {key_env} is set, model {settings.active_model}, base URL {url}; "
        f"{profile}",
    )


def check_data_dir(settings: Settings) -> Check:
    root = settings.data_dir
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".doctor-", delete=True) as fh:
            fh.write(b"ok")
            fh.flush()
    except OSError as exc:
        return Check("data dir", False, f"{root} is not writable: {exc}")
    return Check("data dir", True, f"{Path(root).resolve()} is writable")


def check_presets(settings: Settings) -> Check:
    names, problem = load_presets(settings)
    if problem is not None:
        return Check("presets", False, problem)
    return Check("presets", True, f"{len(names)} semantic preset(s): {', '.join(names) or 'none'}")


def check_memory(settings: Settings) -> Check:
    """Load the long-term memory's embedding model and embed one sentence, offline."""
    if not settings.long_term_memory:
        return Check("memory", True, "long-term memory is off (long_term_memory = false)")
    started = time.perf_counter()
    try:
        from jarvis.memory.embedding import EmbeddingUnavailable, make_embedding

        choice = make_embedding(settings)
        vectors = choice.function(["jarvis doctor"])
    except EmbeddingUnavailable as exc:
        return Check("memory", False, f"long-term memory is off for tasks: {exc}")
    except Exception as exc:  # doctor reports any failure as a failed check
        return Check("memory", False, f"the embedding model failed: {type(exc).__name__}: {exc}")
    ms = (time.perf_counter() - started) * 1000
    return Check(
        "memory",
        True,
        f"embedding {choice.key} loads offline ({len(vectors[0])} dimensions, {ms:.0f} ms)",
    )


def check_mcp(settings: Settings) -> Check:
    """Start each MCP server of mcp.json and see that it lists its tools."""
    import asyncio

    from jarvis.tools.commands import server_status

    servers, problems = asyncio.run(server_status(settings))
    if not servers and not problems:
        return Check("mcp", True, "no MCP servers configured")
    parts = [
        f"{s['name']}: {len(s['tools'])} tool(s)"
        if s["state"] == "ready"
        else f"{s['name']}: {s['state']} ({s['error'] or 'no answer'})"
        for s in servers
    ]
    ok = not problems and all(s["state"] == "ready" for s in servers)
    return Check("mcp", ok, "; ".join(parts + problems))


def check_skills(settings: Settings) -> Check:
    """Load the skills folder (and entry points) as serve would; name the broken ones."""
    from jarvis.tools.computer import build_registry
    from jarvis.tools.skills import SkillManager

    manager = SkillManager(settings, build_registry(settings, []))
    if settings.toolbox.skills.entry_points:
        manager.load_entry_points()
    manager.scan()
    tools = sorted(t for s in manager.sources.values() for t in s.tools)
    if manager.problems:
        return Check("skills", False, "; ".join(manager.problems))
    return Check("skills", True, f"{len(tools)} skill tool(s): {', '.join(tools) or 'none'}")


def check_email(settings: Settings) -> Check:
    """The email channel's settings and whitelist (no network: `jarvis email test` connects)."""
    from jarvis.gateway.channels.email.settings import EmailError, load_whitelist

    email = settings.email
    if not email.enabled:
        return Check("email", True, "off (email.enabled is false)")
    problems = email.problems()
    try:
        whitelist = load_whitelist(settings.data_dir)
    except EmailError as exc:
        problems.append(str(exc))
    else:
        if not whitelist.senders:
            problems.append("config/whitelist.json allows nobody")
        if not whitelist.authserv_ids:
            problems.append("config/whitelist.json has no authserv_id")
    if problems:
        return Check("email", False, "; ".join(problems))
    return Check(
        "email",
        True,
        f"{email.username} on {email.imap_host}, {len(whitelist.senders)} sender(s), "
        f"authserv-id {', '.join(whitelist.authserv_ids)}; `jarvis email test FILE` connects",
    )


def check_schedules(settings: Settings) -> Check:
    """``schedules.md``: how many, and one line per entry that cannot be read (kept)."""
    from jarvis.gateway.schedule_clock import listing

    rows, problems = listing(settings.data_dir)
    if problems:
        return Check("schedules", False, "; ".join(problems))
    active = [r for r in rows if r["next_run"] is not None]
    first = min((r["next_run"] for r in active), default=None)
    later = f"; next run {first}" if first else ""
    return Check("schedules", True, f"{len(rows)} schedule(s), {len(active)} active{later}")


def check_accessibility(settings: Settings) -> Check:
    """Whether the accessibility tree can be read (it fails only when the ``observation``
    setting and the model's profile ask for the tree)."""
    from jarvis.desktop.a11y.bus import (
        ACCESSIBLE,
        REGISTRY,
        ROOT_PATH,
        A11yBus,
        A11yError,
        Call,
    )
    from jarvis.llm.profiles.select import active_profile, observation_kind

    needed = observation_kind(settings) != "screenshot"
    bus = settings.a11y_session_bus or os.environ.get("DBUS_SESSION_BUS_ADDRESS", "")
    use = f"observation = {settings.observation}"
    if settings.observation != "screenshot" and not needed:
        use += f"; profile {active_profile(settings).profile.name} does not take the tree"
    if not bus:
        return Check("accessibility", not needed, f"no session D-Bus to read the tree from ({use})")
    try:
        with A11yBus(bus) as a11y:
            apps = a11y.call(Call((REGISTRY, ROOT_PATH), ACCESSIBLE, "GetChildren"))[0]
    except A11yError as exc:
        return Check("accessibility", not needed, f"the tree cannot be read: {exc} ({use})")
    return Check(
        "accessibility", True, f"the tree can be read: {len(apps)} application(s) publish ({use})"
    )


CHECKS: list[Callable[[Settings], Check]] = [
    check_backend,
    check_display,
    check_input,
    check_provider,
    check_data_dir,
    check_presets,
    check_memory,
    check_mcp,
    check_skills,
    check_accessibility,
]


def endpoint_problem(url: str, timeout: float = 3.0) -> str | None:
    """Why a TCP connection to ``url``'s host and port cannot be made (refused, unknown
    host, no answer within ``timeout``), or None."""
    parsed = urlparse(url)
    host = parsed.hostname or ""
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except socket.gaierror as exc:
        return f"cannot resolve {host}: {exc.strerror}"
    except TimeoutError:
        return f"no answer from {host}:{port} within {timeout:.0f} s"
    except OSError as exc:
        return f"cannot connect to {host}:{port}: {exc.strerror or exc}"


def run_checks(settings: Settings) -> list[Check]:
    """Every check, each detail redacted (a base URL's ``user:password@``, a key quoted
    back by an endpoint): the lines are printed."""
    checks = [check(settings) for check in CHECKS]
    if settings.email.enabled:  # a line for the email channel only when it is on
        checks.append(check_email(settings))
    if (settings.data_dir / "schedules.md").exists():  # a line only when there are any
        checks.append(check_schedules(settings))
    secrets = known_secrets(settings)
    return [Check(c.name, c.ok, redact(c.detail, secrets)) for c in checks]


def _is_macos() -> bool:

    return sys.platform == "darwin"
