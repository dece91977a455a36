"""Start a virtual X display (Xvfb) for tests and benchmarks.

``start_xvfb(width, height)`` is a context manager yielding a running :class:`Xvfb`
(``.display`` ":N", ``.width``, ``.height``, ``.xauthority``, ``.env()``). With
``set_env=True`` it also points this process's ``DISPLAY`` and ``XAUTHORITY`` at it
for the duration and restores them after.

It is the sandbox's display (:class:`jarvis.safety.sandbox.Sandbox` with no window
manager and no apps): ``-displayfd`` (the server picks a free display number and reports
it once it accepts connections), ``-noreset``, ``-nolisten tcp`` and its own
MIT-MAGIC-COOKIE in a temporary ``XAUTHORITY`` file, so access control is real.

pyautogui binds to the display that is current when it is first imported and
never lets go, so a process can drive only one display with it. To act on a
second display size, run the work in a child process with ``env=server.env()``
(see ``tests/test_input_fidelity.py`` for a worker that does exactly this).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from jarvis.safety.sandbox import Sandbox
from jarvis.safety.settings import SandboxSettings

DEFAULT_SIZE = (1920, 1080)


class Xvfb(Sandbox):
    """A bare private X display (no window manager: windows appear at 0,0). Use as a
    context manager or call start()/stop()."""

    dir_prefix = "jarvis-xvfb-"  # not a sandbox's: tests look for leftover sandboxes

    def __init__(self, width: int = DEFAULT_SIZE[0], height: int = DEFAULT_SIZE[1]) -> None:
        super().__init__(SandboxSettings(size=f"{width}x{height}", window_manager=None))


@contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """``values`` in this process's environment until the block ends (the test process's
    start-up display); then what was there before (set or unset) is put back."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def start_xvfb(
    width: int = DEFAULT_SIZE[0], height: int = DEFAULT_SIZE[1], set_env: bool = False
) -> Iterator[Xvfb]:
    """A fresh Xvfb ``width`` x ``height`` x 24, stopped on exit."""
    with Xvfb(width, height) as server, environment(server.env() if set_env else {}):
        yield server
