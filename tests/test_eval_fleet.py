"""`jarvis eval SUITE --fleet URL`: a real redis-server on loopback and two
`jarvis worker --eval` processes, each on its own Xvfb; each task is set up, run and
checked on a worker's desktop, every run's journal and report land in the eval's data
dir, and the summary is the serial run's."""

from __future__ import annotations

import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.eval_workers import eval_workers
from tests.fake_model import FakeModel, fake_model_fixture
from tests.redis_server import RedisServer, redis_server
from tests.test_eval_starter import run_eval, wrong_suite
from tests.test_eval_workers import same_fields
from tests.test_serve import serve_env
from tests.xserver import start_xvfb

__all__ = ["fake_model_fixture", "redis_server"]
pytestmark = pytest.mark.slow


@pytest.fixture
def workers(tmp_path: Path, fake_model: FakeModel, redis_server: RedisServer):  # type: ignore[no-untyped-def]
    with ExitStack() as stack:
        envs = {}
        for name in ("desk-1", "desk-2"):
            screen = stack.enter_context(start_xvfb(1280, 800))
            envs[name] = serve_env(screen, fake_model) | redis_server.env  # not in argv
        with eval_workers(redis_server, tmp_path, envs):
            yield redis_server


def test_the_fleet_runs_the_suite_with_the_serial_summary(
    tmp_path: Path, workers: RedisServer
) -> None:
    suite = wrong_suite(tmp_path / "wrong")
    serial_code, serial = run_eval(suite, tmp_path / "serial", "--provider", "oracle")
    extra = ("--provider", "oracle", "--fleet", workers.bare_url)
    code, fleet = run_eval(suite, tmp_path / "fleet", *extra, env=workers.env)
    assert serial_code == code == 1
    assert same_fields(fleet) == same_fields(serial)
    for run in fleet["runs"]:
        report = Path(run["report"])
        assert report.is_relative_to(tmp_path / "fleet") and report.is_file()
        assert (report.parent / "steps" / "0001" / "before.jpg").is_file()


def test_a_fleet_that_cannot_be_reached_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "jarvis",
            "eval",
            "starter",
            "--provider",
            "oracle",
            "--fleet",
            "redis://127.0.0.1:9/0",
            "--data-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jarvis: the fleet at redis://127.0.0.1:9/0")
