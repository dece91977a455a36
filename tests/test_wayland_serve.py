"""`jarvis serve --sandbox wayland` as a user runs it: a real daemon process, no display
of the person's, a private headless sway started as the unprivileged user with two real
terminals (foot) on it, the scripted model on 127.0.0.1. A dropped message becomes a task
that types into the note terminal (its file holds the text); while it runs a person takes
over through the API: the RFB handshake through ``WS /api/vnc/main`` (wayvnc, relayed)
gives the sway output's size, a viewer's click reaches nothing, the person's click
focuses the other window and their keys reach the note; the hand back resumes the task
with the person's note. ``GET /api/screen/live`` shows the sway output (grim)."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image

from jarvis.desktop.wlroots.session import WaylandDisplay, swaymsg
from jarvis.discovery import find_daemon
from tests.agent_harness import TEST_KEY
from tests.api_harness import routed
from tests.fake_model import FakeModel, RecordedRequest, Reply, call
from tests.test_wayland_run import _focused_app, _sway_socket
from tests.vnc_client import XK_RETURN, Session, open_session
from tests.wayland import needs_sway

ROOT = Path(__file__).resolve().parent.parent
NOTE, OTHER = "jarvis-note", "jarvis-other"
SIZE = (1024, 640)
WAIT_S = 60.0

pytestmark = [
    needs_sway,
    pytest.mark.slow,
    pytest.mark.skipif(not any(Path(p, "wayvnc").exists() for p in os.environ["PATH"].split(":")),
                       reason="wayvnc is needed (make system)"),
]  # fmt: skip


def _windows(where: WaylandDisplay) -> dict[str, tuple[int, int]]:
    """The centre of each mapped window, by app_id (layout pixels)."""

    def walk(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
        yield node
        for child in [*node.get("nodes", []), *node.get("floating_nodes", [])]:
            yield from walk(child)

    found = {}
    for node in walk(swaymsg(where, "-t", "get_tree")):  # type: ignore[arg-type]
        rect = node.get("rect", {})
        if node.get("app_id") and rect.get("width", 0) > 0:
            found[node["app_id"]] = (
                rect["x"] + rect["width"] // 2,
                rect["y"] + rect["height"] // 2,
            )
    return found


def _until(check: Any, what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.05)
    raise AssertionError(f"{what} did not happen in {timeout:.0f} s")


class Desk:
    """The daemon's private sway, found from what it said on its output."""

    def __init__(self, out: Path) -> None:
        self.out = out

    @property
    def where(self) -> WaylandDisplay:
        where = _sway_socket(self.out)
        assert where is not None, self.out.read_text()[-2000:]
        return where

    def ready(self) -> dict[str, tuple[int, int]]:
        """Both windows mapped and the note focused (the last app started gets it)."""

        def both() -> dict[str, tuple[int, int]] | None:
            where = _sway_socket(self.out)
            if where is None:
                return None
            found = _windows(where)
            return found if {NOTE, OTHER} <= set(found) else None

        found: dict[str, tuple[int, int]] = _until(both, "both windows")
        swaymsg(self.where, f"[app_id={NOTE}] focus")
        return found

    def focused(self, app: str) -> bool:
        return _focused_app(self.where) == app


def _script(fake_model: FakeModel, desk: Desk, note: Path, taken: threading.Event) -> list[str]:
    """The agent's steps: click into the note and type; once a person holds the screen,
    (again after the hand back, if that step was dropped) type ``resumed``; then finish."""
    seen: list[str] = []

    def step(request: RecordedRequest) -> Reply:
        text = request.all_text()
        seen.append(text)
        if len(seen) == 1:
            x, y = desk.ready()[NOTE]
            return Reply(tool_calls=[call("click", x=x, y=y), call("type", text="agent\n")])
        if not taken.is_set():
            assert taken.wait(WAIT_S), "nobody took over"
        if "resumed" in (note.read_text() if note.exists() else ""):
            return Reply(tool_calls=[call("finished", summary="typed the note")])
        x, y = _windows(desk.where)[NOTE]
        return Reply(tool_calls=[call("click", x=x, y=y), call("type", text="resumed\n")])

    fake_model.set_default(routed(step))
    return seen


def _env(fake_model: FakeModel, home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "PYTHONPATH": str(ROOT),
        "ANTHROPIC_API_KEY": TEST_KEY,
        "ANTHROPIC_BASE_URL": fake_model.anthropic_base_url,
        "JARVIS_MAX_RETRIES": "0",
        "JARVIS_LONG_TERM_MEMORY": "false",
        "JARVIS_API__HTTP": "127.0.0.1:0",
        "ANONYMIZED_TELEMETRY": "False",
        "TMPDIR": tempfile.gettempdir(),  # this worker's (tests/conftest.py)
    }  # no DISPLAY, no WAYLAND_DISPLAY: the daemon needs no display of the person's


