"""Checkers: judge a task's final state, and say why it is wrong when it is.

A check is a shell command (exit 0 passes; what it prints is the reason) or a Python
function ``fn(context, **args) -> (ok, reason)``. The functions here cover the usual
states: a file's contents, a file's presence, a window's title (a page sets its title).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jarvis.eval.suite import Check

CheckResult = tuple[bool, str]
_OUTPUT = 600


@dataclass
class CheckContext:
    work: Path
    env: dict[str, str] = field(default_factory=dict)
    """DISPLAY and XAUTHORITY (or WAYLAND_DISPLAY and SWAYSOCK), WORK and SUITE of the task."""
    outcome: Mapping[str, Any] | None = None
    """The agent's outcome (status, summary, ...), None when it has none."""
    score: float | None = None
    """A fractional score the check may set (an OSWorld metric's); None: pass or fail."""

    def path(self, name: str) -> Path:
        resolved = (self.work / name).resolve()
        if not resolved.is_relative_to(self.work.resolve()):
            raise ValueError(f"{name!r} is outside the work folder")
        return resolved


def _read(ctx: CheckContext, path: str) -> str | None:
    try:
        return ctx.path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def file_equals(ctx: CheckContext, path: str, text: str, strip: bool = True) -> CheckResult:
    """The file holds exactly ``text`` (surrounding whitespace ignored unless ``strip`` is off)."""
    got = _read(ctx, path)
    if got is None:
        return False, f"{path} does not exist"
    if (got.strip() if strip else got) == (text.strip() if strip else text):
        return True, f"{path} holds {text!r}"
    return False, f"{path} holds {got[:200]!r}, expected {text!r}"


def file_contains(ctx: CheckContext, path: str, text: str) -> CheckResult:
    got = _read(ctx, path)
    if got is None:
        return False, f"{path} does not exist"
    if text in got:
        return True, f"{path} contains {text!r}"
    return False, f"{path} does not contain {text!r}; it holds {got[:200]!r}"


def files_exist(
    ctx: CheckContext, present: list[str] | None = None, absent: list[str] | None = None
) -> CheckResult:
    missing = [p for p in present or [] if not ctx.path(p).exists()]
    extra = [p for p in absent or [] if ctx.path(p).exists()]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing: {', '.join(missing)}")
        if extra:
            parts.append(f"should be gone: {', '.join(extra)}")
        return False, "; ".join(parts)
    return True, "the files are as expected"


def window_titles(ctx: CheckContext) -> list[str]:
    """Titles of the visible windows on the task's display (X11 or a Wayland compositor)."""
    from jarvis.desktop.backend import display_in
    from jarvis.desktop.backend import window_titles as titles_on

    return titles_on(display_in(ctx.env))


def window_title(ctx: CheckContext, contains: str) -> CheckResult:
    """Some visible window's title contains ``contains``."""
    titles = window_titles(ctx)
    if any(contains in t for t in titles):
        return True, f"a window title contains {contains!r}"
    shown = ", ".join(repr(t) for t in titles) or "none"
    return False, f"no window title contains {contains!r}; titles: {shown}"


def _function(spec: str) -> Callable[..., CheckResult]:
    module, _, name = spec.partition(":")
    fn = getattr(importlib.import_module(module), name, None)
    if not callable(fn):
        raise ValueError(f"check {spec!r}: {module} has no function {name}")
    return fn


def _once(check: Check, ctx: CheckContext) -> CheckResult:
    if check.command is not None:
        try:
            done = subprocess.run(
                ["sh", "-c", check.command],
                cwd=ctx.work,
                env={**os.environ, **ctx.env},
                capture_output=True,
                text=True,
                timeout=60,
            )
        except subprocess.TimeoutExpired:
            return False, "the check command did not finish within 60 s"
        said = (done.stdout + done.stderr).strip()[-_OUTPUT:]
        if done.returncode == 0:
            return True, said or "the check command passed"
        return False, said or f"the check command exited with {done.returncode}"
    assert check.python is not None
    ok, reason = _function(check.python)(ctx, **check.args)
    return bool(ok), str(reason)


def run_check(check: Check, ctx: CheckContext) -> CheckResult:
    """Judge the state; with ``wait_s``, judge again until it passes or the time is up."""
    deadline = time.monotonic() + check.wait_s
    while True:
        try:
            ok, reason = _once(check, ctx)
        except Exception as exc:  # a broken checker is a failed check that says why
            ok, reason = False, f"the checker failed: {type(exc).__name__}: {exc}"
        if ok or time.monotonic() >= deadline:
            return ok, reason
        time.sleep(0.1)
