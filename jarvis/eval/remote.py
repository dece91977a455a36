"""An eval task carried by the fleet (``jarvis eval SUITE --fleet URL``).

An eval task needs its desktop three times: its setup starts apps there, the agent works
there, and its check looks there (files in its work folder, window titles). So all three
run where the desktop is: on the ``jarvis worker --eval`` that claimed it, on the worker's
own display, in the run's :class:`~jarvis.eval.workspace.Workspace` as a local run. The
stream entry is an ordinary task entry of the kind ``eval`` (channel ``kind:eval``,
:mod:`jarvis.fleet.kinds`) whose text is the :func:`spec` (JSON: the task, the suite
folder's other files, the provider); the outcome's summary is the run's result (JSON),
which the eval turns back into a :class:`~jarvis.eval.workspace.RunResult`.

The worker knows nothing of eval: :func:`run_claimed` is the kind's handler, which the
worker's command wires in. Setup commands are shell commands: it wires it in only when
the worker is started with ``--eval``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jarvis.eval.suite import EvalTask
from jarvis.eval.workspace import RunResult, SetupFailed, Workspace
from jarvis.fleet.kinds import Lent, kind_channel
from jarvis.usage import Usage

if TYPE_CHECKING:
    from jarvis.config import Settings

EVAL_KIND = "eval"
EVAL_CHANNEL = kind_channel(EVAL_KIND)
"""The channel that marks an eval run's entry (:mod:`jarvis.fleet.kinds`)."""
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
        include={"success", "reason", "status", "summary", "steps"}
        | {"tokens", "cost_usd", "score"}
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
        score = data.get("score")
        result.score = float(score) if score is not None else None
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


async def run_claimed(text: str, task_id: str, lent: Lent) -> tuple[str, str]:
    """Set up, run and check one eval task on the worker's display (``lent.where``) in
    the run's :class:`~jarvis.eval.workspace.Workspace`; the outcome's status and
    summary. The worker wires this in as the handler of the eval kind."""
    data = json.loads(text)
    task = EvalTask.model_validate(data["task"])
    result = RunResult(task=task.id, repeat=1, run_id=task_id)
    try:
        with Workspace(task, suite_files=data.get("suite") or {}) as workspace:
            await asyncio.to_thread(workspace.set_up, lent.where.env())
            try:
                outcome, problem = await _agent(task, task_id, data, lent)
                await asyncio.to_thread(workspace.judge, result, outcome, problem)
            finally:
                await asyncio.to_thread(workspace.tear_down)
    except SetupFailed as exc:
        result.reason = f"could not set the task up: {exc}"
    return ("completed" if result.success else "failed"), result_text(result)


async def _agent(
    task: EvalTask, task_id: str, data: dict[str, Any], lent: Lent
) -> tuple[dict[str, Any] | None, str]:
    """The task's agent on the worker's display, under the task's budget: its outcome
    (JSON data) or None and why there is none."""
    from jarvis.agent.factory import build_agent
    from jarvis.eval.oracle import OracleProvider

    provider_name = data.get("provider")
    run_settings = claimed_settings(lent.settings, data, task.budget.steps)
    oracle = OracleProvider(task.oracle) if provider_name == "oracle" else None
    async with build_agent(
        run_settings, lent.bus, provider=oracle, where=lent.where, approvals=lent.approvals
    ) as agent:
        lent.attach(agent)
        try:
            outcome = await asyncio.wait_for(
                agent.run(task.task, task_id=task_id), task.budget.seconds
            )
        except TimeoutError:
            return None, f"the task took longer than its budget of {task.budget.seconds:g} s"
        finally:
            lent.attach(None)
    return outcome.model_dump(mode="json"), ""
