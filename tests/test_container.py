"""The Jarvis desktop image (``Containerfile``) built with Podman and run in serve mode,
with the scripted model on the host's loopback (``--network host``): a task drives the
terminal inside to write a file, seen from outside with ``podman exec``, and long-term
memory (on, as by default) keeps the task's history in its store; the API answers
with the token only; the healthcheck (``jarvis doctor``) passes; x11vnc listens on
loopback only and the takeover view works through the API's relay; ``podman stop``
stops every process through supervisord within 10 s. One container serves the module."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from tests.agent_harness import TEST_KEY
from tests.api_harness import routed
from tests.container_image import Podman, free_display, jarvis_image, wait_for
from tests.fake_model import FakeModel, RecordedRequest, Reply, call
from tests.redis_server import free_port
from tests.vnc_client import open_session

__all__ = ["jarvis_image"]

# one worker builds the image and runs the containers (tests/container_image.py)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("podman")]

SCREEN = (1024, 768)
WRITTEN = "/home/jarvis/written-by-jarvis.txt"
TASK = "In the terminal, write 'hello from the box' into ~/written-by-jarvis.txt"
DATA = "/home/jarvis/data"
# the long-term memory's rows, read from its chromadb store (`jarvis memory list` would
# wait for the store's owner lock, which `jarvis serve` holds)
MEMORIES = f"""
import sqlite3
try:
    db = sqlite3.connect('file:{DATA}/memory/long_term/vector/chroma.sqlite3?mode=ro', uri=True)
    rows = db.execute(
        "SELECT kind.string_value, tasks.string_value FROM embedding_metadata kind"
        " JOIN embedding_metadata tasks ON kind.id = tasks.id"
        " WHERE kind.key = 'type' AND tasks.key = 'task_ids'"
    ).fetchall()
except sqlite3.Error:  # not made yet
    rows = []
for kind, tasks in rows:
    print(kind, tasks)
"""


@dataclass
class Desktop:
    podman: Podman
    name: str
    port: int
    model: FakeModel

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def token(self) -> str:
        return self.podman.exec(self.name, "cat", f"{DATA}/config/api_token").strip()


def scripted() -> object:
    """First agent step: type the command into the terminal (the focused, full-screen
    xterm) and press Enter; the next one finishes."""
    steps: list[RecordedRequest] = []

    def step(request: RecordedRequest) -> Reply:
        steps.append(request)
        if len(steps) > 1:
            return Reply(text="Thought: written.", tool_calls=[call("finished", summary="wrote")])
        command = f"echo 'hello from the box' > {WRITTEN}"
        return Reply(
            text="Thought: type the command in the terminal.",
            tool_calls=[call("type", text=command), call("press_key", key="enter")],
        )

    return routed(step)


@pytest.fixture(scope="module")
def desktop(jarvis_image: Podman) -> Iterator[Desktop]:
    model = FakeModel().start()
    model.set_default(scripted())  # type: ignore[arg-type]
    name = f"jarvis-test-serve-{secrets.token_hex(4)}"
    port = free_port()
    env = {
        "ANTHROPIC_API_KEY": TEST_KEY,
        "ANTHROPIC_BASE_URL": model.anthropic_base_url,
        "DISPLAY": free_display(),
        "JARVIS_SCREEN": f"{SCREEN[0]}x{SCREEN[1]}",
        # host networking shares the host's loopback: the API stays on it, on a free port
        "JARVIS_API__HTTP": f"127.0.0.1:{port}",
        "JARVIS_MAX_RETRIES": "0",
        "JARVIS_SETTLE_CEILING_MS": "500",
    }
    args = ["run", "--detach", "--name", name, "--network", "host"]
    for key, value in env.items():
        args += ["--env", f"{key}={value}"]
    jarvis_image.run(*args, jarvis_image.image, "serve", "--poll", "0.5")
    made = Desktop(jarvis_image, name, port, model)
    try:
        wait_for(lambda: "one-time login" in jarvis_image.logs(name), 120, "serve's API")
        yield made
    finally:
        print(jarvis_image.logs(name)[-4000:])
        jarvis_image.remove(name)
        model.stop()


def test_a_task_drives_the_terminal_inside_and_the_api_needs_the_token(
    desktop: Desktop,
) -> None:
    token = desktop.token()
    with httpx.Client(base_url=desktop.base, timeout=30) as http:
        refused = http.get("/api/health")
        assert refused.status_code == 401
        wrong = http.get("/api/health", headers={"authorization": "Bearer " + "x" * 43})
        assert wrong.status_code == 401
        auth = {"authorization": f"Bearer {token}"}
        health = http.get("/api/health", headers=auth)
        assert health.status_code == 200, health.text
        posted = http.post("/api/messages", json={"text": TASK, "channel": "api"}, headers=auth)
        assert posted.status_code == 201, posted.text

        def finished() -> bool:
            task = http.get("/api/tasks/T001", headers=auth)
            return task.status_code == 200 and task.json()["todo"]["status"] == "completed"

        wait_for(finished, 180, "the task")
    written = desktop.podman.exec(desktop.name, "cat", WRITTEN)
    assert written == "hello from the box\n"
    owner = desktop.podman.exec(desktop.name, "stat", "-c", "%U", WRITTEN).strip()
    assert owner == "jarvis"  # not root

    def remembered() -> bool:
        rows = desktop.podman.exec(desktop.name, "python3", "-c", MEMORIES).splitlines()
        return any(row.startswith("history ") and '"T001"' in row for row in rows)

    wait_for(remembered, 30, "the task's history in long-term memory")
    logs = desktop.podman.logs(desktop.name)
    assert token not in logs and TEST_KEY not in logs  # the login link's code is one-time


def test_the_healthcheck_runs_jarvis_doctor_and_passes(desktop: Desktop) -> None:
    checked = desktop.podman.run("healthcheck", "run", desktop.name, check=False, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    status = desktop.podman.run(
        "inspect", "--format", "{{.State.Health.Status}}", desktop.name
    ).stdout.strip()
    assert status == "healthy"


FIND_X11VNC = """
import os, pathlib
[pid] = [p.name for p in pathlib.Path('/proc').iterdir()
         if p.name.isdigit() and (p / 'comm').read_text().strip() == 'x11vnc']
