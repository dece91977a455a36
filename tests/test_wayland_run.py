"""`jarvis run --sandbox wayland` as a user runs it: a real `jarvis run` process, no X
display at all, a private headless sway started as the unprivileged user, its app a real
terminal (foot) writing what it reads to a file, and the scripted model on 127.0.0.1.
The model clicks into foot and types text with CJK and emoji; the file holds it byte for
byte, the step's target crop is cut through screencopy; the
compositor, its runtime dir and the app are gone afterwards. Also the choice of the
task's display and the Desktop it gets (the one function that tells them apart)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from jarvis.cli import build_parser
from jarvis.config import Settings
from jarvis.desktop.backend import BackendError, keys_display, open_desktop, task_display
from jarvis.desktop.desktop import Desktop
from jarvis.desktop.wlroots.desktop import WlrootsDesktop
from jarvis.desktop.wlroots.session import WaylandDisplay, swaymsg
from jarvis.desktop.x11 import XDisplay
from jarvis.preflight import display_problem
from jarvis.safety.wayland_sandbox import sandboxed_wayland
from tests.agent_harness import TEST_KEY
from tests.fake_model import FakeModel, RecordedRequest, Reply, call
from tests.wayland import needs_sway, start_sway

ROOT = Path(__file__).resolve().parent.parent
TEXT = "yz@#/-{} ä€ß Привет 漢字 😀"
APP_ID = "jarvis-note"
JARVIS_RUN = (sys.executable, "-m", "jarvis", "run")


def test_the_sandbox_flag_takes_an_optional_kind() -> None:
    parser = build_parser()
    assert parser.parse_args(["run", "t"]).sandbox is None
    assert parser.parse_args(["run", "t", "--sandbox"]).sandbox == "x11"
    assert parser.parse_args(["run", "t", "--sandbox", "wayland"]).sandbox == "wayland"
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "t", "--sandbox", "mir"])


def test_the_task_display_follows_the_backend() -> None:
    person = XDisplay(":7")
    assert task_display("auto", {"DISPLAY": ":7"}, person) is person
    env = {"WAYLAND_DISPLAY": "wayland-1", "XDG_RUNTIME_DIR": "/run/u", "SWAYSOCK": "/s"}
    assert task_display("auto", env, person) == WaylandDisplay("/run/u/wayland-1", "/s")
    assert task_display("x11", env, person) is person
    with pytest.raises(BackendError, match="WAYLAND_DISPLAY is not set"):
        task_display("wlroots", {"DISPLAY": ":7"}, person)
    with pytest.raises(BackendError, match="DBUS_SESSION_BUS_ADDRESS is not set"):
        task_display("auto", {"WAYLAND_DISPLAY": "w", "XDG_CURRENT_DESKTOP": "GNOME"}, person)
    assert keys_display(WaylandDisplay("/run/u/wayland-1"), person) is person
    assert keys_display(XDisplay(":9"), person) == XDisplay(":9")


def test_no_compositor_at_the_socket_is_one_line(tmp_path: Path) -> None:
    problem = display_problem(WaylandDisplay(str(tmp_path / "wayland-9")))
    assert problem is not None and "cannot connect to the compositor" in problem
    assert "\n" not in problem


INSTANCE = ("where", "home", "screen", "input", "settler", "stop", "hold", "windows", "elements")


@needs_sway
def test_open_desktop_opens_the_wlroots_one_with_the_desktop_interface() -> None:
    """open_desktop hands a WlrootsDesktop on as a Desktop: every public name the X11
    Desktop's class offers and every attribute it sets, the wlroots one has too."""
    with start_sway() as sway:
        assert sway.where is not None
        assert display_problem(sway.where) is None
        desktop = open_desktop(Settings(), sway.where)
        try:
            assert desktop.backend == "wlroots" and isinstance(desktop, WlrootsDesktop)
            public = {n for n in dir(Desktop) if not n.startswith("_")} | set(INSTANCE)
            assert {n for n in public if not hasattr(desktop, n)} == set()
            assert desktop.screen.capture().screen_size.width == 1280
        finally:
            desktop.close()


def _sway_socket(stderr: Path) -> WaylandDisplay | None:
    """The private sway the run said it started (its socket, and its IPC socket beside)."""
    said = stderr.read_text() if stderr.exists() else ""
    marker = "running on the private Wayland desktop "
    if marker not in said:
        return None
    socket = said.split(marker)[1].split()[0]
    ipc = sorted(Path(socket).parent.glob("sway-ipc.*.sock"))
    return WaylandDisplay(socket, str(ipc[0])) if ipc else None


