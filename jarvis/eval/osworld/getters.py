"""OSWorld's ``result`` and ``expected`` getters on a native desktop: files read from the
run's home, commands run on its display, rules passed through.

OSWorld's getters ask its VM's server over HTTP; these do the same things where the task
runs. Each takes the :class:`Where` of the run and the getter's config (already mapped
from ``/home/user`` to the run's home) and returns what OSWorld's would: a local path
(None when the file is not there), a command's output, or the rule.
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jarvis.eval.osworld.cache import cached_file
from jarvis.eval.osworld.steps import argv, command_env


@dataclass(frozen=True)
class Where:
    """The run a getter reads: its display's environment, its download cache, and a
    folder for the copies a metric reads (OSWorld's per-task cache folder)."""

    env: dict[str, str]
    cache: Path
    scratch: Path


def _pairs(config: dict[str, Any]) -> list[tuple[str, str]]:
    if config.get("multi", False):
        return list(zip(config["path"], config["dest"], strict=False))
    return [(config["path"], config["dest"])]


def _give(config: dict[str, Any], paths: list[str | None]) -> Any:
    gives = set(config.get("gives", [0]))
    picked = [p for i, p in enumerate(paths) if i in gives]
    return picked[0] if len(picked) == 1 else picked


def vm_file(where: Where, config: dict[str, Any]) -> Any:
    """Copies of files of the run (OSWorld's ``vm_file``): None for one that is missing."""
    paths: list[str | None] = []
    for source, dest in _pairs(config):
        target = where.scratch / Path(dest).name
        try:
            shutil.copyfile(source, target)
            paths.append(str(target))
        except OSError:
            paths.append(None)
    return _give(config, paths)


def cloud_file(where: Where, config: dict[str, Any]) -> Any:
    """Files the task downloads for the judge (OSWorld's ``cloud_file``), from the cache."""
    paths: list[str | None] = []
    for url, dest in _pairs(config):
        cached = cached_file(where.cache, url)
        if cached is None:
            raise FileNotFoundError(f"missing file {url}")
        target = where.scratch / Path(dest).name
        shutil.copyfile(cached, target)
        paths.append(str(target))
    return _give(config, paths)


def cache_file(where: Where, config: dict[str, Any]) -> str:
    path = where.scratch / config["path"]
    if not path.exists():
        raise FileNotFoundError(str(path))
    return str(path)


def _run(where: Where, config: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv(config["command"], bool(config.get("shell", False))),
        env=command_env(where.env),
        cwd=where.env.get("HOME"),
        capture_output=True,
        text=True,
        timeout=120,
    )


def vm_command_line(where: Where, config: dict[str, Any]) -> str:
    """What the command prints (OSWorld's ``vm_command_line``)."""
    return _run(where, config).stdout


def vm_command_error(where: Where, config: dict[str, Any]) -> str:
    return _run(where, config).stderr


def vm_terminal_output(where: Where, config: dict[str, Any]) -> str | None:
    """The text of the focused terminal (OSWorld's ``vm_terminal_output``), else None."""
    from jarvis.eval.osworld.terminal import terminal_output

    return terminal_output(where.env)


def rule(where: Where, config: dict[str, Any]) -> Any:
    return config["rules"]


def rule_relative_time(where: Where, config: dict[str, Any]) -> Any:
    """OSWorld's own ``rule_relativeTime`` (vendored; a task without a timezone is UTC)."""
    misc = importlib.import_module("jarvis.eval.osworld.vendor.getters.misc")
    return misc.get_rule_relativeTime(None, config)


def time_diff_range(where: Where, config: dict[str, Any]) -> Any:
    return config.get("diff_range_in_minutes")


GETTERS: dict[str, Callable[[Where, dict[str, Any]], Any]] = {
    "vm_file": vm_file,
    "cloud_file": cloud_file,
    "cache_file": cache_file,
    "vm_command_line": vm_command_line,
    "vm_command_error": vm_command_error,
    "vm_terminal_output": vm_terminal_output,
    "rule": rule,
    "rule_relativeTime": rule_relative_time,
    "time_diff_range": time_diff_range,
}
"""Getter ``type`` -> function. Any other type (the Chrome, VLC, VS Code and accessibility
getters) makes the task not run, named."""


def get(where: Where, config: dict[str, Any]) -> Any:
    kind = str(config.get("type", ""))
    if kind not in GETTERS:
        raise LookupError(f"unsupported getter {kind}")
    return GETTERS[kind](where, config)
