"""OSWorld's setup steps on a native X display (no VM): the ``config`` steps before the
agent and ``evaluator.postconfig`` after it.

Each step is a step of OSWorld's task JSON (``{"type": ..., "parameters": {...}}``) with
the task's ``/home/user`` paths already mapped to the run's home. It runs with the task's
environment (``DISPLAY``, ``XAUTHORITY``, ``HOME``): in the setup as a command of its own::

    python -m jarvis.eval.osworld.steps .osworld/setup-01.json

(``open`` and ``launch`` replace that process with the application, so the workspace keeps
it running and stops it afterwards), and in the judge the same way (:func:`postconfig`).

A step that cannot run says so on one line and exits :data:`NOT_RUN_EXIT`: the task is
then not run (a missing download, an unsupported step), never scored 0.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

from jarvis.eval.osworld.cache import cached_file
from jarvis.eval.osworld.window_close import close_window, search_windows

NOT_RUN_EXIT = 3
USER_HOME = "/home/user"
"""The home of OSWorld's image; its paths are mapped to the run's home."""
SUPPORTED = frozenset(
    {
        "download",
        "launch",
        "open",
        "execute",
        "command",
        "sleep",
        "activate_window",
        "close_window",
    }
)
CACHE_ENV = "JARVIS_OSWORLD_CACHE"
"""The download cache where the setup runs (a fleet worker's own); else the eval's."""
SHIM = Path(__file__).parent / "shim"
"""A ``pyautogui`` made of xdotool, for the ``python -c "import pyautogui; ..."`` commands
of OSWorld's setups and postconfigs."""
OFFICE = frozenset(
    {".xlsx", ".xls", ".ods", ".csv", ".docx", ".doc", ".odt", ".rtf", ".pptx", ".ppt", ".odp"}
)
IMAGES = frozenset({".png", ".jpg", ".jpeg", ".xcf", ".bmp", ".gif", ".tif", ".tiff", ".webp"})
ACTIVATE_WAIT_S = 15.0
SETTLE_S = 1.0
"""A ``sleep`` ends early once a window is up and the screen has not changed for this long."""


class NotRun(Exception):
    """The step cannot run here; the task is not run, and this says why."""


def command_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` where ``python`` is this Python and the shim's ``pyautogui`` imports."""
    path = env.get("PYTHONPATH", "")
    return {
        **env,
        "PATH": f"{SHIM / 'bin'}{os.pathsep}{env.get('PATH', os.defpath)}",
        "JARVIS_OSWORLD_PYTHON": sys.executable,
        "PYTHONPATH": f"{SHIM}{os.pathsep}{path}" if path else str(SHIM),
    }


def argv(command: str | list[str], shell: bool) -> list[str]:
    """The command as a process's argv (a string is split on spaces, as OSWorld does)."""
    if shell:
        return ["sh", "-c", command if isinstance(command, str) else shlex.join(command)]
    return shlex.split(command) if isinstance(command, str) else [str(w) for w in command]


def _download(params: dict[str, Any], env: dict[str, str]) -> None:
    cache = Path(env.get(CACHE_ENV) or params.get("jarvis_cache") or ".")
    for entry in params.get("files", []):
        url, dest = str(entry.get("url", "")), str(entry.get("path", ""))
        source = cached_file(cache, url)
        if source is None:
            raise NotRun(f"missing file {url}")
        target = Path(dest)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


def _execute(params: dict[str, Any], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    words = argv(params["command"], bool(params.get("shell", False)))
    try:
        return subprocess.run(
            words,
            env=command_env(env),
            cwd=env.get("HOME"),
            capture_output=True,
            text=True,
            timeout=float(params.get("timeout", 120)),
        )
    except FileNotFoundError:  # as OSWorld's server: a failed command is not a failed setup
        return subprocess.CompletedProcess(words, 127, "", f"no such program: {words[0]}")


def _frame(grabber: Any) -> int:
    """A digest of the whole screen (CRC-32 of its pixels, as the agent's settle)."""
    return zlib.crc32(grabber.grab(grabber.monitors[0]).raw)


def _windows(env: dict[str, str]) -> bool:
    found = subprocess.run(
        ["xdotool", "search", "--onlyvisible", "--name", "."],
        env=env,
        capture_output=True,
        text=True,
        timeout=10,
    )
    return bool(found.stdout.strip())


def settle_sleep(seconds: float, env: dict[str, str]) -> float:
    """Sleep ``seconds`` at most: less once a window is up and the screen has settled.
    The time slept."""
    from jarvis.desktop.monitors import mss_for
    from jarvis.desktop.x11 import XDisplay

    start = time.monotonic()
    deadline = start + seconds
    last, since = -1, time.monotonic()
    grabber = mss_for(XDisplay(env.get("DISPLAY", ""), env.get("XAUTHORITY"), ""))
    try:
        while time.monotonic() < deadline:
            frame = _frame(grabber)
            now = time.monotonic()
            if frame != last:
                last, since = frame, now
            elif now - since >= SETTLE_S and _windows(env):
                break
            time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
    finally:
        grabber.close()
    return time.monotonic() - start


def _activate(params: dict[str, Any], env: dict[str, str]) -> None:
    """Raise and focus the window; one that is not there yet is waited for a while
    (OSWorld's server looks once; a native desktop starts apps at its own pace)."""
    name = str(params["window_name"])
    pattern = f"^{re.escape(name)}$" if params.get("strict") else re.escape(name)
    flag = "--class" if params.get("by_class") else "--name"
    deadline = time.monotonic() + ACTIVATE_WAIT_S
    while True:
        wids = search_windows(env, flag, pattern)
        if wids or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    for wid in wids[:1]:
        subprocess.run(["xdotool", "windowactivate", "--sync", str(wid)], env=env, timeout=10)


def open_command(path: str) -> list[str]:
    """What opens ``path`` as OSWorld's image does (its default application)."""
    suffix = Path(path).suffix.lower()
    if suffix in OFFICE:
        return ["libreoffice", "--norestore", path]
    if suffix in IMAGES:
        return ["gimp", "--no-splash", path]
    return ["xdg-open", path]


def map_home(value: Any, home: str) -> Any:
    """``value`` (JSON data) with OSWorld's ``/home/user`` paths in the run's ``home``."""
    if isinstance(value, str):
        return value.replace(USER_HOME, home)
    if isinstance(value, list):
        return [map_home(v, home) for v in value]
    if isinstance(value, dict):
        return {k: map_home(v, home) for k, v in value.items()}
    return value


def run_step(step: dict[str, Any], env: dict[str, str]) -> None:
    """One step on the display of ``env`` (this process's): ``open`` and ``launch``
    replace this process with their program. Raises :class:`NotRun`."""
    kind, params = str(step.get("type", "")), dict(step.get("parameters") or {})
    if kind not in SUPPORTED:
        raise NotRun(f"unsupported setup step {kind}")
    if kind == "download":
        _download(params, env)
    elif kind in ("execute", "command"):
        done = _execute(params, env)
        if done.returncode != 0:
            print(f"{kind} exited {done.returncode}: {done.stderr.strip()[-300:]}", flush=True)
    elif kind == "sleep":
        settle_sleep(float(params.get("seconds", 0)), env)
    elif kind == "activate_window":
        _activate(params, env)
    elif kind == "close_window":
        close_window(params, env)
    else:
        if kind == "open":
            words = open_command(str(params["path"]))
        else:
            words = argv(params["command"], bool(params.get("shell", False)))
        os.execvpe(words[0], words, command_env(env))


def postconfig(step: dict[str, Any], env: dict[str, str]) -> None:
    """A postconfig step, from the judge: run as in the setup, on ``env``'s display; an
    application it starts is left to the display's end. Raises :class:`NotRun`."""
    if step.get("type") not in SUPPORTED:
        raise NotRun(f"unsupported setup step {step.get('type')}")
    command = [sys.executable, "-m", "jarvis.eval.osworld.steps", json.dumps(step)]
    if step.get("type") in ("open", "launch"):
        subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        return
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode == NOT_RUN_EXIT:
        raise NotRun(done.stdout.strip().removeprefix("not run: "))


def main(args: list[str]) -> int:
    if len(args) != 1:
        print("usage: python -m jarvis.eval.osworld.steps STEP.json|STEP", file=sys.stderr)
        return 2
    try:
        text = args[0] if args[0].startswith("{") else Path(args[0]).read_text(encoding="utf-8")
        step = json.loads(text)
        env = dict(os.environ)
        run_step(map_home(step, env.get("HOME", USER_HOME)), env)
    except NotRun as exc:
        print(f"not run: {exc}", flush=True)
        return NOT_RUN_EXIT
    except (OSError, ValueError, KeyError, subprocess.SubprocessError) as exc:
        print(f"setup failed: {type(exc).__name__}: {exc}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
