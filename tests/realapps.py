"""Real applications on an Xvfb screen, for the typing and pointer matrix
(``tests/test_real_apps.py``): start them with their own config dirs, find their
window, look at the screen, read the selections.

- :func:`app_env` is the environment every application gets: the display, and HOME
  and the XDG dirs in a temp dir (no dialogs, no session restores, no dconf).
- :class:`App` starts one application (``mousepad``, ``featherpad``, ``xterm``,
  ``xfce4-terminal``, ``chromium``), waits for its top-level window and gives it the
  keyboard focus (bare Xvfb has no window manager to do that on a click).
- :class:`PageServer` serves the Chromium page on a free loopback port: a textarea
  (Tab inserts a tab) whose script posts its value on every change, above a long text.
- :func:`grab` and :func:`settled` take grayscale screenshots of a region as numpy
  arrays; :func:`vertical_shift`, :func:`changed_box` compare two of them.
- :func:`selection` reads PRIMARY or CLIPBOARD with xclip.
"""

from __future__ import annotations

import http.server
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

EDITORS = ("mousepad", "featherpad")
TERMINALS = ("xterm", "xfce4-terminal")
APPS = (*EDITORS, *TERMINALS, "chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--test-type",  # no infobar about --no-sandbox above the page
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-gpu",
    "--disable-smooth-scrolling",  # a wheel click moves the page at once
    "--password-store=basic",
]
FEATHERPAD_CONF = """[text]
noIndent=true
appendEmptyLine=false
autoBracket=false
autoReplace=false
autoSave=false
removeTrailingSpaces=false
skipNonText=false

[window]
hideSearchbar=true
nativeDialog=false
"""
PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>matrix</title>
<style>body{margin:0;font:16px monospace}textarea{display:block;margin:8px;width:760px;
height:220px;font:16px monospace}</style></head><body>
<textarea id="t" spellcheck="false"></textarea><div id="long">LINES</div>
<script>
const t = document.getElementById("t");
let seq = 0;
function post() {
  seq += 1;
  fetch("/value", {method: "POST", body: JSON.stringify({seq, value: t.value})});
}
t.addEventListener("input", post);
t.addEventListener("keydown", (e) => {
  if (e.key === "Tab") { e.preventDefault(); t.setRangeText("\\t", t.selectionStart,
    t.selectionEnd, "end"); post(); }
});
t.focus();
window.addEventListener("load", post);  // the page is ready: it posts the empty value
</script></body></html>"""


def app_env(home: Path, display_env: dict[str, str]) -> dict[str, str]:
    dirs = {"XDG_CONFIG_HOME": "cfg", "XDG_DATA_HOME": "data", "XDG_CACHE_HOME": "cache"}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "DBUS_"))}
    env.update(display_env)
    env.update({k: str(home / v) for k, v in dirs.items()})
    runtime = home / "run"
    for sub in [*dirs.values(), "run"]:
        (home / sub).mkdir(parents=True, exist_ok=True)
    runtime.chmod(0o700)
    env.update(
        HOME=str(home),
        XDG_RUNTIME_DIR=str(runtime),
        GSETTINGS_BACKEND="memory",  # no dconf, no D-Bus
        NO_AT_BRIDGE="1",
        GTK_A11Y="none",
        LANG="C.UTF-8",
        LC_ALL="C.UTF-8",
    )
    env.pop("SESSION_MANAGER", None)
    return env


class PageServer:
    """The Chromium page and the endpoint its script posts the textarea's value to."""

    def __init__(self, lines: int) -> None:
        page = PAGE.replace("LINES", "<br>".join(f"line {i}" for i in range(1, lines + 1)))
        self.value: dict[str, Any] = {"seq": 0, "value": None}
        cond = self.cond = threading.Condition()
        store = self.value

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                body = page.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                import json

                data = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with cond:
                    if data["seq"] > store["seq"]:
                        store.update(data)
                    cond.notify_all()
                self.send_response(204)
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_value(self, expected: str, timeout: float = 10.0) -> str | None:
        """Wait until the textarea holds ``expected``; the last value posted."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.value["value"] != expected:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.cond.wait(left)
            return self.value["value"]  # type: ignore[no-any-return]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class App:
    """One running application and its top-level window (root coordinates)."""

    name: str
    proc: subprocess.Popen[bytes]
    window: int = 0
    box: tuple[int, int, int, int] = (0, 0, 0, 0)  # left, top, width, height
    files: dict[str, Path] = field(default_factory=dict)

    @classmethod
    def start(cls, name: str, work: Path, env: dict[str, str], url: str = "") -> App:
        home = work / "home"
        files = {"doc": work / f"{name}.txt", "long": work / "long.txt"}
        files["long"].write_text("".join(f"line {i}\n" for i in range(1, 301)))
        files["doc"].write_text("".join(f"line {i}\n" for i in range(1, 301)))
        if name == "mousepad":
            argv = ["mousepad", "--disable-server", str(files["doc"])]
        elif name == "featherpad":
            conf = home / "cfg" / "featherpad" / "fp.conf"
            conf.parent.mkdir(parents=True, exist_ok=True)
            conf.write_text(FEATHERPAD_CONF)
            argv = ["featherpad", "--standalone", str(files["doc"])]
        elif name == "xterm":
            shell = f"seq 1 300; exec cat > {files['doc']}"
            argv = ["xterm", "-geometry", "90x30+0+0", "-fa", "Monospace", "-fs", "12"]
            argv += ["-xrm", "XTerm*saveLines: 1000", "-e", "sh", "-c", shell]
        elif name == "xfce4-terminal":
            shell = f"seq 1 300; exec cat > {files['doc']}"
            argv = ["xfce4-terminal", "--disable-server", "--geometry=90x30+0+0"]
            argv += ["--hide-menubar", "--hide-toolbar", "-x", "sh", "-c", shell]
        elif name == "chromium":
            profile = work / "chromium-profile"
            argv = ["chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}"]
            argv += ["--window-position=0,0", "--window-size=900,700", f"--app={url}"]
        else:
            raise ValueError(name)
        if name in TERMINALS:
            files["doc"].write_text("")
        log = open(work / f"{name}.log", "wb")  # noqa: SIM115 (closed with the process)
        proc = subprocess.Popen(
            argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=work
        )
        log.close()
        app = cls(name, proc, files=files)
        app.window, app.box = find_window(proc.pid, name, timeout=30)
        focus(app.window)
        return app

    def center(self) -> tuple[int, int]:
        left, top, width, height = self.box
        return left + width // 2, top + height // 2

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)


def _toplevels(display: Any) -> list[Any]:
    from Xlib import X

    root = display.screen().root
    out = []
    for child in root.query_tree().children:
        try:
            attrs = child.get_attributes()
            geom = child.get_geometry()
        except Exception:  # destroyed meanwhile
            continue
        if attrs.map_state == X.IsViewable and geom.width > 100 and geom.height > 100:
            out.append(child)
    return out


def find_window(pid: int, name: str, timeout: float) -> tuple[int, tuple[int, int, int, int]]:
    """The application's mapped top-level window with a text area (by WM_CLASS)."""
    from Xlib.display import Display

    wanted = {"xfce4-terminal": "xfce4-terminal", "chromium": "chromium"}.get(name, name)
    deadline = time.monotonic() + timeout
    display = Display()
    try:
        while time.monotonic() < deadline:
            for window in _toplevels(display):
                try:
                    wm_class = window.get_wm_class() or ("", "")
                    geom = window.get_geometry()
                except Exception:
                    continue
                if wanted in (wm_class[0].lower(), wm_class[1].lower()):
                    pos = window.translate_coords(display.screen().root, 0, 0)
                    return window.id, (-pos.x, -pos.y, geom.width, geom.height)
            time.sleep(0.1)
    finally:
        display.close()
    raise AssertionError(f"{name} (pid {pid}) showed no window within {timeout:.0f} s")


