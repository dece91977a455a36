"""A login page on a loopback port for Chromium (tests of secrets and recordings): it posts
its fields' screen rectangles on load and its form to ``/login``; the server keeps the
rectangles and whether each login came with the right password."""

from __future__ import annotations

import http.server
import json
import threading
from urllib.parse import parse_qs

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Example login</title>
<style>body{margin:0;padding:30px;font:18px sans-serif} input,button{display:block;margin:10px;
width:300px;height:40px;font-size:18px}</style></head><body>
<form method="post" action="/login">
<input id="user" name="user" value="me@example.org" aria-label="Email">
<input id="pw" name="pw" type="password" aria-label="Password">
<button id="go">Sign in</button></form>
<script>
window.addEventListener("load", () => {
  const dx = window.screenX + window.outerWidth - window.innerWidth;
  const dy = window.screenY + window.outerHeight - window.innerHeight;
  const out = {};
  for (const id of ["user", "pw", "go"]) {
    const r = document.getElementById(id).getBoundingClientRect();
    out[id] = [r.left + dx, r.top + dy, r.width, r.height];
  }
  fetch("/rect", {method: "POST", body: JSON.stringify(out)});
});
</script></body></html>"""
WELCOME = b"<!doctype html><title>Signed in</title><h1>Welcome back</h1>"


class LoginSite:
    def __init__(self, password: str) -> None:
        self.rects: dict[str, list[float]] = {}
        self.logins: list[bool] = []
        self.changed = threading.Condition()
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, body: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._send(PAGE.encode())

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"])).decode()
                with site.changed:
                    if self.path == "/rect":
                        site.rects = json.loads(body)
                    else:
                        site.logins.append(parse_qs(body).get("pw") == [password])
                    site.changed.notify_all()
                self._send(WELCOME if self.path == "/login" else b"")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, what: str, timeout: float = 20) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: getattr(self, what), timeout), what

    def centre(self, field: str) -> tuple[int, int]:
        x, y, w, h = self.rects[field]
        return int(x + w / 2), int(y + h / 2)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
