"""Run a suite: each task (and each repeat) on a fresh display, then judge it.

:func:`run_suite` plans the runs (``e-STAMP-TASK-N``, task by task, repeat by repeat) and
hands them to an executor: :class:`Serial` (one after another, here),
:class:`jarvis.eval.parallel.Threads` (N at once, each on its own private display) or
:class:`jarvis.eval.fleet.Fleet` (on the fleet's ``jarvis worker --eval`` processes). Each
gives the results back in the planned order, so the summary is the same whichever ran it.

For one local run (:func:`run_one`): the run's :class:`~jarvis.eval.workspace.Workspace`
(folder, environment, setup, check, result), a new Xvfb of the task's size, the agent in a
child process (:mod:`jarvis.eval.child`) under the time budget, then the check and the
run's report. A setup that fails or a child that dies is a failed run whose reason says
so; the suite goes on.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from jarvis.desktop.errors import InputError
from jarvis.desktop.x11 import X11Error
from jarvis.eval.suite import EvalTask
from jarvis.eval.workspace import RunResult, SetupFailed, Workspace
from jarvis.safety.sandbox import Sandbox
from jarvis.safety.settings import SandboxSettings

if TYPE_CHECKING:
    from jarvis.config import Settings

log = logging.getLogger(__name__)


def eval_model(settings: Settings, provider: str, model: str | None) -> str:
    """The model an eval's runs use (said in its summary and journal): ``--model``, else
    the one ``settings`` name for ``provider``; ``oracle`` for the scripted provider."""
    from jarvis.config import PROVIDERS

    for name in PROVIDERS:
        if name == provider:
            return model or settings.model_for(name)
    return "oracle"


PRELOAD = ["jarvis.agent.factory", "jarvis.eval.child", "jarvis.runs.journal"]
"""Imported once by the forkserver; every task's process starts with them loaded."""


def _context() -> Any:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


INTERRUPTED = "the eval was interrupted"
POLL_S = 0.2


