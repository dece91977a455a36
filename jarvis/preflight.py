"""The start-up checks every command shares: why a task cannot start here (no key, a base
URL that is not one, no display or none there, a bad presets file), each as one line or
None. ``jarvis run``, ``serve``, ``worker``, ``eval`` and ``calibrate`` refuse with that
line before they start; ``jarvis doctor`` runs the same checks among its own."""

from __future__ import annotations

import os
import sys
from urllib.parse import urlparse

from jarvis.config import Settings
from jarvis.desktop.backend import Where, reach_problem
from jarvis.redaction import known_secrets, redact

KEY_ENV = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY", "gemini": "GEMINI_API_KEY"}
OTHER_KEY_ENV = {"gemini": "GOOGLE_API_KEY"}  # google-genai's own name, which it reads too
URL_ENV = {
    "anthropic": "ANTHROPIC_BASE_URL",
    "openai": "OPENAI_BASE_URL",
    "gemini": "GEMINI_BASE_URL",
}


def cannot_start(
    settings: Settings, where: Where, *, display: bool = True, presets: bool = True
) -> str | None:
    """The one line that says why a task cannot start on ``where``: no key, a base URL
    that is not one, no display or none there, a bad presets file; or None. Redacted (a
    base URL's ``user:password@``). ``display`` False leaves the display out (a fleet's
    coordinator that runs no task itself); ``presets`` False the presets file (`jarvis
    run` checks it once its brake is armed: it loads the tools)."""
    problem = _cannot_start(settings, where, display, presets)
    return None if problem is None else redact(problem, known_secrets(settings))


def _cannot_start(
    settings: Settings, where: Where, display: bool = True, presets: bool = True
) -> str | None:
    key_env = KEY_ENV[settings.provider]
    if not has_key(settings.provider):
        return f"jarvis: {key_env} is not set; export it (or pick --provider) and run again."
    problem = base_url_problem(settings.provider)
    if problem is not None:
        return f"jarvis: {problem}"
    if display and not where.name and sys.platform.startswith("linux"):
        return "jarvis: no display (DISPLAY is unset); run on a desktop or with `xvfb-run -a`."
    problem = presets_problem(settings) if presets else None
    if problem is not None:
        return f"jarvis: {problem}"
    if not display:
        return None
    problem = display_problem(where)
    if problem is not None:
        return f"jarvis: {problem}"
    return None


def sandbox_problem(settings: Settings, person: Where) -> str | None:
    """Why a task could not start, asked before a private display is started for it (no
    key, a bad base URL or presets file), so no display is started for nothing."""
    return cannot_start(settings, person, display=False)


def has_key(provider: str) -> bool:
    """Whether the environment holds ``provider``'s API key (under either of its names)."""
    names = (KEY_ENV[provider], OTHER_KEY_ENV.get(provider, ""))
    return any(os.environ.get(name) for name in names if name)


def base_url_problem(provider: str) -> str | None:
    """Why ``provider``'s base URL (``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``,
    ``GEMINI_BASE_URL``) is not an http(s) URL, or None (also when it is unset: the SDK's
    default)."""
    url_env = URL_ENV.get(provider)
    if url_env is None:  # no model (the eval's oracle)
        return None
    url = os.environ.get(url_env)
    if url is None:
        return None
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return f"{url_env} is not an http(s) URL: {url!r} (write it as http://HOST:PORT/...)"
    try:
        parsed.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return f"{url_env} has a port that is not a number: {url!r}"
    return None


def display_problem(where: Where) -> str | None:
    """Why the display ``where`` cannot be reached (named, but no X server or compositor
    there, or it refuses us), or None. Not on macOS or Windows, or with no display named."""
    if not where.name or not sys.platform.startswith("linux"):
        return None
    return reach_problem(where)


def presets_refusal(settings: Settings) -> str | None:
    """The line :func:`cannot_start` says for a presets file that cannot be used, or None."""
    problem = presets_problem(settings)
    return None if problem is None else redact(f"jarvis: {problem}", known_secrets(settings))


def presets_problem(settings: Settings) -> str | None:
    """Why the semantic presets file cannot be used, or None."""
    return load_presets(settings)[1]


def load_presets(settings: Settings) -> tuple[list[str], str | None]:
    """The configured presets' names, checked against the tools as a task would register
    them; or why they cannot be used."""
    from jarvis.tools.computer import build_registry
    from jarvis.tools.presets import PresetError, load_default_presets

    try:
        presets = load_default_presets(settings)
        build_registry(settings, presets)
    except PresetError as exc:
        return [], str(exc)
    return [p.name for p in presets], None
