"""The clipboard of a wlroots compositor through wl-clipboard (``wl-copy``, ``wl-paste``).

Both use the data-control protocol where the compositor offers it (sway does), so no
window needs the focus. ``wl-copy`` stays behind to serve the data until another client
takes the selection, as a clipboard owner does.
"""

from __future__ import annotations

import subprocess
import tempfile

from jarvis.desktop.clipboard import ClipboardContent
from jarvis.desktop.wlroots.session import WaylandDisplay, WaylandError

TIMEOUT_S = 5.0
TEXT_TYPES = ("text/plain;charset=utf-8", "UTF8_STRING", "text/plain", "STRING", "TEXT")


def _run(where: WaylandDisplay, argv: list[str], data: bytes | None = None) -> bytes | None:
    try:
        done = subprocess.run(
            argv, input=data, capture_output=True, timeout=TIMEOUT_S, env=where.env()
        )
    except FileNotFoundError as exc:
        raise WaylandError("wl-clipboard is not installed (apt install wl-clipboard)") from exc
    except subprocess.TimeoutExpired:
        return None
    return done.stdout if done.returncode == 0 else None


def _primary(selection: str) -> list[str]:
    return ["--primary"] if selection.upper() == "PRIMARY" else []


def read_clipboard(where: WaylandDisplay, selection: str = "CLIPBOARD") -> ClipboardContent | None:
    """What the selection holds, in its text type when one is offered; None when empty."""
    listed = _run(where, ["wl-paste", *_primary(selection), "--list-types"])
    if not listed:
        return None
    types = listed.decode(errors="replace").split()
    target = next((t for t in TEXT_TYPES if t in types), types[0])
    data = _run(where, ["wl-paste", *_primary(selection), "--no-newline", "--type", target])
    return None if data is None else ClipboardContent(target, data)


def write_clipboard(
    where: WaylandDisplay, content: ClipboardContent, selection: str = "CLIPBOARD"
) -> None:
    """Own the selection with ``content``; WaylandError when wl-copy could not."""
    target = "text/plain;charset=utf-8" if content.target in TEXT_TYPES else content.target
    argv = ["wl-copy", *_primary(selection), "--type", target]
    # a file, not a pipe, for its messages: the server it leaves behind keeps its stderr
    with tempfile.TemporaryFile() as errors:
        try:
            done = subprocess.run(
                argv,
                input=content.data,
                stdout=subprocess.DEVNULL,
                stderr=errors,
                timeout=TIMEOUT_S,
                env=where.env(),
            )
        except FileNotFoundError as exc:
            raise WaylandError("wl-clipboard is not installed (apt install wl-clipboard)") from exc
        if done.returncode != 0:
            errors.seek(0)
            raise WaylandError(f"wl-copy failed: {errors.read().decode(errors='replace')[:300]}")