def focus(window: int) -> None:
    """Give ``window`` the keyboard focus, as a window manager does on a click."""
    from Xlib import X
    from Xlib.display import Display

    display = Display()
    try:
        display.set_input_focus(window, X.RevertToParent, X.CurrentTime)
        display.sync()
    finally:
        display.close()


# ------------------------------------------------------------------ the screen


def grab(box: tuple[int, int, int, int]) -> np.ndarray:
    """Grayscale pixels of ``box`` (left, top, width, height) as int16 rows."""
    import mss

    left, top, width, height = box
    with mss.MSS() as sct:
        shot = sct.grab({"left": left, "top": top, "width": width, "height": height})
    pixels = np.frombuffer(shot.bgra, dtype=np.uint8).reshape(height, width, 4)
    return pixels[:, :, :3].astype(np.int16).sum(axis=2) // 3  # type: ignore[no-any-return]


def changed(a: np.ndarray, b: np.ndarray, threshold: int = 40) -> np.ndarray:
    return np.abs(a - b) > threshold  # type: ignore[no-any-return]


def settled(box: tuple[int, int, int, int], timeout: float = 5.0) -> np.ndarray:
    """A grab once three grabs 80 ms apart differ in fewer than 60 pixels (a caret)."""
    last = grab(box)
    still = 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.08)
        now = grab(box)
        still = still + 1 if int(changed(last, now).sum()) < 60 else 0
        if still >= 2:
            return now
        last = now
    return last