def _focused_app(where: WaylandDisplay) -> str | None:
    def walk(node: dict[str, object]) -> Iterator[dict[str, object]]:
        yield node
        for child in [*node.get("nodes", []), *node.get("floating_nodes", [])]:  # type: ignore[misc]
            yield from walk(child)

    for node in walk(swaymsg(where, "-t", "get_tree")):  # type: ignore[arg-type]
        if node.get("focused") and node.get("app_id"):
            return str(node["app_id"])
    return None


def _wait_for_app(stderr: Path) -> None:
    """Until the run's sway shows the note window with the focus (the map and the focus
    are the compositor's own signals)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        where = _sway_socket(stderr)
        if where is not None and _focused_app(where) == APP_ID:
            return
        time.sleep(0.05)
    raise AssertionError(f"the note window never had the focus: {stderr.read_text()[-800:]}")


def _leftovers(note: Path) -> list[str]:
    """Processes of the run's sway (its folder, under this worker's temporary folder) or
    of its app (the note's path in its command): another test's sway is not counted."""
    sway = os.path.join(tempfile.gettempdir(), "jarvis-sway-").encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            line = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if sway in line or str(note).encode() in line:
            found.append(line.decode(errors="replace"))
    return found


@needs_sway
@pytest.mark.slow
def test_run_sandbox_wayland_types_into_foot_end_to_end(
    fake_model: FakeModel, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    (data / "config").mkdir(parents=True)
    shared = Path(tempfile.mkdtemp(prefix="jarvis-wl-note-"))  # the app's user writes here
    shared.chmod(0o777)
    out = shared / "note.txt"
    app = ["foot", "-a", APP_ID, "sh", "-c", f"stty -echo; cat > {out}"]
    sandbox = {"size": "1024x640", "apps": [app]}
    settings = {"safety": {"sandbox": sandbox}, "settle_ceiling_ms": 300}
    (data / "config" / "settings.json").write_text(json.dumps(settings))
    stderr = tmp_path / "stderr.txt"

    def act(request: RecordedRequest) -> Reply:
        _wait_for_app(stderr)
        return Reply(tool_calls=[call("click", x=512, y=320), call("type", text=TEXT + "\n")])

    fake_model.script(
        act,
        Reply(tool_calls=[call("finished", summary="typed the note")]),
        Reply(text='{"done": true, "reason": "the note holds the text"}'),
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "PYTHONPATH": str(ROOT),
        "ANTHROPIC_API_KEY": TEST_KEY,
        "ANTHROPIC_BASE_URL": fake_model.anthropic_base_url,
        "JARVIS_MAX_RETRIES": "0",
        "JARVIS_LONG_TERM_MEMORY": "false",
        "ANONYMIZED_TELEMETRY": "False",
        "COLUMNS": "200",
        "TMPDIR": tempfile.gettempdir(),  # this worker's (tests/conftest.py)
    }  # no DISPLAY, no WAYLAND_DISPLAY: the run needs no display of the person's
    try:
        with stderr.open("w") as sink:
            proc = subprocess.run(
                [*JARVIS_RUN, "write the note", "--sandbox", "wayland", "--data-dir", str(data)],
                env=env,
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=sink,
                text=True,
                timeout=120,
                stdin=subprocess.DEVNULL,
            )
        said = proc.stdout + stderr.read_text()
        assert TEST_KEY not in said
        assert proc.returncode == 0, said[-3000:]
        assert out.read_bytes() == (TEXT + "\n").encode()
        crops = list(data.rglob("steps/0001/target.png"))  # cut through screencopy
        assert len(crops) == 1 and Image.open(crops[0]).size[0] > 0
        assert list(data.rglob("steps/0001/before.jpg"))
        assert _leftovers(out) == []  # sway, its app and its runtime dir's users are gone
        socket = _sway_socket(stderr)
        assert socket is None or not Path(socket.socket).exists()
    finally:
        out.unlink(missing_ok=True)
        shared.rmdir()


def test_a_private_sway_that_cannot_start_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no sway on this PATH
    ran: list[WaylandDisplay] = []

    def body(where: WaylandDisplay) -> int:
        ran.append(where)
        return 0

    assert sandboxed_wayland(Settings(), body) == 1
    assert ran == []
    err = capsys.readouterr().err
    assert err == "jarvis: the private Wayland desktop: sway is not installed (apt install sway)\n"
