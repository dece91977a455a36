"""Run a suite: each task (and each repeat) on a fresh virtual display, then judge it.

For one run: a work folder with the task's files, a new Xvfb of the task's size, the
setup commands (background ones stopped afterwards, with their whole process group),
the agent in a child process (:mod:`jarvis.eval.child`) under the time budget, the
check, the run's report. A setup that fails or a child that dies is a failed run whose
reason says so; the suite goes on.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, field_serializer

from jarvis.desktop.x11 import X11Error
from jarvis.eval.checks import CheckContext, run_check
from jarvis.eval.suite import EvalTask, SetupStep
from jarvis.safety.sandbox import Sandbox
from jarvis.safety.settings import SandboxSettings
from jarvis.usage import Usage

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


class RunResult(BaseModel):
    task: str
    repeat: int
    run_id: str
    success: bool = False
    reason: str = ""
    """The checker's explanation (or what went wrong before it could judge)."""
    status: str = ""
    summary: str = ""
    steps: int = 0
    tokens: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    wall_s: float = 0.0
    report: str | None = None
    """The run's report.html (absolute path)."""

    @field_serializer("tokens")
    def _token_counts(self, tokens: Usage) -> dict[str, int]:
        return token_counts(tokens)


def token_counts(usage: Usage) -> dict[str, int]:
    """The eval summary's token counts (its JSON shape): input, output and cache reads."""
    return {
        "input": usage.input_tokens,
        "output": usage.output_tokens,
        "cache_read": usage.cache_read_tokens,
    }


class SetupFailed(Exception):
    pass


def _wait_window(env: dict[str, str], pattern: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        for flag in ("--class", "--name"):
            found = subprocess.run(
                ["xdotool", "search", "--onlyvisible", flag, pattern],
                env=env,
                capture_output=True,
                text=True,
                timeout=10,
            )
            if found.returncode == 0 and found.stdout.strip():
                return
        if time.monotonic() >= deadline:
            raise SetupFailed(f"no window {pattern!r} appeared within {timeout:g} s")
        time.sleep(0.05)


def _setup(
    steps: list[SetupStep], env: dict[str, str], work: Path
) -> list[subprocess.Popen[bytes]]:
    started: list[subprocess.Popen[bytes]] = []
    log_file = (work / ".setup.log").open("ab")
    try:
        for step in steps:
            if step.background:
                started.append(
                    subprocess.Popen(
                        ["sh", "-c", step.run],
                        cwd=work,
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=log_file,
                        stderr=log_file,
                        start_new_session=True,
                    )
                )
            else:
                try:
                    done = subprocess.run(
                        ["sh", "-c", step.run],
                        cwd=work,
                        env=env,
                        capture_output=True,
                        text=True,
                        timeout=step.timeout_s,
                    )
                except subprocess.TimeoutExpired as exc:
                    raise SetupFailed(f"setup {step.run!r} took over {step.timeout_s:g} s") from exc
                if done.returncode != 0:
                    said = (done.stdout + done.stderr).strip()[-300:]
                    raise SetupFailed(f"setup {step.run!r} exited {done.returncode}: {said}")
            if step.wait_window:
                _wait_window(env, step.wait_window, step.timeout_s)
    except BaseException:
        _stop(started)
        raise
    finally:
        log_file.close()
    return started


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
    for proc in procs:
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=3)


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
        return wants_tree(task_settings(spec, task.budget.steps))
    except Exception as exc:  # the agent's process meets the same error and reports it
        log.warning("eval task %s: settings not readable (%s); no accessibility bus", task.id, exc)
        return False


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
) -> RunResult:
    """One run of ``task``; never raises for what goes wrong inside the run. ``stop``
    (set from another thread) ends the agent early; the display is stopped as ever."""
    result = RunResult(task=task.id, repeat=repeat, run_id=run_id)
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix=f"jarvis-eval-{task.id}-"))
    try:
        for name, text in task.files.items():
            path = work / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        spec = {
            "task_file": task.source,
            "task_id": run_id,
            "data_dir": str(data_dir),
            "provider": provider,
            "model": model,
            "delay_s": delay_s,
        }
        # a bare private display (no window manager: the tasks' windows sit at 0,0), with
        # the accessibility bus when the agent reads the tree (its apps then publish)
        width, height = task.size
        bare = SandboxSettings(size=f"{width}x{height}", window_manager=None)
        with Sandbox(bare, _wants_tree(spec, task)) as display:
            env = {
                **os.environ,
                **display.env(),
                "WORK": str(work),
                "SUITE": str(suite_dir.resolve()),
                "PYTHON": sys.executable,
            }
            home = work / ".home"  # the apps start as on a fresh machine, every time
            home.mkdir()
            app_env = {
                **env,
                "HOME": str(home),
                "XDG_CONFIG_HOME": str(home / ".config"),
                "XDG_CACHE_HOME": str(home / ".cache"),
                "XDG_DATA_HOME": str(home / ".local" / "share"),
            }
            procs = _setup(task.setup, app_env, work)
            try:
                outcome, problem = _child(spec, env, task.budget.seconds, stop)
                if outcome is not None:
                    result.status = str(outcome.get("status", ""))
                    result.summary = str(outcome.get("summary", ""))
                    result.steps = int(outcome.get("steps") or 0)
                    result.tokens = Usage.model_validate(outcome.get("usage") or {})
                    result.cost_usd = float(outcome.get("cost_usd") or 0.0)
                context = CheckContext(
                    work=work,
                    env={k: env[k] for k in ("DISPLAY", "XAUTHORITY", "WORK", "SUITE")},
                )
                ok, reason = run_check(task.check, context)
                result.success = ok
                result.reason = reason if not problem else f"{problem}; check: {reason}"
            finally:
                _stop(procs)
    except (SetupFailed, X11Error, OSError) as exc:
        result.reason = f"could not set the task up: {exc}"
    finally:
        shutil.rmtree(work, ignore_errors=True)
        result.wall_s = round(time.monotonic() - started, 3)
    return result


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
) -> list[RunResult]:
    """Every task ``repeat`` times, in order; the runs are ``e-STAMP-TASK-N``."""
    results = []
    for task, n, run_id in jobs(tasks, repeat, stamp):
        result = run_one(task, suite_dir, data_dir, run_id, n, provider, model, delay_s)
        add_report(result, data_dir)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results


def jobs(tasks: list[EvalTask], repeat: int, stamp: str) -> list[tuple[EvalTask, int, str]]:
    """The runs of a suite in the summary's order: (task, repeat number, run id)."""
    return [(t, n, f"e-{stamp}-{t.id}-{n}") for t in tasks for n in range(1, repeat + 1)]


def add_report(result: RunResult, data_dir: Path) -> None:
    """Write the run's report.html (none when the agent never started)."""
    from jarvis.runs.report import locate, write_report

    try:
        result.report = str(write_report(locate(data_dir, result.run_id), data_dir))
    except LookupError:
        result.report = None
