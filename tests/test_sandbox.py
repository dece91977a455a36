"""The private virtual display: the Sandbox itself (display, cookie, window manager, apps,
everything stopped), and `jarvis run --sandbox` as a user runs it: the task's app on the
private display gets every click, key and scroll; a canary window on the test's own display
gets none."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from jarvis.desktop.x11 import X11Error
from jarvis.safety.sandbox import Sandbox
from jarvis.safety.settings import SandboxSettings
from tests.agent_harness import TEST_KEY
from tests.fake_model import FakeModel, RecordedRequest, Reply, call
from tests.test_serve import serve_env
from tests.tkdriver import TkApp

TKAPP = str(Path(__file__).with_name("tkapp.py"))
INPUT_KINDS = ("click", "key", "scroll", "motion", "release")


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return not stat[stat.rfind(")") + 2 :].startswith("Z")


def _read_events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _wait_ready(path: Path, timeout: float = 20) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        ready = [e for e in _read_events(path) if e["kind"] == "ready"]
        if ready:
            return ready[0]
        assert time.monotonic() < deadline, "the sandboxed app did not start"
        time.sleep(0.05)


def _clients(display: str, xauthority: str) -> int:
    """How many windows the root of ``display`` has (xwininfo through the cookie)."""
    out = subprocess.run(
        ["xwininfo", "-root", "-children", "-display", display],
        env={**os.environ, "XAUTHORITY": xauthority},
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    ).stdout
    return sum(1 for line in out.splitlines() if line.strip().startswith("0x"))


def test_sandbox_starts_and_stops_everything(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    box = Sandbox(
        SandboxSettings(size="800x600", apps=[[sys.executable, TKAPP, "--events", str(events)]])
    ).start()
    try:
        ready = _wait_ready(events)
        assert ready["screen"] == [800, 600]
        assert box.display and box.display != os.environ.get("DISPLAY")
        pids = [p.pid for p in box.running]
        assert len(pids) == 3  # Xvfb, the window manager, the app
        assert _clients(box.display, box.xauthority) >= 1
        wrong = tmp_path / "wrong-cookie"
        wrong.write_bytes(b"")
        refused = subprocess.run(
            ["xwininfo", "-root", "-display", box.display],
            env={**os.environ, "XAUTHORITY": str(wrong)},
            capture_output=True,
            timeout=10,
        )
        assert refused.returncode != 0  # no cookie, no access: the display is private
        cookie = Path(box.xauthority)
    finally:
        box.stop()
    assert all(not _alive(pid) for pid in pids)
    assert not cookie.exists()
    assert box.running == []


def test_apps_on_the_display_get_no_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model sees what the apps show, so they never get Jarvis's keys or passwords."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-sandbox-0123456789")
    monkeypatch.setenv("JARVIS_EMAIL__PASSWORD", "hunter2hunter2")
    monkeypatch.setenv("LANG", "C.UTF-8")
    seen = tmp_path / "env.txt"
    app = ["sh", "-c", f"env > {seen}.part && mv {seen}.part {seen}; sleep 30"]
    with Sandbox(SandboxSettings(size="640x480", window_manager=None, apps=[app])) as box:
        deadline = time.monotonic() + 10
        while not seen.exists():
            assert time.monotonic() < deadline, "the app did not write its environment"
            time.sleep(0.02)
        env = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
        assert env["DISPLAY"] == box.display and env["XAUTHORITY"] == box.xauthority
    assert "OPENAI_API_KEY" not in env and "JARVIS_EMAIL__PASSWORD" not in env
    assert "sk-sandbox" not in seen.read_text() and env["LANG"] == "C.UTF-8"


def test_a_bad_app_stops_what_was_started(tmp_path: Path) -> None:
    box = Sandbox(SandboxSettings(apps=[["/nonexistent/app"]]))
    with pytest.raises(X11Error, match="cannot start"):
        box.start()
    assert box.running == []


def test_bad_size_is_refused() -> None:
    with pytest.raises(ValueError):
        SandboxSettings(size="huge")


@pytest.mark.slow
@pytest.mark.usefixtures("xserver")
def test_run_sandbox_leaves_the_users_desktop_alone(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, xserver: Any
) -> None:
    data = tmp_path / "data"
    events = tmp_path / "sandboxed.jsonl"
    (data / "config").mkdir(parents=True)
    app = [sys.executable, TKAPP, "--events", str(events)]
    sandbox = {"size": "1280x800", "apps": [app]}
    settings = {"safety": {"sandbox": sandbox}, "settle_ceiling_ms": 300}
    (data / "config" / "settings.json").write_text(json.dumps(settings))

    def act(request: RecordedRequest) -> Reply:
        widgets = _wait_ready(events)["widgets"]
        bx, by, bw, bh = widgets["box"]
        px, py, pw, ph = widgets["pad"]
        return Reply(
            tool_calls=[
                call("click", x=bx + bw // 2, y=by + bh // 2),
                call("type", text="sandboxed"),
                call("scroll", x=px + pw // 2, y=py + ph - 40, direction="down", amount=2),
            ]
        )

    fake_model.script(
        act,
        Reply(tool_calls=[call("finished", summary="typed in the sandbox")]),
        Reply(text='{"done": true, "reason": "the box shows sandboxed"}'),
    )
    mark = tkapp.mark()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "jarvis",
            "run",
            "type in the box",
            "--sandbox",
            *("--data-dir", str(data)),
        ],
        env=serve_env(xserver, fake_model) | {"COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert TEST_KEY not in proc.stdout + proc.stderr
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "running on the private display :" in proc.stderr
    private = proc.stderr.split("running on the private display ")[1].split()[0]
    assert private != xserver.display
    got = _read_events(events)
    kinds = {e["kind"] for e in got}
    assert {"click", "key", "scroll"} <= kinds
    assert [e["text"] for e in got if e["kind"] == "text"][-1] == "sandboxed"
    tkapp.sync()
    touched = [e for e in tkapp.events(since=mark) if e["kind"] in INPUT_KINDS]
    assert touched == []  # the canary on the user's display got no click, key or scroll
    assert _leftovers(str(events)) == []  # the app, the window manager and Xvfb are gone


def _leftovers(app_marker: str) -> list[str]:
    """Live processes of a sandbox: its app (by ``app_marker``) or its Xvfb (by its cookie's
    folder; display numbers are reused by other servers at once, so not by number). Only
    sandboxes under this process's temporary folder count: each pytest-xdist worker has
    its own (tests/conftest.py), so a neighbour's sandbox is not taken for a leftover."""
    folder = os.path.join(tempfile.gettempdir(), "jarvis-sandbox-")
    return [
        p.name
        for p in Path("/proc").iterdir()
        if p.name.isdigit()
        and (_cmdline_has(p, app_marker) or _cmdline_has(p, folder))
        and _alive(int(p.name))
    ]


