"""An OSWorld task as the eval runner's task: the same runner, workspace and executors
(serial, ``--workers N``, the fleet) run it.

Every OSWorld setup step becomes a setup command of its own
(``python -m jarvis.eval.osworld.steps .osworld/setup-NN.json``, the step's JSON written
into the run's work folder), after the OSWorld profile of the home
(:mod:`jarvis.eval.osworld.profile`); the check is :func:`jarvis.eval.osworld.judge.evaluate`
with the task's evaluator. The display is 1920x1080 with the window manager. What this
desktop does not carry (a setup step, a getter, a metric) is found here and turns into a
first setup step that stops the run as not run, naming it.

The scripted solutions of a task (``ID.oracle.yaml`` beside its JSON, ``right:`` and
``wrong:``, each a list of oracle steps) become the task's ``oracle``.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from typing import Any

import yaml

from jarvis.eval.osworld.getters import GETTERS
from jarvis.eval.osworld.metrics import known
from jarvis.eval.osworld.steps import NOT_RUN_EXIT, SUPPORTED
from jarvis.eval.osworld.tasks import OsTask, as_list

SCREEN = "1920x1080"
STEP_SECONDS = 30.0
"""The time budget per allowed step (the agent's part of the run)."""
DECLARE = (
    "\n\n(If this task cannot be done on this computer, do not try: say so with "
    "`call_user`, or finish saying it is infeasible.)"
)
"""OSWorld's agents are told to answer FAIL for an infeasible task; Jarvis's, this."""
STEPS = '"$PYTHON" -m jarvis.eval.osworld.steps'
PROFILE_S = 240.0
"""The profile step's time: seconds once GIMP's and Thunderbird's templates are made, up
to a few minutes on a machine's first run, which makes them
(:mod:`jarvis.eval.osworld.app_profiles`)."""


def unsupported(task: OsTask) -> list[str]:
    """What the task needs that this desktop does not carry, by name."""
    if task.infeasible:
        names = []
    else:
        names = [f"metric {f}" for f in as_list(task.evaluator["func"]) if not known(str(f))]
    for step in [*task.config, *task.evaluator.get("postconfig", [])]:
        if step.get("type") not in SUPPORTED:
            names.append(f"setup step {step.get('type')}")
    for key in ("result", "expected"):
        for getter in as_list(task.evaluator.get(key)):
            if isinstance(getter, dict) and getter.get("type") not in GETTERS:
                names.append(f"getter {getter.get('type')}")
    return list(dict.fromkeys(names))


def _step(number: int, step: dict[str, Any], files: dict[str, str], cache: Path) -> dict[str, Any]:
    kind = step.get("type")
    if kind == "download":
        params = {**step.get("parameters", {}), "jarvis_cache": str(cache)}
        step = {**step, "parameters": params}
    name = f".osworld/setup-{number:02d}.json"
    files[name] = json.dumps(step, indent=1)
    entry: dict[str, Any] = {"run": f"{STEPS} {name}", "timeout_s": 120.0}
    if kind in ("launch", "open"):
        entry["background"] = True
    if kind == "open":
        entry["wait_window"] = Path(str(step["parameters"]["path"])).stem
        entry["timeout_s"] = 90.0
    if kind == "sleep":
        entry["timeout_s"] = float(step.get("parameters", {}).get("seconds", 0)) + 30.0
    return entry


def oracle(task: OsTask, variant: str) -> list[Any]:
    """The task's scripted solution ``variant`` (right, wrong), or none."""
    sidecar = task.source.with_name(f"{task.source.stem}.oracle.yaml")
    if not variant or not sidecar.is_file():
        return []
    scripts = yaml.safe_load(sidecar.read_text(encoding="utf-8")) or {}
    return list(scripts.get(variant) or [])


def to_eval(task: OsTask, cache: Path, max_steps: int, variant: str = "right") -> dict[str, Any]:
    """The eval task (its YAML data) that runs ``task``."""
    files: dict[str, str] = {}
    setup: list[dict[str, Any]] = [
        {"run": '"$PYTHON" -m jarvis.eval.osworld.profile', "timeout_s": PROFILE_S}
    ]
    missing = unsupported(task)
    if missing:
        said = shlex.quote(f"not run: unsupported {', '.join(missing)}")
        setup.append({"run": f"echo {said}; exit {NOT_RUN_EXIT}"})
    else:
        setup += [_step(n, s, files, cache) for n, s in enumerate(task.config, 1)]
    text = task.instruction + DECLARE
    return {
        "id": task.id,
        "task": text,
        "screen": SCREEN,
        "window_manager": True,
        "files": files,
        "setup": setup,
        "budget": {"steps": max_steps, "seconds": 60.0 + STEP_SECONDS * max_steps},
        "check": {
            "python": "jarvis.eval.osworld.judge:evaluate",
            "args": {"evaluator": task.evaluator, "cache": str(cache)},
        },
        "oracle": oracle(task, variant),
    }


def write_suite(
    tasks: list[OsTask], folder: Path, cache: Path, max_steps: int, variant: str = "right"
) -> Path:
    """The eval suite folder of ``tasks`` (one YAML file each, and ``osworld.json``: each
    task's domain and source file), made anew."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for task in tasks:
        data = to_eval(task, cache.resolve(), max_steps, variant)
        (folder / f"{task.id}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    index = {t.id: {"domain": t.domain, "source": str(t.source)} for t in tasks}
    (folder / "osworld.json").write_text(json.dumps(index, indent=1))
    return folder
