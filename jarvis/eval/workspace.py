"""One eval run's workspace, the same for every executor (serial, threads, the fleet).

A :class:`Workspace` holds what a run needs around its agent: the work folder with the
task's files (and, for a run away from the suite folder, the suite's helper files), the
environment (the display's, ``WORK``, ``SUITE``, ``PYTHON``; a fresh home for the apps),
the setup commands (background ones stopped afterwards, with their whole process group),
the check, and the :class:`RunResult` the agent's outcome and the check fill in. Where the
agent runs (a child process, the worker's own loop) is the executor's business.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from pydantic import BaseModel, Field, field_serializer

from jarvis.eval.checks import CheckContext, run_check
from jarvis.eval.suite import EvalTask, SetupStep
from jarvis.usage import Usage

JARVIS_ROOT = str(Path(__file__).resolve().parents[2])
"""Where this ``jarvis`` package is: ``$PYTHON -m jarvis...`` in a setup imports it."""
CHECK_KEYS = ("DISPLAY", "XAUTHORITY", "WAYLAND_DISPLAY", "SWAYSOCK", "WORK", "SUITE")
"""The part of the run's environment a check sees."""


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
    score: float | None = None
    """The check's fractional score where it gives one (OSWorld tasks), else None."""
    report: str | None = None
    """The run's report.html (absolute path)."""

    @field_serializer("tokens")
    def _token_counts(self, tokens: Usage) -> dict[str, int]:
        return token_counts(tokens)

    def record(self, outcome: Mapping[str, Any]) -> None:
        """The agent's outcome (a ``TaskOutcome`` as JSON data): status, summary, steps,
        tokens and cost."""
        self.status = str(outcome.get("status", ""))
        self.summary = str(outcome.get("summary", ""))
        self.steps = int(outcome.get("steps") or 0)
        self.tokens = Usage.model_validate(outcome.get("usage") or {})
        self.cost_usd = float(outcome.get("cost_usd") or 0.0)


def token_counts(usage: Usage) -> dict[str, int]:
    """The eval summary's token counts (its JSON shape): input, output and cache reads."""
    return {
        "input": usage.input_tokens,
        "output": usage.output_tokens,
        "cache_read": usage.cache_read_tokens,
    }


class SetupFailed(Exception):
    """The run could not be set up (its folder, a setup command, a window that never
    came); the run fails with this reason."""


class Workspace:
    """The folder of one run; :meth:`close` (or leaving the ``with``) removes it.

    ``suite``: the suite folder, when the run is where the suite is; else the suite's
    helper files (``suite_files``) are written into a folder of the workspace."""

    def __init__(
        self,
        task: EvalTask,
        suite: Path | None = None,
        suite_files: Mapping[str, str] | None = None,
    ) -> None:
        self.task = task
        self.top = Path(tempfile.mkdtemp(prefix=f"jarvis-eval-{task.id}-"))
        self.work = self.top / "work"
        self.suite = suite.resolve() if suite is not None else self.top / "suite"
        self.env: dict[str, str] = {}
        self._procs: list[subprocess.Popen[bytes]] = []
        try:
            _write(self.work, task.files)
            if suite is None:
                _write(self.suite, suite_files or {})
        except OSError as exc:
            self.close()
            raise SetupFailed(str(exc)) from exc

    def set_up(self, display_env: Mapping[str, str]) -> dict[str, str]:
        """Run the task's setup on the display of ``display_env``; the environment the
        agent and the check run with. Raises :class:`SetupFailed`."""
        env = {**os.environ, **display_env, "WORK": str(self.work), "SUITE": str(self.suite)}
        env["PYTHON"] = sys.executable
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [JARVIS_ROOT, env.get("PYTHONPATH")]))
        self.env = env
        home = self.work / ".home"  # the apps start as on a fresh machine, every time
        try:
            home.mkdir()
            app_env = {
                **env,
                "HOME": str(home),
                "XDG_CONFIG_HOME": str(home / ".config"),
                "XDG_CACHE_HOME": str(home / ".cache"),
                "XDG_DATA_HOME": str(home / ".local" / "share"),
            }
            self._procs = _setup(self.task.setup, app_env, self.work)
        except OSError as exc:
            raise SetupFailed(str(exc)) from exc
        return env

    def judge(self, result: RunResult, outcome: Mapping[str, Any] | None, problem: str) -> None:
        """Fill ``result`` in: the agent's ``outcome`` (None when there is none, and
        ``problem`` says why), then the check's verdict on the desktop and the folder."""
        if outcome is not None:
            result.record(outcome)
        context = CheckContext(
            work=self.work,
            env={k: self.env[k] for k in CHECK_KEYS if k in self.env},
            outcome=outcome,
        )
        ok, reason = run_check(self.task.check, context)
        result.success = ok
        result.score = context.score
        result.reason = reason if not problem else f"{problem}; check: {reason}"

    def tear_down(self) -> None:
        """Stop what the setup started (before its display goes)."""
        procs, self._procs = self._procs, []
        _stop(procs)

    def close(self) -> None:
        self.tear_down()
        shutil.rmtree(self.top, ignore_errors=True)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


def _write(folder: Path, files: Mapping[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, body in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")


def _wait_window(env: dict[str, str], pattern: str, timeout: float) -> None:
    from jarvis.desktop.backend import display_in, window_shown

    where = display_in(env)
    deadline = time.monotonic() + timeout
    while True:
        if window_shown(where, pattern):
            return
        if time.monotonic() >= deadline:
            raise SetupFailed(f"no window {pattern!r} appeared within {timeout:g} s")
        time.sleep(0.05)


def _run_step(step: SetupStep, env: dict[str, str], work: Path) -> None:
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
                _run_step(step, env, work)
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
