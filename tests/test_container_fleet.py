"""Two worker containers of the Jarvis desktop image (``jarvis worker`` under supervisord)
and a coordinator (``jarvis serve --fleet``, in the test's loop) on the host's
redis-server; only the model is scripted. Two tasks spread over both containers; one
container is killed mid-task (``podman kill``) and its task is finished once, by the
other."""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.api_harness import NEW_TASK, is_router, serving_api, until
from tests.container_image import Podman, free_display, jarvis_image
from tests.fake_model import FakeModel, RecordedRequest, Reply, fake_model_fixture
from tests.redis_server import RedisServer, redis_server
from tests.test_fleet_serve import coordinator_settings, todo
from tests.test_fleet_worker import SUMMARY, done, other

__all__ = ["fake_model_fixture", "jarvis_image", "redis_server"]

# one worker builds the image and runs the containers (tests/container_image.py)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.usefixtures("xserver"),
    pytest.mark.xdist_group("podman"),
]

LEASE_S = 3


class Workers:
    """Worker containers; removed at the end."""

    def __init__(self, podman: Podman, model: FakeModel, url: str) -> None:
        self.podman, self.model, self.url = podman, model, url
        self.names: dict[str, str] = {}  # worker name -> container name
        self.displays: list[str] = []

    def start(self, worker: str) -> None:
        container = f"jarvis-test-{worker}-{secrets.token_hex(4)}"
        display = free_display(tuple(self.displays))
        self.displays.append(display)
        env = {
            "ANTHROPIC_API_KEY": "sk-test-container-0123456789",
            "ANTHROPIC_BASE_URL": self.model.anthropic_base_url,
            "DISPLAY": display,
            "JARVIS_SCREEN": "800x600",
            "JARVIS_REDIS_URL": self.url,  # the password too: from the environment only
            "JARVIS_WORKER_NAME": worker,
            "JARVIS_MAX_RETRIES": "0",
            "JARVIS_LONG_TERM_MEMORY": "false",
            "JARVIS_SETTLE_CEILING_MS": "300",
        }
        args = ["run", "--detach", "--name", container, "--network", "host"]
        for key, value in env.items():
            args += ["--env", f"{key}={value}"]
        self.podman.run(*args, self.podman.image, "worker", "--lease", str(LEASE_S))
        self.names[worker] = container

    def logs(self, worker: str) -> str:
        return self.podman.logs(self.names[worker])

    def remove(self) -> None:
        for worker, container in self.names.items():
            print(f"--- worker container {worker}\n{self.podman.logs(container)[-3000:]}")
            self.podman.remove(container)


@pytest.fixture
def workers(
    jarvis_image: Podman, fake_model: FakeModel, redis_server: RedisServer
) -> Iterator[Workers]:
    made = Workers(jarvis_image, fake_model, redis_server.url)
    yield made
    made.remove()


async def test_tasks_spread_over_two_worker_containers_and_a_killed_ones_task_ends_once(
    workers: Workers,
    fake_model: FakeModel,
    redis_server: RedisServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()

    def answer(request: RecordedRequest) -> Reply:
        if is_router(request):
            return NEW_TASK
        if (reply := other(request)) is not None:
            return reply
        release.wait(120)  # both tasks are held mid-task until the test lets them go
        return done()

    fake_model.set_default(answer)
    settings = coordinator_settings(tmp_path, fake_model, monkeypatch)
    try:
        async with (
            serving_api(settings, fleet_url=redis_server.url) as api,
            api.client() as http,
        ):
            for worker in ("w1", "w2"):
                workers.start(worker)
            for text in ("first task: click and move", "second task: click and move"):
                posted = await http.post("/api/messages", json={"text": text, "channel": "api"})
                assert posted.status_code == 201, posted.text
            listed: list[dict[str, Any]] = []
            async with asyncio.timeout(180):  # each container runs one of the two
                while sorted(w["task"] or "" for w in listed) != ["T001", "T002"]:
                    await asyncio.sleep(0.3)
                    listed = (await http.get("/api/workers")).json()["workers"]
            running = {w["task"]: w["name"] for w in listed}
            assert sorted(running.values()) == ["w1", "w2"]  # spread over both
            dead, survivor = running["T001"], running["T002"]
            workers.podman.run("kill", workers.names[dead], timeout=60)  # mid-task
            release.set()
            for task_id in ("T001", "T002"):
                await until(
                    lambda t=task_id: (d := todo(api, t)) is not None and d.status == "completed",
                    120,
                )
            journal = api.journal("T001")
    finally:
        release.set()
    assert todo(api, "T001").summary == SUMMARY and todo(api, "T002").summary == SUMMARY
    starts = [line for line in journal if line["kind"] == "task_started"]
    assert [line["run"] for line in starts] == [1, 2]  # the killed attempt and the retry
    finished = [line for line in journal if line["kind"] == "task_finished"]
    assert [line["status"] for line in finished] == ["completed"]  # finished once
    state = workers.podman.run(
        "inspect", "--format", "{{.State.Status}}", workers.names[dead]
    ).stdout.strip()
    assert state == "exited"
    assert survivor != dead
    for worker in ("w1", "w2"):
        assert redis_server.password not in workers.logs(worker)