def changed_box(a: np.ndarray, b: np.ndarray) -> tuple[int, int, int, int] | None:
    """The widest band of rows that changed between ``a`` and ``b``, as the box
    (x0, y0, x1, y1) of its changed pixels; None if nothing changed."""
    mask = changed(a, b)
    rows = mask.any(axis=1)
    bands: list[tuple[int, int]] = []
    y = 0
    while y < len(rows):
        if rows[y]:
            start = y
            while y < len(rows) and rows[y]:
                y += 1
            bands.append((start, y))
        y += 1
    best: tuple[int, int, int, int] | None = None
    for y0, y1 in bands:
        cols = np.nonzero(mask[y0:y1].any(axis=0))[0]
        box = (int(cols[0]), y0, int(cols[-1]) + 1, y1)
        if best is None or box[2] - box[0] > best[2] - best[0]:
            best = box
    return best


def vertical_shift(before: np.ndarray, after: np.ndarray) -> int:
    """How far the content moved: s > 0 when it moved up by s rows (scrolled down)."""
    height = before.shape[0]
    lo, hi = int(height * 0.3), int(height * 0.7)
    reach = min(lo, height - hi)
    band = after[lo:hi]
    errors = {
        s: float(np.abs(band - before[lo + s : hi + s]).mean()) for s in range(-reach, reach + 1)
    }
    return min(errors, key=lambda s: (errors[s], abs(s)))


# --------------------------------------------------------------- the selections


def selection(name: str = "PRIMARY", timeout: float = 3.0) -> str | None:
    done = subprocess.run(
        ["xclip", "-selection", name.lower(), "-o", "-t", "UTF8_STRING"],
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None


def set_clipboard(text: str, name: str = "CLIPBOARD") -> None:
    """Set the selection and wait until it reads back (xclip's background process
    takes it after the command returns; until then the last owner answers). When the
    selection already holds ``text``, a read-back proves nothing (the old owner answers
    the same), so a unique marker goes first: the new owner is then the one answering."""
    if selection(name) == text:
        _set_selection(f"marker {time.monotonic_ns()}", name)
    _set_selection(text, name)


def _set_selection(text: str, name: str) -> None:
    subprocess.run(
        ["xclip", "-selection", name.lower(), "-t", "UTF8_STRING", "-i"],
        input=text.encode(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    deadline = time.monotonic() + 5
    while selection(name) != text:
        assert time.monotonic() < deadline, f"xclip did not take {name}"
        time.sleep(0.01)


def have_apps() -> list[str]:
    """The matrix applications that are not installed (the Makefile installs them)."""
    return [name for name in APPS if shutil.which(name) is None]
