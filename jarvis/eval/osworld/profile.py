"""The starting state of an OSWorld task on a Jarvis desktop: the user's home laid out as
OSWorld's image has it, LibreOffice without its first-run dialogs, and GIMP's profile as
after its first start.

Run as the first setup step of every OSWorld task (``python -m
jarvis.eval.osworld.profile``), in the run's fresh ``HOME``. The display itself (1920x1080,
a window manager that maximizes every window, as the image's GNOME does for its apps)
comes from the task (:mod:`jarvis.eval.osworld.convert`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from jarvis.desktop.x11 import XDisplay
from jarvis.eval.osworld.app_profiles import seed_gimp, seed_thunderbird
from jarvis.eval.osworld.terminal import resources

FOLDERS = ("Desktop", "Documents", "Downloads", "Music", "Pictures", "Public", "Templates")
FOLDERS_TOO = ("Videos",)
LIBREOFFICE_VERSION = "7.4"
DPI = 96

ITEMS = (
    ("/org.openoffice.Office.Common/Misc", "FirstRun", "boolean", "false"),
    ("/org.openoffice.Office.Common/Misc", "ShowTipOfTheDay", "boolean", "false"),
    ("/org.openoffice.Setup/Office", "ooSetupInstCompleted", "boolean", "true"),
    ("/org.openoffice.Setup/Product", "ooSetupLastVersion", "string", LIBREOFFICE_VERSION),
    ("/org.openoffice.Setup/Product", "LastTimeDonateShown", "long", "9999999999"),
    ("/org.openoffice.Setup/Product", "LastTimeGetInvolvedShown", "long", "9999999999"),
    ("/org.openoffice.Office.Recovery/RecoveryInfo", "SessionData", "boolean", "false"),
    ("/org.openoffice.Office.Common/Misc", "UseSystemFileDialog", "boolean", "true"),
)
"""registrymodifications.xcu items: no first-start wizard, tip of the day, what's-new or
donation bar, no crash-recovery offer. The keep-format question on saving a Microsoft
format stays, as in OSWorld's image (its postconfig steps answer it)."""


def registry() -> str:
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        '<oor:items xmlns:oor="http://openoffice.org/2001/registry"'
        ' xmlns:xs="http://www.w3.org/2001/XMLSchema"'
        ' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">',
    ]
    for path, name, _kind, value in ITEMS:
        lines.append(
            f'<item oor:path="{path}"><prop oor:name="{name}" oor:op="fuse">'
            f"<value>{value}</value></prop></item>"
        )
    lines.append("</oor:items>")
    return "\n".join(lines) + "\n"


def lay_out(home: Path) -> None:
    """The home's folders and LibreOffice's profile (kept when already there)."""
    for name in (*FOLDERS, *FOLDERS_TOO):
        (home / name).mkdir(parents=True, exist_ok=True)
    user = home / ".config" / "libreoffice" / "4" / "user"
    user.mkdir(parents=True, exist_ok=True)
    xcu = user / "registrymodifications.xcu"
    if not xcu.exists():
        xcu.write_text(registry(), encoding="utf-8")


def set_resources(home: Path) -> bool:
    """The display's X resources: ``Xft.dpi`` at OSWorld's 96 (Xvfb says 100: GTK and
    LibreOffice size their fonts by it), and xterm's for the terminal getter
    (:func:`jarvis.eval.osworld.terminal.resources`). False where xrdb is not installed."""
    if shutil.which("xrdb") is None or not XDisplay.from_env().name:
        return False
    lines = f"Xft.dpi: {DPI}\n" + resources(home)
    done = subprocess.run(
        ["xrdb", "-merge"], input=lines, text=True, capture_output=True, timeout=10
    )
    return done.returncode == 0


def main() -> int:
    home = os.environ.get("HOME")
    if not home:
        print("setup failed: no HOME", flush=True)
        return 1
    lay_out(Path(home))
    seed_gimp(Path(home))
    seed_thunderbird(Path(home))
    set_resources(Path(home))
    return 0


if __name__ == "__main__":
    raise SystemExit(main() if len(sys.argv) == 1 else 2)
