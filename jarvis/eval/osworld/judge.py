"""Judge an OSWorld task the way OSWorld's ``DesktopEnv.evaluate`` does: the
``postconfig`` steps, then each ``func`` on what its ``result`` (and ``expected``)
getter gives, with its ``options``, joined by ``conj``; an ``infeasible`` task by whether
the agent said it cannot be done.

:func:`evaluate` is the eval check (``check: {python: jarvis.eval.osworld.judge:evaluate}``):
it runs in the run's workspace, sets the score on the context and passes at 1.0.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jarvis.eval.checks import CheckContext, CheckResult
from jarvis.eval.osworld.getters import Where, get
from jarvis.eval.osworld.metrics import metric
from jarvis.eval.osworld.steps import CACHE_ENV, NotRun, map_home, postconfig

_STDOUT = threading.Lock()
SAID_INFEASIBLE = re.compile(
    r"\b(infeasible|not feasible|cannot be done|can ?not be (?:done|completed)|can't be done"
    r"|impossible|not possible|FAIL)\b",
    re.IGNORECASE,
)
"""How a ``finished`` summary says the task cannot be done (OSWorld's agents say FAIL)."""


def declared_infeasible(outcome: Mapping[str, Any] | None) -> bool:
    """The run ended saying the task cannot be done: ``call_user`` (needs_user), or a
    ``finished`` whose summary says so."""
    if not outcome:
        return False
    status = str(outcome.get("status", ""))
    summary = str(outcome.get("summary", ""))
    if status == "needs_user":
        return True
    return status == "finished" and bool(SAID_INFEASIBLE.search(summary))


def _listed(value: Any, n: int) -> list[Any]:
    if isinstance(value, list):
        return value
    return [value] * n if n > 1 else [value]


def _one(where: Where, func: str, result: Any, expected: Any, options: Any) -> float:
    """One metric; a result file that is not there is 0, as in OSWorld."""
    fn = metric(func)
    try:
        state = get(where, result)
    except FileNotFoundError:
        return 0.0
    options = dict(options or {})
    if expected:
        wanted = get(where, expected)
        if wanted is not None:
            return float(fn(state, wanted, **options))
    return float(fn(state, **options))


def score(where: Where, evaluator: dict[str, Any]) -> float:
    """The evaluator's score on the run of ``where`` (postconfig already run)."""
    funcs = evaluator["func"]
    if not isinstance(funcs, list):
        return _one(
            where, funcs, evaluator["result"], evaluator.get("expected"), evaluator.get("options")
        )
    n = len(funcs)
    results = _listed(evaluator.get("result"), n)
    expected = _listed(evaluator.get("expected"), n) if evaluator.get("expected") else [None] * n
    options = _listed(evaluator.get("options") or {}, n)
    conj = evaluator.get("conj", "and")
    scores = []
    for func, res, exp, opt in zip(funcs, results, expected, options, strict=False):
        value = _one(where, func, res, exp, opt)
        if conj == "and" and value == 0.0:
            return 0.0
        if conj == "or" and value == 1.0:
            return 1.0
        scores.append(value)
    return sum(scores) / len(scores) if conj == "and" else max(scores)


def evaluate(ctx: CheckContext, evaluator: dict[str, Any], cache: str = "") -> CheckResult:
    """The eval check of an OSWorld task: sets ``ctx.score``; passes at 1.0."""
    if evaluator.get("func") == "infeasible":
        said = declared_infeasible(ctx.outcome)
        ctx.score = 1.0 if said else 0.0
        return said, "score 1: the agent said it cannot be done" if said else (
            "score 0: the task is infeasible and the agent did not say so"
        )
    if declared_infeasible(ctx.outcome):
        ctx.score = 0.0  # as OSWorld: giving up on a feasible task scores 0
        return False, "score 0: the agent said a feasible task cannot be done"
    home = str(ctx.work / ".home")
    env = {**ctx.env, "HOME": home}
    evaluator = map_home(evaluator, home)
    with tempfile.TemporaryDirectory(prefix="jarvis-osworld-judge-") as scratch:
        cache = os.environ.get(CACHE_ENV) or cache or "."
        where = Where(env=env, cache=Path(cache), scratch=Path(scratch))
        try:
            for step in evaluator.get("postconfig", []):
                postconfig(step, env)
            # OSWorld's metrics print; sys.stdout is the process's, so one judge at a time
            # swaps it (runs of --workers N judge in threads)
            with _STDOUT, contextlib.redirect_stdout(io.StringIO()):
                value = score(where, evaluator)
        except (NotRun, LookupError) as exc:  # a step, getter or metric not carried here
            ctx.score = None
            return False, f"not run: {exc}"
    ctx.score = value
    name = evaluator["func"] if isinstance(evaluator["func"], str) else "+".join(evaluator["func"])
    return value >= 1.0, f"score {value:g} ({name})"
