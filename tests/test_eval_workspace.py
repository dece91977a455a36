"""One workspace for every executor (DESIGN.md section 8): a run's folder, environment,
setup, check and result, the same whether the run is here or on a fleet worker; and one
``run_suite`` whose executors give the results in the serial order. No display needed:
the setup and check commands here only touch files.

That the three executors (serial, ``--workers N``, ``--fleet URL``) write the same
summary for one suite is checked end to end in tests/test_eval_workers.py and
tests/test_eval_fleet.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from jarvis.eval.parallel import Threads
from jarvis.eval.remote import EVAL_CHANNEL, EVAL_KIND
from jarvis.eval.runner import Job, Plan, Serial, jobs, run_suite
from jarvis.eval.suite import Check, EvalTask, SetupStep
from jarvis.eval.workspace import RunResult, SetupFailed, Workspace
from jarvis.fleet.kinds import kind_of


def a_task(**fields: object) -> EvalTask:
    base: dict[str, object] = {
        "id": "t",
        "task": "nothing",
        "files": {"notes/in.txt": "hello"},
        "check": Check(command='test "$(cat "$WORK/out.txt")" = "hello from $SUITE"'),
    }
    return EvalTask.model_validate(base | fields)


def test_a_run_is_set_up_judged_and_removed(tmp_path: Path) -> None:
    copy = 'echo "hello from $SUITE" > "$WORK/out.txt"; echo "$HOME" > "$WORK/home"'
    task = a_task(setup=[SetupStep(run=copy)])
    result = RunResult(task="t", repeat=1, run_id="e-1")
    with Workspace(task, suite=tmp_path) as workspace:
        env = workspace.set_up({"DISPLAY": ":99"})
        assert env["DISPLAY"] == ":99" and env["SUITE"] == str(tmp_path.resolve())
        assert (workspace.work / "notes" / "in.txt").read_text() == "hello"
        home = (workspace.work / "home").read_text().strip()
        assert home == str(workspace.work / ".home")  # the apps' fresh home
        outcome = {"status": "finished", "summary": "done", "steps": 2, "cost_usd": 0.5}
        workspace.judge(result, outcome | {"usage": {"input_tokens": 7}}, "")
        top = workspace.top
    assert not top.exists()
    assert result.success and result.status == "finished" and result.steps == 2
    assert result.tokens.input_tokens == 7 and result.cost_usd == 0.5


def test_away_from_the_suite_its_files_come_along(tmp_path: Path) -> None:
    task = a_task(check=Check(command='test "$(cat "$SUITE/app.sh")" = "echo app"'))
    result = RunResult(task="t", repeat=1, run_id="e-1")
    with Workspace(task, suite_files={"app.sh": "echo app"}) as workspace:
        workspace.set_up({})
        workspace.judge(result, None, "the agent process died")
    assert result.success and result.reason.startswith("the agent process died; check:")


def test_a_failed_setup_stops_what_it_started(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    background = SetupStep(run=f"echo $$ > {pid_file}; exec sleep 60", background=True)
    task = a_task(setup=[background, SetupStep(run="sleep 0.2; exit 3")])
    with Workspace(task, suite=tmp_path) as workspace, pytest.raises(SetupFailed) as failed:
        workspace.set_up({})
    assert "exited 3" in str(failed.value)
    pid = int(pid_file.read_text())
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()


@dataclass(frozen=True)
class Pretend(Plan):
    """Runs nothing: each run's result names its job; later jobs end sooner."""

    def run(self, job: Job, stop: threading.Event | None = None) -> RunResult:
        task, n, run_id = job
        time.sleep(0.05 * (3 - n))
        return RunResult(task=task.id, repeat=n, run_id=run_id, success=n != 2)


def test_every_executor_gives_the_results_in_the_serial_order(tmp_path: Path) -> None:
    planned = jobs([a_task(id="a"), a_task(id="b")], repeat=2, stamp="S")
    plan = Pretend(tmp_path, tmp_path, "oracle", None)
    heard: dict[str, list[str]] = {"serial": [], "threads": []}
    serial = Serial()(planned, plan, lambda r: heard["serial"].append(r.run_id))
    threads = Threads(3)(planned, plan, lambda r: heard["threads"].append(r.run_id))
    order = ["e-S-a-1", "e-S-a-2", "e-S-b-1", "e-S-b-2"]
    assert [r.run_id for r in serial] == [r.run_id for r in threads] == order
    assert serial == threads
    assert sorted(heard["threads"]) == sorted(heard["serial"]) == order


def test_run_suite_plans_the_runs_for_its_executor(tmp_path: Path) -> None:
    seen: list[tuple[list[Job], Plan]] = []

    def executor(
        planned: list[Job], plan: Plan, done: Callable[[RunResult], None]
    ) -> list[RunResult]:
        seen.append((planned, plan))
        return []

    tasks = [a_task(id="a")]
    run_suite(
        tasks, tmp_path, tmp_path / "data", provider="oracle", model="m", repeat=2, stamp="S",
        delay_s=0.5, executor=executor,
    )  # fmt: skip
    [(planned, plan)] = seen
    assert [run_id for _t, _n, run_id in planned] == ["e-S-a-1", "e-S-a-2"]
    assert plan == Plan(tmp_path, tmp_path / "data", "oracle", "m", 0.5)


def test_an_eval_run_is_a_task_kind_of_the_fleet() -> None:
    assert kind_of((EVAL_CHANNEL,)) == EVAL_KIND == "eval"
    assert kind_of(("inbox", "email")) is None
