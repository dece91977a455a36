"""`jarvis tui` in a real terminal (tmux), with no daemon running: it starts the gateway
as its own child, takes a task typed at the prompt, shows it run (read back with
``capture-pane``), and on ctrl+q quits and stops the gateway it started."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.api_harness import NEW_TASK, VERIFIED, finish, is_router, is_verify
from tests.fake_model import FakeModel, RecordedRequest, Reply, call

pytestmark = [pytest.mark.usefixtures("xserver"), pytest.mark.slow]
JARVIS = str(Path(sys.executable).with_name("jarvis"))


class Tmux:
    def __init__(self, socket: str) -> None:
        self.socket = socket

    def run(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            timeout=20,
        )
        return done.stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "tui")

    def wait_for(self, check: Callable[[str], bool], timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if check(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"not on screen within {timeout} s:\n{text}")
            time.sleep(0.1)


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    if shutil.which("tmux") is None:
        pytest.fail("tmux is not installed (make system installs it)")
    session = Tmux(f"jarvis-test-{os.getpid()}-{tmp_path.name}")
    yield session
    session.run("kill-server")


def model(request: RecordedRequest) -> Reply:
    if is_router(request):
        return NEW_TASK
    if is_verify(request):
        return VERIFIED
    if "short, general procedures" in request.all_text():
        return Reply(text="1. Do it.")
    if "moved the pointer" in request.all_text() or len(request.messages) > 2:
        return finish("pointer moved")
    return Reply(text="Moving the pointer.", tool_calls=[call("mouse_move", x=30, y=30)])


def test_jarvis_tui_in_tmux_starts_its_gateway_runs_a_typed_task_and_stops_it(
    tmux: Tmux, tmp_path: Path, fake_model: FakeModel
) -> None:
    fake_model.set_default(model)
    data = tmp_path / "data"
    (data / "config").mkdir(parents=True)
    settings = {
        "max_retries": 0,
        "settle_ceiling_ms": 200,
        "long_term_memory": False,
        "tui": {"thumbnail": "halfblocks"},
    }
    (data / "config" / "settings.json").write_text(json.dumps(settings))
    env = {
        "DISPLAY": os.environ["DISPLAY"],
        "XAUTHORITY": os.environ["XAUTHORITY"],
        "ANTHROPIC_API_KEY": "sk-test-tmux-0123456789",
        "ANTHROPIC_BASE_URL": fake_model.anthropic_base_url,
        "HF_HUB_OFFLINE": "1",
        "ANONYMIZED_TELEMETRY": "False",
    }
    exit_file = tmp_path / "exit"
    command = f"{JARVIS} tui --data-dir {data}; echo $? > {exit_file}; sleep 60"
    env_args = [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
    tmux.run("new-session", "-d", "-s", "tui", "-x", "120", "-y", "36", *env_args, command)

    # the status line can be drawn a frame before the footer: wait for the whole screen
    screen = tmux.wait_for(lambda s: "own gateway pid" in s and "live" in s and "Quit" in s, 90)
    assert "Cancel task" in screen  # the footer's keys
    lock = json.loads((data / "serve.lock").read_text())
    gateway_pid = int(lock["pid"])

    tmux.run("send-keys", "-t", "tui", "-l", "move the pointer a little")
    tmux.run("send-keys", "-t", "tui", "Enter")
    screen = tmux.wait_for(lambda s: "T001" in s and "move the pointer a little" in s, 60)
    screen = tmux.wait_for(lambda s: "completed after" in s, 90)
    assert "mouse_move(x=30, y=30)" in screen
    assert "✓ verified" in screen

    tmux.run("send-keys", "-t", "tui", "C-q")
    deadline = time.monotonic() + 40
    while not exit_file.exists():
        assert time.monotonic() < deadline, tmux.screen()
        time.sleep(0.1)
    assert exit_file.read_text().strip() == "0"
    with pytest.raises(ProcessLookupError):  # the gateway it started is gone
        os.kill(gateway_pid, 0)
    assert (data / "serve.lock").read_text().strip() == ""  # released cleanly


def waiting(request: RecordedRequest) -> Reply:
    if is_router(request):
        return NEW_TASK
    return Reply(text="Waiting.", tool_calls=[call("wait", ms=10000)])


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_closing_the_terminal_ends_the_tuis_own_gateway_and_puts_its_task_back(
    tmux: Tmux, tmp_path: Path, fake_model: FakeModel
) -> None:
    """Issue 41 point 6: tmux's kill-session (SIGHUP, as a closed terminal window) while a
    task runs: the gateway the TUI started stops within 5 s, as a stop does (the task is
    pending again), and neither process is left running."""
    fake_model.set_default(waiting)
    data = tmp_path / "data"
    (data / "config").mkdir(parents=True)
    settings = {"max_retries": 0, "settle_ceiling_ms": 200, "long_term_memory": False}
    (data / "config" / "settings.json").write_text(json.dumps(settings))
    env = {
        "DISPLAY": os.environ["DISPLAY"],
        "XAUTHORITY": os.environ["XAUTHORITY"],
        "ANTHROPIC_API_KEY": "sk-test-tmux-0123456789",
        "ANTHROPIC_BASE_URL": fake_model.anthropic_base_url,
        "HF_HUB_OFFLINE": "1",
        "ANONYMIZED_TELEMETRY": "False",
    }
    env_args = [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
    command = f"exec {JARVIS} tui --data-dir {data}"
    tmux.run("new-session", "-d", "-s", "tui", "-x", "120", "-y", "36", *env_args, command)
    tmux.wait_for(lambda s: "own gateway pid" in s and "live" in s, 90)
    gateway_pid = int(json.loads((data / "serve.lock").read_text())["pid"])
    tui_pid = int(tmux.run("display-message", "-p", "-t", "tui", "#{pane_pid}").strip())
    tmux.run("send-keys", "-t", "tui", "-l", "wait for the report")
    tmux.run("send-keys", "-t", "tui", "Enter")
    todos = data / "todos.md"
    deadline = time.monotonic() + 60
    while "in_progress" not in (todos.read_text() if todos.exists() else ""):
        assert time.monotonic() < deadline, tmux.screen()
        time.sleep(0.1)

    tmux.run("kill-session", "-t", "tui")
    closed = time.monotonic()
    while not gone(gateway_pid):
        assert time.monotonic() - closed < 5, "the TUI's gateway outlived its terminal"
        time.sleep(0.05)
    assert gone(tui_pid)
    text = todos.read_text()
    assert "in_progress" not in text and "pending" in text, text
    assert "stopped while running" in text
    assert (data / "serve.lock").read_text().strip() == ""  # released cleanly


def test_a_tui_whose_gateway_cannot_start_says_why(tmp_path: Path) -> None:
    """No model key: `jarvis tui` prints the gateway's own one-line reason, not only its
    exit code and a log to read."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    done = subprocess.run(
        [JARVIS, "tui", "--data-dir", str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    said = done.stderr.strip().splitlines()
    assert len(said) == 1 and "ANTHROPIC_API_KEY is not set" in said[0], done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_a_message_sent_in_tmux_is_on_screen_within_a_second_of_enter(
    tmux: Tmux, tmp_path: Path, fake_model: FakeModel
) -> None:
    """Issue 41 point 6: the real `jarvis tui` in a terminal shows the message it sent
    (``› TEXT · sending…`` / ``sent · routing…``) within 1 s of Enter, read back with
    capture-pane polled against a deadline; then the task it became."""
    fake_model.set_default(model)
    data = tmp_path / "data"
    (data / "config").mkdir(parents=True)
    settings = {"max_retries": 0, "settle_ceiling_ms": 200, "long_term_memory": False}
    (data / "config" / "settings.json").write_text(json.dumps(settings))
    env = {
        "DISPLAY": os.environ["DISPLAY"],
        "XAUTHORITY": os.environ["XAUTHORITY"],
        "ANTHROPIC_API_KEY": "sk-test-tmux-0123456789",
        "ANTHROPIC_BASE_URL": fake_model.anthropic_base_url,
        "HF_HUB_OFFLINE": "1",
        "ANONYMIZED_TELEMETRY": "False",
    }
    env_args = [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
    command = f"exec {JARVIS} tui --data-dir {data}"
    # wide enough that the note's state is not cut off beside the screen panel
    tmux.run("new-session", "-d", "-s", "tui", "-x", "160", "-y", "36", *env_args, command)
    tmux.wait_for(lambda s: "own gateway pid" in s and "live" in s and "Quit" in s, 90)
    gateway_pid = int(json.loads((data / "serve.lock").read_text())["pid"])
    text = "move it"
    tmux.run("send-keys", "-t", "tui", "-l", text)
    typed = tmux.wait_for(lambda s: text in s, 10)  # in the prompt, not sent yet
    assert f"› {text} ·" not in typed

    tmux.run("send-keys", "-t", "tui", "Enter")
    pressed = time.monotonic()
    while True:
        screen = tmux.screen()
        notes = [line for line in screen.splitlines() if f"› {text} · " in line]
        if notes and any(word in notes[0] for word in ("sending", "sent", "became T001")):
            break
        assert time.monotonic() - pressed < 1.0, f"no echo within 1 s of Enter:\n{screen}"
    tmux.wait_for(lambda s: f"› {text} · became T001" in s, 60)
    tmux.run("kill-session", "-t", "tui")  # the TUI and the gateway it started end
    closed = time.monotonic()
    while not gone(gateway_pid):
        assert time.monotonic() - closed < 10, "the TUI's gateway outlived its terminal"
        time.sleep(0.05)
