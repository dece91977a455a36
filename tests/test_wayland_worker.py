"""`jarvis worker --sandbox wayland`: a real worker process on a private headless sway (run
as the unprivileged user, foot on it), a real redis-server, the coordinator's API in this
process; only the model is scripted. The worker runs a task that types into foot (its
file holds the text); while it runs, the worker's screen is watched from the coordinator
through Redis: the RFB handshake through ``WS /api/vnc/worker/NAME`` (the worker's wayvnc,
tunnelled) gives the sway output's size and a picture, ``GET /api/screen/live`` the
worker's pictures sent through Redis. SIGTERM ends the worker with its sway and wayvnc."""

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
from pathlib import Path

import pytest
from PIL import Image

from tests.api_harness import serving_api
from tests.fake_model import FakeModel, RecordedRequest, Reply, call, fake_model_fixture
from tests.redis_server import RedisServer, redis_server
from tests.test_fleet_screens import worker_url
from tests.test_fleet_serve import coordinator_settings, until_status
from tests.test_fleet_worker import other, without_password
from tests.test_serve import NEW_TASK, is_router
from tests.test_wayland_run import _focused_app, _sway_socket
from tests.test_wayland_serve import SIZE, _env, _left, _until, _windows
from tests.vnc_client import open_session
from tests.wayland import needs_sway

__all__ = ["fake_model_fixture", "redis_server"]

ROOT = Path(__file__).resolve().parent.parent
NOTE = "jarvis-note"

pytestmark = [
    pytest.mark.usefixtures("xserver"),
    needs_sway,
    pytest.mark.slow,
    pytest.mark.skipif(not any(Path(p, "wayvnc").exists() for p in os.environ["PATH"].split(":")),
                       reason="wayvnc is needed (make system)"),
]  # fmt: skip


def _worker(
    tmp_path: Path, fake_model: FakeModel, url: str, note: Path, err: Path
) -> subprocess.Popen[bytes]:
    data = tmp_path / "w1"
    (data / "config").mkdir(parents=True)
    app = ["foot", "-a", NOTE, "sh", "-c", f"stty -echo; cat > {note}"]
    sandbox = {"size": f"{SIZE[0]}x{SIZE[1]}", "apps": [app]}
    settings = {"safety": {"sandbox": sandbox}, "settle_ceiling_ms": 300}
    (data / "config" / "settings.json").write_text(json.dumps(settings))
    env = _env(fake_model, tmp_path)
    bare, env["JARVIS_REDIS_PASSWORD"] = without_password(url)  # not in argv
    args = ["worker", "--redis", bare, "--sandbox", "wayland", "--name", "w1"]
    with err.open("w") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "jarvis", *args, "--lease", "10", "--data-dir", str(data)],
            env=env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=sink,
        )  # fmt: skip


async def test_worker_sandbox_wayland_runs_a_task_and_is_watched_through_redis(
    fake_model: FakeModel,
    redis_server: RedisServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shared = Path(tempfile.mkdtemp(prefix="jarvis-wl-note-"))  # the app's user writes here
    shared.chmod(0o777)
    note = shared / "note.txt"
    err = tmp_path / "worker.err"

    def typed() -> Reply:
        where = _sway_socket(err)
        assert where is not None, err.read_text()[-2000:]
        _until(lambda: _focused_app(where) == NOTE, "the note window")
        x, y = _windows(where)[NOTE]
        return Reply(tool_calls=[call("click", x=x, y=y), call("type", text="worker\n")])

    steps: list[RecordedRequest] = []
    checked = threading.Event()

    def answer(request: RecordedRequest) -> Reply:
        if is_router(request):
            return NEW_TASK
        if (known := other(request)) is not None:
            return known
        steps.append(request)
        if len(steps) == 1:
            return typed()
        assert checked.wait(90), "the test never looked"  # the task runs while it looks
        return Reply(tool_calls=[call("finished", summary="typed it")])

    fake_model.set_default(answer)
    settings = coordinator_settings(tmp_path, fake_model, monkeypatch)
    worker = _worker(tmp_path, fake_model, redis_server.url, note, err)
    try:
        async with serving_api(settings, fleet_url=redis_server.url) as api, api.client() as http:
            posted = await http.post("/api/messages", json={"text": "write it", "channel": "api"})
            assert posted.status_code == 201, posted.text
            await asyncio.to_thread(
                _until, lambda: note.exists() and note.read_text() == "worker\n", "typing"
            )
            view = await open_session(worker_url(api, "w1"), additional_headers=api.auth)
            assert (view.width, view.height) == SIZE  # the worker's sway output
            assert await view.frame() == SIZE[0] * SIZE[1] * 4
            await view.ws.close()
            live = await http.get("/api/screen/live", params={"task_id": "T001"})
            assert live.status_code == 200, live.text
            assert live.headers["x-jarvis-screen"] == "live"
            width, height = Image.open(io.BytesIO(live.content)).size
            assert width / height == pytest.approx(SIZE[0] / SIZE[1], rel=0.02)
            checked.set()
            ended = await until_status(api, "completed")
        assert ended.summary == "typed it"
        worker.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(worker.wait, 30) == 0, err.read_text()[-2000:]
        assert _left(err, note) == []  # its sway, apps and wayvnc are gone
    finally:
        checked.set()
        if worker.poll() is None:
            worker.terminate()
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
        note.unlink(missing_ok=True)
        shared.rmdir()