async def _take_over_and_hand_back(
    base: str, auth: dict[str, str], desk: Desk, note: Path, taken: threading.Event
) -> None:
    ws = base.replace("http://", "ws://") + "/api/vnc/main"
    async with httpx.AsyncClient(base_url=base, headers=auth) as client:
        await asyncio.to_thread(_until, lambda: note.exists() and note.read_text(), "typing")
        assert note.read_text() == "agent\n"
        live = await client.get("/api/screen/live")  # grim's picture of the sway output
        assert live.status_code == 200 and live.headers["content-type"] == "image/jpeg"
        width, height = Image.open(io.BytesIO(live.content)).size
        assert width / height == pytest.approx(SIZE[0] / SIZE[1], rel=0.02)
        # a viewer's click reaches nothing: its wayvnc takes no input
        view = await open_session(ws, additional_headers=auth)
        assert (view.width, view.height) == SIZE
        other = _windows(desk.where)[OTHER]
        await view.click(*other)
        assert await view.frame() > 0  # wayvnc has read the click before this
        assert desk.focused(NOTE)
        taken_now = await client.post("/api/takeover", json={"by": "web"})
        assert taken_now.status_code == 200, taken_now.text
        taken.set()
        ticket = taken_now.json()["ticket"]
        person = await open_session(ws + f"?ticket={ticket}", additional_headers=auth)
        assert (person.width, person.height) == SIZE  # the sway output's size
        await person.click(*other)
        await asyncio.to_thread(_until, lambda: desk.focused(OTHER), "the person's click")
        await person.click(*_windows(desk.where)[NOTE])
        await asyncio.to_thread(_until, lambda: desk.focused(NOTE), "the click on the note")
        await _type(person, "person")
        await asyncio.to_thread(
            _until, lambda: note.read_text() == "agent\nperson\n", "the person's keys"
        )
        back = await client.post("/api/handback", json={"note": "I typed person"})
        assert back.status_code == 200 and back.json()["held"] is False
        await view.ws.close()
        await person.ws.close()


def _left(said: Path, note: Path) -> list[str]:
    """The processes of the sway the command said it started (``said``: its output)
    still running: sway (its folder in its command), its apps (the note's path) and
    wayvnc (the folder in its environment). Other tests' sways are not counted."""
    socket = said.read_text().split("running on the private Wayland desktop ")[1].split()[0]
    folder = Path(socket).parent.parent.name.encode()
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            line = (proc / "cmdline").read_bytes()
            env = (proc / "environ").read_bytes()
        except OSError:
            continue
        if folder in line or str(note).encode() in line or folder in env:
            found.append(line.decode(errors="replace"))
    return found


async def _type(session: Session, text: str) -> None:
    await session.type(text)
    await session.key(XK_RETURN)


async def test_serve_sandbox_wayland_runs_a_task_and_a_person_takes_over(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    (data / "config").mkdir(parents=True)
    shared = Path(tempfile.mkdtemp(prefix="jarvis-wl-note-"))  # the app's user writes here
    shared.chmod(0o777)
    note = shared / "note.txt"
    apps = [
        ["foot", "-a", OTHER, "sh", "-c", "stty -echo; cat > /dev/null"],
        ["foot", "-a", NOTE, "sh", "-c", f"stty -echo; cat > {note}"],
    ]
    sandbox = {"size": f"{SIZE[0]}x{SIZE[1]}", "apps": apps}
    settings = {"safety": {"sandbox": sandbox}, "settle_ceiling_ms": 300}
    (data / "config" / "settings.json").write_text(json.dumps(settings))
    out = tmp_path / "serve.out"
    desk = Desk(out)
    taken = threading.Event()
    seen = _script(fake_model, desk, note, taken)
    argv = [sys.executable, "-m", "jarvis", "serve", "--sandbox", "wayland"]
    try:
        with out.open("w") as sink:
            daemon = subprocess.Popen(
                [*argv, "--poll", "0.2", "--data-dir", str(data)],
                env=_env(fake_model, tmp_path), cwd=ROOT, stdin=subprocess.DEVNULL,
                stdout=sink, stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:

            def listening() -> Any:
                assert daemon.poll() is None, out.read_text()[-2000:]
                if not (data / "config" / "api_token").exists():
                    return None
                found = find_daemon(data)
                return found if found is not None and found.url else None

            found = await asyncio.to_thread(_until, listening, "the daemon's API")
            auth = {"authorization": f"Bearer {found.token}"}
            drop = data / "messages" / "drop"
            drop.mkdir(parents=True, exist_ok=True)
            (drop / "task.md").write_text("write the note\n")
            await _take_over_and_hand_back(found.url, auth, desk, note, taken)
            todos = data / "todos.md"
            await asyncio.to_thread(
                _until, lambda: "status: completed" in todos.read_text(), "the task's end"
            )
            daemon.send_signal(signal.SIGTERM)
            assert await asyncio.to_thread(daemon.wait, 30) == 0, out.read_text()[-2000:]
        finally:
            if daemon.poll() is None:  # its sway and apps end with it
                daemon.terminate()
                try:
                    daemon.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    daemon.kill()
                    daemon.wait()
        said = out.read_text()
        assert TEST_KEY not in said
        assert note.read_text() == "agent\nperson\nresumed\n"
        assert any("A person (web) took over the desktop" in text for text in seen)
        assert any("I typed person" in text for text in seen)
        journal = "".join(p.read_text() for p in data.rglob("*.jsonl"))
        assert "takeover_started" in journal and "takeover_ended" in journal
        assert _left(out, note) == []  # its sway, apps and wayvnc are gone
        assert not list(Path(tempfile.gettempdir()).glob("jarvis-wayvnc-*"))
    finally:
        note.unlink(missing_ok=True)
        shared.rmdir()
