"""A small ``pyautogui`` made of xdotool, for the ``python -c "import pyautogui; ..."``
commands in OSWorld's setup and postconfig steps (the real one needs a display at import
and Xlib extensions this desktop may lack). It covers what those commands call: keys,
hotkeys, typing, clicks and moves, on the ``DISPLAY`` of the environment.
"""

from __future__ import annotations

import subprocess
import time

KEYS = {
    "enter": "Return",
    "return": "Return",
    "esc": "Escape",
    "escape": "Escape",
    "tab": "Tab",
    "space": "space",
    "backspace": "BackSpace",
    "delete": "Delete",
    "ctrl": "ctrl",
    "control": "ctrl",
    "alt": "alt",
    "shift": "shift",
    "win": "super",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "home": "Home",
    "end": "End",
    "pageup": "Prior",
    "pagedown": "Next",
}
PAUSE = 0.1
FAILSAFE = False


def _key(name: str) -> str:
    name = str(name)
    if name.lower() in KEYS:
        return KEYS[name.lower()]
    if name.lower().startswith("f") and name[1:].isdigit():
        return name.upper()
    return name


def _xdotool(*args: str) -> None:
    subprocess.run(["xdotool", *args], check=False, timeout=30)
    time.sleep(PAUSE)


def hotkey(*keys: str, **_: object) -> None:
    _xdotool("key", "--clearmodifiers", "+".join(_key(k) for k in keys))


def press(keys: str | list[str], presses: int = 1, **_: object) -> None:
    names = [keys] if isinstance(keys, str) else list(keys)
    for _n in range(presses):
        for name in names:
            _xdotool("key", "--clearmodifiers", _key(name))


def typewrite(text: str | list[str], interval: float = 0.0, **_: object) -> None:
    if isinstance(text, list):
        press(text)
        return
    _xdotool("type", "--delay", str(int(interval * 1000) or 12), text)


write = typewrite


def moveTo(x: float, y: float, *_: object, **__: object) -> None:
    _xdotool("mousemove", str(int(x)), str(int(y)))


def click(
    x: float | None = None,
    y: float | None = None,
    clicks: int = 1,
    button: str = "left",
    **_: object,
) -> None:
    if x is not None and y is not None:
        moveTo(x, y)
    number = {"left": "1", "middle": "2", "right": "3"}.get(button, "1")
    _xdotool("click", "--repeat", str(clicks), number)


def doubleClick(x: float | None = None, y: float | None = None, **_: object) -> None:
    click(x, y, clicks=2)


def rightClick(x: float | None = None, y: float | None = None, **_: object) -> None:
    click(x, y, button="right")


def keyDown(name: str, **_: object) -> None:
    _xdotool("keydown", _key(name))


def keyUp(name: str, **_: object) -> None:
    _xdotool("keyup", _key(name))


def scroll(clicks: int, *_: object, **__: object) -> None:
    button = "4" if clicks > 0 else "5"
    _xdotool("click", "--repeat", str(abs(int(clicks))), button)
