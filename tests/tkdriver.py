"""The Python side of the Tk test app (``tests/tkapp.py``): start it, read its events,
send it commands.

    app = TkApp.start()                  # uses DISPLAY/XAUTHORITY of this process
    x, y = app.widget_center("box")      # real screen coordinates
    mark = app.mark()
    ...act on the screen...
    ev = app.wait_for(lambda e: e["kind"] == "click", since=mark)
    app.sync()                           # every X event caused so far has been reported
    app.close()

Events are dicts as documented in ``tests/tkapp.py``. ``events()`` and ``wait_for``
look at everything since the last ``reset()`` unless ``since`` (an index from
``mark()``) says otherwise. ``wait_for`` polls the event log with a deadline and
raises AssertionError listing the latest events when nothing matched.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

APP = Path(__file__).with_name("tkapp.py")
Event = dict[str, Any]


class TkApp:
    def __init__(self, proc: subprocess.Popen[str], stderr: IO[bytes]) -> None:
        self.proc = proc
        self._stderr = stderr
        self._events: list[Event] = []
        self._cond = threading.Condition()
        self._ids = itertools.count(1)
        self._closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        ready = self.wait_for(lambda e: e["kind"] == "ready", timeout=15)
        self.screen: tuple[int, int] = (ready["screen"][0], ready["screen"][1])
        self.widgets: dict[str, list[int]] = ready["widgets"]

    @classmethod
    def start(cls, env: dict[str, str] | None = None) -> TkApp:
        """Start the app on the display named by ``env`` (default: this process's)."""
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        proc = subprocess.Popen(
            [sys.executable, str(APP)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            encoding="utf-8",
            env={**os.environ, **(env or {})},
            bufsize=1,
        )
        try:
            return cls(proc, stderr)
        except BaseException:
            proc.kill()
            proc.wait(timeout=5)
            stderr.close()
            raise

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                event = {"kind": "garbage", "line": line}
            with self._cond:
                self._events.append(event)
                self._cond.notify_all()
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # -- events

    def alive(self) -> bool:
        return self.proc.poll() is None and not self._closed

    def mark(self) -> int:
        """An index for ``since=``: only events after this point."""
        with self._cond:
            return len(self._events)

    def events(self, kind: str | None = None, since: int = 0) -> list[Event]:
        with self._cond:
            return [e for e in self._events[since:] if kind is None or e["kind"] == kind]

    def wait_for(
        self, predicate: Callable[[Event], bool], timeout: float = 5, since: int = 0
    ) -> Event:
        """The first event since ``since`` matching ``predicate``; waits up to ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for event in self._events[since:]:
                    if predicate(event):
                        return event
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    recent = self._events[-12:]
                    why = "the app exited" if self._closed else f"nothing within {timeout} s"
                    raise AssertionError(f"{why}; latest events: {recent}{self._stderr_tail()}")
                self._cond.wait(left)

    def wait_kind(self, kind: str, since: int = 0, timeout: float = 5, **fields: Any) -> Event:
        """The first ``kind`` event since ``since`` whose fields equal ``fields``."""
        return self.wait_for(
            lambda e: e["kind"] == kind and all(e.get(k) == v for k, v in fields.items()),
            timeout=timeout,
            since=since,
        )

    def _stderr_tail(self) -> str:
        self._stderr.seek(0)
        tail = self._stderr.read().decode(errors="replace")
        return f"; app stderr: {tail[-800:]}" if tail else ""

    # -- commands

    def command(self, text: str, timeout: float = 10) -> Event:
        """Send one command and wait for its ack (or its ``state`` reply)."""
        ident = str(next(self._ids))
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{ident} {text}\n")
        self.proc.stdin.flush()
        return self.wait_for(
            lambda e: e["kind"] in ("ack", "state") and e.get("id") == ident, timeout=timeout
        )

    def reset(self) -> None:
        """Clear texts, stop any animation, focus the pad, and forget earlier events."""
        ack = self.command("reset")
        with self._cond:
            self._events = self._events[self._events.index(ack) + 1 :]

    def sync(self) -> None:
        """Return once the app has reported every X event generated before this call."""
        self.command("sync")

    def focus(self, name: str) -> None:
        self.command(f"focus {name}")

    def animate(self, ms: int) -> Event:
        """Start an ``ms`` animation; returns once its first frame is on screen."""
        mark = self.mark()
        self.command(f"animate {ms}")
        return self.wait_kind("animate_started", since=mark)

    def state(self) -> Event:
        return self.command("state")

    def entry_text(self) -> str:
        return str(self.state()["box"])

    def notes_text(self) -> str:
        return str(self.state()["notes"])

    def ok_pressed(self) -> str | None:
        """The box text at the last OK press since the last reset, or None."""
        presses = self.events("ok")
        return str(presses[-1]["text"]) if presses else None

    def widget_rect(self, name: str) -> tuple[int, int, int, int]:
        x, y, w, h = self.widgets[name]
        return x, y, w, h

    def widget_center(self, name: str) -> tuple[int, int]:
        """Centre of a widget (box, ok, notes, pad) in real screen coordinates."""
        x, y, w, h = self.widget_rect(name)
        return x + w // 2, y + h // 2

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()  # EOF: the app quits
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(timeout=5)
        self._reader.join(timeout=5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()