def _cmdline_has(proc_dir: Path, text: str) -> bool:
    try:
        return text.encode() in (proc_dir / "cmdline").read_bytes()
    except OSError:
        return False


@pytest.mark.slow
def test_serve_sandbox_runs_every_task_on_the_private_display(
    tkapp: TkApp, fake_model: FakeModel, tmp_path: Path, xserver: Any
) -> None:
    """`jarvis serve --sandbox`: a dropped message runs as a task on the private display;
    the canary gets nothing; SIGTERM ends the daemon and everything on that display."""
    from tests.api_harness import NEW_TASK, VERIFIED, is_router, is_verify

    data = tmp_path / "data"
    events = tmp_path / "served.jsonl"
    (data / "config").mkdir(parents=True)
    app = [sys.executable, TKAPP, "--events", str(events)]
    settings = {
        "safety": {"sandbox": {"size": "1024x768", "apps": [app]}},
        "settle_ceiling_ms": 300,
    }
    (data / "config" / "settings.json").write_text(json.dumps(settings))
    steps: list[Reply] = [Reply(tool_calls=[call("finished", summary="typed served")])]

    def answer(request: RecordedRequest) -> Reply:
        if is_router(request):
            return NEW_TASK
        if is_verify(request):
            return VERIFIED
        if not any(e["kind"] == "text" for e in _read_events(events)):
            bx, by, bw, bh = _wait_ready(events)["widgets"]["box"]
            return Reply(
                tool_calls=[
                    call("click", x=bx + bw // 2, y=by + bh // 2),
                    call("type", text="served"),
                ]
            )
        return steps[0]

    fake_model.set_default(answer)
    mark = tkapp.mark()
    out = tmp_path / "serve.out"
    with out.open("w+") as sink:
        daemon = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jarvis",
                "serve",
                "--sandbox",
                "--http",
                "off",
                *("--poll", "0.2", "--data-dir", str(data)),
            ],
            env=serve_env(xserver, fake_model),
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
        try:
            (data / "messages" / "drop").mkdir(parents=True, exist_ok=True)
            (data / "messages" / "drop" / "task.md").write_text("type served in the box\n")
            deadline = time.monotonic() + 90
            while "status: completed" not in _read(data / "todos.md"):
                assert daemon.poll() is None, out.read_text()[-2000:]
                assert time.monotonic() < deadline, out.read_text()[-2000:]
                time.sleep(0.1)
            daemon.send_signal(signal.SIGTERM)
            assert daemon.wait(timeout=30) == 0, out.read_text()[-2000:]
        finally:
            if daemon.poll() is None:
                daemon.kill()
                daemon.wait()
    text = out.read_text()
    assert TEST_KEY not in text
    private = text.split("running on the private display ")[1].split()[0]
    assert [e["text"] for e in _read_events(events) if e["kind"] == "text"][-1] == "served"
    tkapp.sync()
    assert [e for e in tkapp.events(since=mark) if e["kind"] in INPUT_KINDS] == []
    assert private != xserver.display
    assert _leftovers(str(events)) == []


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""