inodes = {os.readlink(f)[8:-1] for f in pathlib.Path(f'/proc/{pid}/fd').iterdir()
          if os.readlink(f).startswith('socket:[')}
for table in ('/proc/net/tcp', '/proc/net/tcp6'):
    for line in pathlib.Path(table).read_text().splitlines()[1:]:
        f = line.split()
        if f[9] in inodes and f[3] == '0A':
            print(f[1])
"""


def test_x11vnc_listens_on_loopback_only_and_the_relay_shows_the_screen(
    desktop: Desktop,
) -> None:
    listening = desktop.podman.exec(desktop.name, "python3", "-c", FIND_X11VNC).split()
    assert listening, "x11vnc listens on nothing"
    assert all(address.startswith("0100007F:") for address in listening), listening
    url = desktop.base.replace("http://", "ws://") + "/api/vnc/main"
    token = desktop.token()

    async def view() -> tuple[int, int, int]:
        with pytest.raises(Exception, match="403"):  # no token: refused
            await open_session(url)
        session = await open_session(url, additional_headers={"authorization": f"Bearer {token}"})
        try:
            return session.width, session.height, await session.frame()
        finally:
            await session.ws.close()

    width, height, got = asyncio.run(view())
    assert (width, height) == SCREEN
    assert got == width * height * 4  # a whole frame of the container's screen


PROCESSES = """
import pathlib
for p in pathlib.Path('/proc').iterdir():
    try:
        cmd = (p / 'cmdline').read_bytes().split(b'\\0')
        name = (p / 'comm').read_text().strip()
    except OSError:  # not a process, or gone meanwhile
        continue
    print('jarvis' if any(c.endswith(b'/jarvis') for c in cmd[:2]) else name)
"""


def test_podman_stop_ends_every_process_through_supervisord_within_10_s(
    desktop: Desktop,
) -> None:
    before = desktop.podman.exec(desktop.name, "python3", "-c", PROCESSES).split()
    for program in ("supervisord", "Xvfb", "matchbox-window", "xterm", "jarvis", "x11vnc"):
        assert program in before, before
    started = time.monotonic()
    desktop.podman.run("stop", "--time", "10", desktop.name, timeout=60)
    took = time.monotonic() - started
    state = desktop.podman.run(
        "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", desktop.name
    ).stdout.split()
    logs = desktop.podman.logs(desktop.name)
    print(f"podman stop took {took:.1f} s; running before: {before}")
    assert took < 10, logs[-3000:]
    assert state == ["exited", "0"], logs[-3000:]  # supervisord ended itself, not SIGKILL
    for program in ("jarvis", "terminal", "windowmanager", "display"):
        assert f"stopped: {program}" in logs
    assert "SIGKILL" not in logs
