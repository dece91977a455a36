"""Real applications that publish their accessibility tree on an Xvfb screen.

- :func:`session_for` starts a private session bus and accessibility bus for the test
  display (:class:`jarvis.desktop.a11y.session.A11ySession`); applications get its
  environment, the test process's own environment is not touched.
- :class:`EventPage` is a loopback server for a Chromium page of controls whose scripts
  post what happens to them (clicks, checks, typed values, their own screen rectangles).
- :func:`start_chromium` opens that page in Chromium with renderer accessibility on.
"""

from __future__ import annotations

import http.server
import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from jarvis.desktop.a11y.session import CHROMIUM_FLAG, PUBLISH_ENV, A11ySession
from tests.realapps import CHROMIUM_FLAGS, App, app_env, find_window, focus

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>controls</title>
<style>body{margin:0;padding:20px;font:16px sans-serif} button,input{margin:6px}</style>
</head><body>
<button id="hello" onclick="post('clicked hello')">Hello</button>
<label><input type="checkbox" id="agree" onchange="post('agree ' + this.checked)">Agree</label>
<input id="name" aria-label="Full name" oninput="post('name ' + this.value)">
<button id="vanish" onclick="this.remove(); post('vanished')">Vanish</button>
<button id="launch" aria-label="Launch the rocket" aria-pressed="false"
 style="width:18px;height:18px;padding:0"
 onclick="this.setAttribute('aria-pressed', 'true'); post('launched')"></button>
<button id="target" onclick="post('clicked target')">Target</button>
<button id="disabler" onclick="document.getElementById('target').disabled = true;
 post('disabled target')">Disable target</button>
<script>
function post(text) { fetch("/event", {method: "POST", body: text}); }
function rects() {
  const out = {dx: window.screenX + window.outerWidth - window.innerWidth,
               dy: window.screenY + window.outerHeight - window.innerHeight};
  for (const id of ["hello", "agree", "name", "launch"]) {
    const r = document.getElementById(id).getBoundingClientRect();
    out[id] = [r.left, r.top, r.width, r.height];
  }
  post("rects " + JSON.stringify(out));
}
window.addEventListener("load", rects);
</script></body></html>"""


def session_for(display_env: dict[str, str]) -> A11ySession:
    return A11ySession(display_env)


def publishing_env(work: Path, display_env: dict[str, str], session: A11ySession) -> dict[str, str]:
    """The realapps environment (own HOME and XDG dirs) with the accessibility switches."""
    env = app_env(work / "home", display_env)
    env.update(PUBLISH_ENV, DBUS_SESSION_BUS_ADDRESS=session.address)
    return env


class EventPage:
    """Serves :data:`PAGE` on a loopback port and keeps what its scripts post."""

    def __init__(self) -> None:
        self.events: list[str] = []
        cond = self.cond = threading.Condition()
        events = self.events
        body = PAGE.encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                text = self.rfile.read(int(self.headers["Content-Length"])).decode()
                with cond:
                    events.append(text)
                    cond.notify_all()
                self.send_response(204)
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, prefix: str, timeout: float = 10.0) -> str:
        """The first event that starts with ``prefix`` (AssertionError after ``timeout``)."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                found = [e for e in self.events if e.startswith(prefix)]
                if found:
                    return found[-1]
                left = deadline - time.monotonic()
                assert left > 0, f"no {prefix!r} event; got {self.events}"
                self.cond.wait(left)

    def rects(self) -> dict[str, Any]:
        return json.loads(self.wait("rects ")[len("rects ") :])  # type: ignore[no-any-return]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start_chromium(work: Path, env: dict[str, str], url: str) -> App:
    profile = work / "chromium-profile"
    argv = ["chromium", *CHROMIUM_FLAGS, CHROMIUM_FLAG, f"--user-data-dir={profile}"]
    argv += ["--window-position=0,0", "--window-size=900,600", f"--app={url}"]
    log = open(work / "chromium.log", "wb")  # noqa: SIM115 (closed with the process)
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    log.close()
    app = App("chromium", proc)
    app.window, app.box = find_window(proc.pid, "chromium", timeout=30)
    focus(app.window)
    return app