def _answered(receive: Any, timeout: float, stop: threading.Event | None) -> bool | None:
    """True once the child answered, False past ``timeout``, None when ``stop`` is set."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if receive.poll(max(0.0, min(left, POLL_S) if stop is not None else left)):
            return True
        if stop is not None and stop.is_set():
            return None
        if left <= 0:
            return False


def _child(
    spec: dict[str, Any], env: dict[str, str], timeout: float, stop: threading.Event | None = None
) -> tuple[dict[str, Any] | None, str]:
    from jarvis.eval.child import run_in_process

    ctx = _context()
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=run_in_process, args=(spec, env, send), daemon=True)
    proc.start()
    send.close()
    try:
        answered = _answered(receive, timeout, stop)
        if answered is None:
            return None, INTERRUPTED
        if not answered:
            return None, f"the task took longer than its budget of {timeout:g} s"
        try:
            answer = receive.recv()
        except EOFError:
            return None, f"the agent process died (exit code {proc.exitcode})"
    finally:
        receive.close()
        proc.join(5)
        if proc.is_alive():
            proc.terminate()
            proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join()
    if "error" in answer:
        log.warning("eval task %s failed in the agent: %s", spec["task_id"], answer.get("trace"))
        return None, f"the agent failed: {answer['error']}"
    return answer["outcome"], ""


def _wants_tree(spec: dict[str, Any], task: EvalTask) -> bool:
    """Whether the agent of ``spec`` reads the accessibility tree (its settings, as the
    agent's process loads them)."""
    from jarvis.eval.child import task_settings
    from jarvis.safety.sandbox import wants_tree

    try:
        return wants_tree(task_settings(spec, spec.get("max_steps") or task.budget.steps))
    except Exception as exc:  # the agent's process meets the same error and reports it
        log.warning("eval task %s: settings not readable (%s); no accessibility bus", task.id, exc)
        return False


@contextlib.contextmanager
def task_display(task: EvalTask, tree: bool, kind: str = "x11") -> Iterator[dict[str, str]]:
    """A fresh private display of the task's size while inside; its environment. ``x11``:
    a bare Xvfb (no window manager: the tasks' windows sit at 0,0), with the
    accessibility bus when the agent reads the tree (its apps publish); ``wayland``: a
    headless sway of one output, run as an unprivileged user (its apps tile)."""
    width, height = task.size
    if kind == "wayland":
        from jarvis.safety.wayland_sandbox import OutputSpec, PrivateSway

        with PrivateSway([OutputSpec(width, height)]) as sway:
            assert sway.where is not None
            yield {"WAYLAND_DISPLAY": sway.where.socket, "SWAYSOCK": sway.where.swaysock}
        return
    size = f"{width}x{height}"  # unless the task asks for a window manager (OSWorld's)
    bare = (
        SandboxSettings(size=size)
        if task.window_manager
        else SandboxSettings(size=size, window_manager=None)
    )
    with Sandbox(bare, tree) as display:
        yield display.env()


def run_one(
    task: EvalTask,
    suite_dir: Path,
    data_dir: Path,
    run_id: str,
    repeat: int,
    provider: str,
    model: str | None,
    delay_s: float = 0.0,
    stop: threading.Event | None = None,
    display: str = "x11",
    max_steps: int | None = None,
) -> RunResult:
    """One run of ``task`` on a private ``display`` (x11 or wayland); never raises for
    what goes wrong inside the run. ``stop`` (set from another thread) ends the agent
    early; the display is stopped as ever."""
    result = RunResult(task=task.id, repeat=repeat, run_id=run_id)
    started = time.monotonic()
    spec = {
        "task_file": task.source,
        "task_id": run_id,
        "data_dir": str(data_dir),
        "provider": provider,
        "model": model,
        "delay_s": delay_s,
        "max_steps": max_steps,
    }
    try:
        with (
            Workspace(task, suite=suite_dir) as workspace,
            task_display(task, _wants_tree(spec, task), display) as display_env,
        ):
            env = workspace.set_up(display_env)
            try:
                outcome, problem = _child(spec, env, task.budget.seconds, stop)
                workspace.judge(result, outcome, problem)
            finally:
                workspace.tear_down()
    except (SetupFailed, X11Error, InputError, OSError) as exc:
        result.reason = f"could not set the task up: {exc}"
    finally:
        result.wall_s = round(time.monotonic() - started, 3)
    return result


Job = tuple[EvalTask, int, str]
"""One planned run: the task, its repeat number, its run id."""


@dataclass(frozen=True)
class Plan:
    """What every run of a suite shares, whichever executor runs it."""

    suite_dir: Path
    data_dir: Path
    provider: str
    model: str | None
    delay_s: float = 0.0
    display: str = "x11"
    """The kind of private display each run gets: x11 (Xvfb) or wayland (headless sway)."""
    max_steps: int | None = None
    """``--max-steps``: the steps of every run, over its task's budget."""

    def run(self, job: Job, stop: threading.Event | None = None) -> RunResult:
        """One planned run here (:func:`run_one`), with its report."""
        task, n, run_id = job
        where = (self.suite_dir, self.data_dir)
        result = run_one(
            task,
            *where,
            run_id,
            n,
            self.provider,
            self.model,
            self.delay_s,
            stop,
            self.display,
            self.max_steps,
        )
        add_report(result, self.data_dir)
        return result


class Executor(Protocol):
    """Runs the planned runs; the results in the planned order. ``done`` hears of each
    result as it comes (in any order)."""

    def __call__(
        self, planned: list[Job], plan: Plan, done: Callable[[RunResult], None]
    ) -> list[RunResult]: ...


class Serial:
    """One run after the other, here."""

    def __call__(
        self, planned: list[Job], plan: Plan, done: Callable[[RunResult], None]
    ) -> list[RunResult]:
        results = []
        for job in planned:
            result = plan.run(job)
            results.append(result)
            done(result)
        return results


def run_suite(
    tasks: list[EvalTask],
    suite_dir: Path,
    data_dir: Path,
    *,
    provider: str,
    model: str | None,
    repeat: int = 1,
    stamp: str,
    delay_s: float = 0.0,
    on_result: Callable[[RunResult], None] | None = None,
    executor: Executor | None = None,
    display: str = "x11",
    max_steps: int | None = None,
) -> list[RunResult]:
    """Every task ``repeat`` times (the runs are ``e-STAMP-TASK-N``), by ``executor``
    (default :class:`Serial`), each on a private ``display`` (x11 or wayland); the
    results in the serial order."""
    plan = Plan(suite_dir, data_dir, provider, model, delay_s, display, max_steps)
    if max_steps is not None:  # the fleet's workers read the budget from the task itself
        tasks = [
            t.model_copy(update={"budget": t.budget.model_copy(update={"steps": max_steps})})
            for t in tasks
        ]
    run = executor if executor is not None else Serial()
    return run(jobs(tasks, repeat, stamp), plan, on_result or _ignore)


def _ignore(result: RunResult) -> None:
    pass


def jobs(tasks: list[EvalTask], repeat: int, stamp: str) -> list[Job]:
    """The runs of a suite in the summary's order: (task, repeat number, run id)."""
    return [(t, n, f"e-{stamp}-{t.id}-{n}") for t in tasks for n in range(1, repeat + 1)]


def add_report(result: RunResult, data_dir: Path) -> None:
    """Write the run's report.html (none when the agent never started)."""
    from jarvis.runs.report import locate, write_report

    try:
        result.report = str(write_report(locate(data_dir, result.run_id), data_dir))
    except LookupError:
        result.report = None
