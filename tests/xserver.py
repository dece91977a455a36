"""Start a virtual X display (Xvfb) for tests and benchmarks.

``start_xvfb(width, height)`` is a context manager yielding a running
:class:`jarvis.desktop.x11.Xvfb` (``.display`` ":N", ``.width``, ``.height``,
``.xauthority``, ``.env()``). With ``set_env=True`` it also points this process's
``DISPLAY`` and ``XAUTHORITY`` at it for the duration and restores them after.

pyautogui binds to the display that is current when it is first imported and
never lets go, so a process can drive only one display with it. To act on a
second display size, run the work in a child process with ``env=server.env()``
(see ``tests/test_input_fidelity.py`` for a worker that does exactly this).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from jarvis.desktop.x11 import Xvfb

DEFAULT_SIZE = (1920, 1080)


@contextmanager
def start_xvfb(
    width: int = DEFAULT_SIZE[0], height: int = DEFAULT_SIZE[1], set_env: bool = False
) -> Iterator[Xvfb]:
    """A fresh Xvfb ``width`` x ``height`` x 24, stopped on exit."""
    with Xvfb(width, height) as server:
        if not set_env:
            yield server
            return
        saved = {k: os.environ.get(k) for k in ("DISPLAY", "XAUTHORITY")}
        os.environ.update(server.env())
        try:
            yield server
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
