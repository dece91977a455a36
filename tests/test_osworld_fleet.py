"""`jarvis eval OSWORLD_TASKS --fleet URL`: a real redis-server on loopback and two
`jarvis worker --eval` processes, each on its own 1920x1080 desktop with a window manager
and with its own download cache (``JARVIS_OSWORLD_CACHE``). Starter tasks played by the
oracle (the os one right, the calc one wrong) and two tasks that download a file score on
the fleet what they score in a serial run; a file the worker's cache lacks is not run
("missing file URL") even when the eval's own cache has it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
import yaml

from jarvis.eval.osworld.cache import cache_key
from jarvis.eval.suite import SHIPPED
from jarvis.safety.sandbox import Sandbox
from jarvis.safety.settings import SandboxSettings
from tests.eval_workers import eval_workers
from tests.fake_model import FakeModel, fake_model_fixture
from tests.redis_server import RedisServer, redis_server
from tests.test_serve import serve_env

__all__ = ["fake_model_fixture", "redis_server"]
pytestmark = pytest.mark.slow

STARTER = SHIPPED / "osworld_starter" / "examples"
HERE_URL = "https://example.org/jarvis-fleet/here.txt"
GONE_URL = "https://example.org/jarvis-fleet/gone.txt"
BODY = "from the worker's cache\n"
NOTHING_TO_DO = {"right": [[{"finished": {"summary": "the file is there"}}]]}


def _download_task(task_id: str, url: str) -> dict:
    return {
        "id": task_id,
        "snapshot": "os",
        "instruction": "Look at notes.txt on the Desktop; nothing needs changing.",
        "source": "written for this test",
        "config": [
            {
                "type": "download",
                "parameters": {"files": [{"url": url, "path": "/home/user/Desktop/notes.txt"}]},
            }
        ],
        "related_apps": ["os"],
        "evaluator": {
            "func": "exact_match",
            "result": {"type": "vm_command_line", "command": "cat /home/user/Desktop/notes.txt"},
            "expected": {"type": "rule", "rules": {"expected": BODY}},
        },
    }


def _tasks(folder: Path) -> Path:
    """The os starter task, the calc one under another id with its wrong solution as the
    one played, and two download tasks: one file in every cache, one in the eval's only."""
    (folder / "os").mkdir(parents=True)
    (folder / "libreoffice_calc").mkdir()
    for name in ("starter-os-archive.json", "starter-os-archive.oracle.yaml"):
        shutil.copy(STARTER / "os" / name, folder / "os" / name)
    calc = json.loads((STARTER / "libreoffice_calc" / "starter-calc-total.json").read_text())
    calc["id"] = "calc-total-played-wrong"
    (folder / "libreoffice_calc" / "calc-total-played-wrong.json").write_text(json.dumps(calc))
    scripts = yaml.safe_load(
        (STARTER / "libreoffice_calc" / "starter-calc-total.oracle.yaml").read_text()
    )
    oracle = folder / "libreoffice_calc" / "calc-total-played-wrong.oracle.yaml"
    oracle.write_text(yaml.safe_dump({"right": scripts["wrong"]}))
    for task_id, url in (("download-here", HERE_URL), ("download-gone", GONE_URL)):
        (folder / "os" / f"{task_id}.json").write_text(json.dumps(_download_task(task_id, url)))
        (folder / "os" / f"{task_id}.oracle.yaml").write_text(yaml.safe_dump(NOTHING_TO_DO))
    return folder


def _cache(folder: Path, *urls: str) -> Path:
    folder.mkdir()
    for url in urls:
        (folder / cache_key(url)).write_text(BODY)
    return folder


@pytest.fixture
def workers(
    tmp_path: Path, fake_model: FakeModel, redis_server: RedisServer
) -> Iterator[RedisServer]:
    """Two `jarvis worker --eval` on desktops as OSWorld's tasks get them, each with a
    cache holding the file of download-here only."""
    with ExitStack() as stack:
        envs = {}
        for name in ("osw-1", "osw-2"):
            desk = stack.enter_context(Sandbox(SandboxSettings(size="1920x1080")))
            env = serve_env(desk, fake_model) | redis_server.env
            env["JARVIS_OSWORLD_CACHE"] = str(_cache(tmp_path / f"cache-{name}", HERE_URL))
            envs[name] = env
        with eval_workers(redis_server, tmp_path, envs):
            yield redis_server


def _eval(tasks: Path, data: Path, cache: Path, *extra: str, env: dict[str, str]) -> dict:
    base = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "XAUTHORITY")}
    base.pop("JARVIS_OSWORLD_CACHE", None)
    command = [sys.executable, "-m", "jarvis", "eval", str(tasks), "--data-dir", str(data)]
    command += ["--provider", "oracle", "--cache", str(cache), "--out", str(data / "out")]
    done = subprocess.run(
        [*command, *extra], env=base | env, capture_output=True, text=True, timeout=600
    )
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, (done.stdout, done.stderr)  # one JSON summary, nothing else
    assert done.returncode == 1  # not every task scored 1
    return json.loads(lines[0])


def _scores(summary: dict) -> dict[str, tuple[str, float | None, str]]:
    return {t["example_id"]: (t["status"], t["score"], t["not_run"]) for t in summary["tasks"]}


def test_the_fleet_scores_osworld_tasks_as_the_serial_run(
    tmp_path: Path, workers: RedisServer
) -> None:
    tasks = _tasks(tmp_path / "tasks")
    serial_cache = _cache(tmp_path / "cache-serial", HERE_URL)
    serial = _eval(tasks, tmp_path / "serial", serial_cache, env={})
    full_cache = _cache(tmp_path / "cache-eval", HERE_URL, GONE_URL)
    fleet = _eval(
        tasks, tmp_path / "fleet", full_cache, "--fleet", workers.bare_url, env=workers.env
    )
    expected = {
        "starter-os-archive": ("scored", 1.0, ""),
        "calc-total-played-wrong": ("scored", 0.0, ""),
        "download-here": ("scored", 1.0, ""),
        "download-gone": ("not run", None, f"missing file {GONE_URL}"),
    }
    assert _scores(serial) == expected
    assert _scores(fleet) == expected
    rates = ("runs", "scored", "not_run", "score_sum", "success_rate_scored", "success_rate_all")
    for domain, counts in serial["domains"].items():
        assert {k: fleet["domains"][domain][k] for k in rates} == {k: counts[k] for k in rates}
    rows = json.loads(Path(fleet["results"]).read_text())
    ran = [r for r in rows if r["status"] == "scored"]  # a run not set up has no report
    assert len(ran) == 3
    assert all(Path(r["report"]).is_relative_to(tmp_path / "fleet") for r in ran), ran
