"""An eval task carried by the fleet (``jarvis eval SUITE --fleet URL``).

An eval task needs its desktop three times: its setup starts apps there, the agent works
there, and its check looks there (files in its work folder, window titles). So all three
run where the desktop is: on the ``jarvis worker --eval`` that claimed it, on the worker's
own display. The stream entry is an ordinary task entry whose channel is ``eval`` and
whose text is the :func:`spec` (JSON: the task, the suite folder's other files, the
provider); the outcome's summary is the run's result (JSON), which the eval turns back
into a :class:`~jarvis.eval.runner.RunResult`.

Setup commands are shell commands: a worker runs them only when started with ``--eval``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jarvis.eval.checks import CheckContext, run_check
from jarvis.eval.runner import RunResult, SetupFailed, _setup, _stop
from jarvis.eval.suite import EvalTask
from jarvis.usage import Usage

if TYPE_CHECKING:
    from jarvis.agent.agent import Agent
    from jarvis.config import Settings
    from jarvis.desktop.x11 import XDisplay
    from jarvis.events import EventBus
    from jarvis.safety.approvals import ApprovalGate

EVAL_CHANNEL = "eval"
MAX_SUITE_FILE_BYTES = 256 * 1024
"""A suite's helper files (an app, a page) travel with each task; bigger ones do not."""


def spec(task: EvalTask, suite_dir: Path, provider: str, model: str | None) -> str:
    helpers = {}
    for path in sorted(suite_dir.iterdir()):
        if (
            path.is_file()
            and path.suffix != ".yaml"
            and path.stat().st_size <= MAX_SUITE_FILE_BYTES
        ):
            helpers[path.name] = path.read_text(encoding="utf-8", errors="replace")
    data = task.model_dump(exclude={"source"})
    return json.dumps({"task": data, "suite": helpers, "provider": provider, "model": model})


def result_text(result: RunResult) -> str:
    return result.model_dump_json(
        include={"success", "reason", "status", "summary", "steps"} | {"tokens", "cost_usd"}
    )


def result_from(task: str, repeat: int, run_id: str, summary: str) -> RunResult:
    """The run's result from an outcome's summary (the janitor's failures are plain text)."""
    result = RunResult(task=task, repeat=repeat, run_id=run_id)
    try:
        data = json.loads(summary)
        result.success = bool(data["success"])
        result.reason = str(data["reason"])
        result.status = str(data.get("status", ""))
        result.summary = str(data.get("summary", ""))
        result.steps = int(data.get("steps") or 0)
        tokens = data.get("tokens") or {}
        result.tokens = Usage(
            input_tokens=int(tokens.get("input", 0)),
            output_tokens=int(tokens.get("output", 0)),
            cache_read_tokens=int(tokens.get("cache_read", 0)),
        )
        result.cost_usd = float(data.get("cost_usd") or 0.0)
    except (ValueError, KeyError, TypeError, AttributeError):
        result.reason = f"the fleet ended the run: {summary}"
    return result


def claimed_settings(settings: Settings, data: dict[str, Any], steps: int) -> Settings:
    """The settings a claimed eval task runs with: the worker's, with the eval's provider
    and model (:func:`jarvis.config.model_overrides`) and the task's step budget."""
    from jarvis.config import PROVIDERS, model_overrides

    provider_name = data.get("provider")
    overrides: dict[str, Any] = {"max_steps": steps, "long_term_memory": False}
    if provider_name in PROVIDERS:
        overrides |= model_overrides(provider_name, data.get("model"), settings.provider)
    return settings.model_copy(update=overrides)


async def run_claimed(
    text: str,
    task_id: str,
    settings: Settings,
    bus: EventBus,
    where: XDisplay,
    approvals: ApprovalGate,
    attach: Callable[[Agent | None], None],
) -> tuple[str, str]:
    """Set up, run and check one eval task on this worker's display ``where``; the
    outcome's status and summary. ``attach`` gets the task's agent (for cancel, stop and a
    lost lease) and None once it is done."""
    from jarvis.agent.factory import build_agent
    from jarvis.eval.oracle import OracleProvider

    data = json.loads(text)
    task = EvalTask.model_validate(data["task"])
    result = RunResult(task=task.id, repeat=1, run_id=task_id)
    provider_name = data.get("provider")
    run_settings = claimed_settings(settings, data, task.budget.steps)
    oracle = OracleProvider(task.oracle) if provider_name == "oracle" else None
    top = Path(tempfile.mkdtemp(prefix=f"jarvis-eval-{task.id}-"))
    work, suite = top / "work", top / "suite"
    try:
        for folder, files in ((suite, data.get("suite") or {}), (work, task.files)):
            for name, body in files.items():
                path = folder / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(body, encoding="utf-8")
        work.mkdir(exist_ok=True)
        suite.mkdir(exist_ok=True)
        env = {**os.environ, **where.env(), "WORK": str(work), "SUITE": str(suite)}
        env["PYTHON"] = sys.executable
        home = work / ".home"
        home.mkdir()
        app_env = {**env, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
        app_env |= {"XDG_CACHE_HOME": str(home / ".cache")}
        app_env |= {"XDG_DATA_HOME": str(home / ".local" / "share")}
        procs = await asyncio.to_thread(_setup, task.setup, app_env, work)
        try:
            async with build_agent(
                run_settings, bus, provider=oracle, where=where, approvals=approvals
            ) as agent:
                attach(agent)
                problem = ""
                try:
                    outcome = await asyncio.wait_for(
                        agent.run(task.task, task_id=task_id), task.budget.seconds
                    )
                    result.status, result.summary = outcome.status, outcome.summary
                    result.steps, result.tokens = outcome.steps, outcome.usage
                    result.cost_usd = outcome.cost_usd
                except TimeoutError:
                    problem = f"the task took longer than its budget of {task.budget.seconds:g} s"
                finally:
                    attach(None)
            keep = ("DISPLAY", "XAUTHORITY", "WORK", "SUITE")
            context = CheckContext(work=work, env={k: env[k] for k in keep if k in env})
            ok, reason = await asyncio.to_thread(run_check, task.check, context)
            result.success = ok
            result.reason = reason if not problem else f"{problem}; check: {reason}"
        finally:
            await asyncio.to_thread(_stop, procs)
    except SetupFailed as exc:
        result.reason = f"could not set the task up: {exc}"
    finally:
        shutil.rmtree(top, ignore_errors=True)
    return ("completed" if result.success else "failed"), result_text(result)
