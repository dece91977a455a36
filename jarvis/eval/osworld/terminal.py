"""OSWorld's ``vm_terminal_output`` getter on a native X display: the text of the focused
terminal.

OSWorld's VM server reads it from the accessibility tree (the text of the focused
``terminal`` of GNOME Terminal's active window, right-stripped) and gives None when no
terminal has the focus. The terminal of a Jarvis OSWorld desktop is xterm, which publishes
no accessibility tree but writes its own text out: its ``print-immediate()`` action writes
the screen and the saved lines to a file. The OSWorld profile binds that action to a key
no task uses (:data:`PRINT_KEY`) and names the file (:func:`resources`, merged into the
display's X resources before any setup step starts an xterm); this getter presses the key
when the focused window is an xterm and reads the file.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

PRINT_KEY = "ctrl+shift+alt+F12"
XT_KEY = "Ctrl Shift Alt <Key>F12"
SCREENS = Path(".cache") / "jarvis-terminal"
"""Where, under the task's home, the xterm writes its text (``screen`` + a timestamp)."""
PRINT_WAIT_S = 5.0


def resources(home: Path) -> str:
    """The X resources that let :func:`terminal_output` read an xterm of this home."""
    prefix = home / SCREENS / "screen"
    return (
        f"XTerm*printFileImmediate: {prefix}\n"
        "XTerm*printModeImmediate: 0\n"
        "XTerm*printOptsImmediate: 9\n"
        f"XTerm*VT100.translations: #override {XT_KEY}: print-immediate()\n"
    )


def _written(folder: Path, deadline: float) -> str | None:
    """The text of the file the xterm writes, once it has stopped growing."""
    size = -1
    while time.monotonic() < deadline:
        files = sorted(folder.glob("screen*"))
        if files:
            now = files[-1].stat().st_size
            if now == size and now > 0:
                return files[-1].read_text(encoding="utf-8", errors="replace")
            size = now
        time.sleep(0.1)
    return None


def terminal_output(env: dict[str, str]) -> str | None:
    """The text of the focused xterm on ``env``'s display, right-stripped; None when the
    focused window is no xterm (or it wrote nothing), as OSWorld's when no terminal is
    focused."""
    from jarvis.desktop.windows import Windows  # not on the profile's path: pydantic
    from jarvis.desktop.x11 import XDisplay

    where = XDisplay(env.get("DISPLAY", ""), env.get("XAUTHORITY"))
    windows = Windows(where)
    try:
        focused = windows.focused()
    finally:
        windows.close()
    if focused.wm_class.lower() != "xterm":
        return None
    folder = Path(env.get("HOME", ".")) / SCREENS
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    subprocess.run(
        ["xdotool", "key", "--clearmodifiers", PRINT_KEY], env=env, timeout=10, check=False
    )
    text = _written(folder, time.monotonic() + PRINT_WAIT_S)
    return None if text is None else text.rstrip()
