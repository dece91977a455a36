"""An OSWorld eval's results as OSWorld reports them, and more.

Per run: the score (fractional where the metric is), the status (``scored``, or ``not
run`` with its reason: a missing file, an unsupported step, getter or metric, a setup
that failed), steps, tokens, cost, wall time and the run's report. Per domain and overall:
the success rate over the scored runs and over all runs (a run not run counts 0 there),
and with ``--repeat K`` pass@k (a task passes when one of its K runs scored 1).

``results.json`` holds OSWorld's rows (``domain``, ``example_id``, ``score``: what its
``result.txt`` files and ``show_result.py`` give per task) with Jarvis's fields beside.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from jarvis.eval.workspace import RunResult, token_counts
from jarvis.usage import Usage

SCORED, NOT_RUN = "scored", "not run"
SETUP_PREFIX = "could not set the task up: "
_NOT_RUN = re.compile(r".*not run: (.*)$", re.DOTALL)
"""The last "not run: REASON" of a reason (a setup command may quote the phrase too)."""


def status_of(result: RunResult) -> tuple[str, str]:
    """(``scored`` | ``not run``, the reason it was not run, else "")."""
    said = _NOT_RUN.search(result.reason)
    if said is not None:
        return NOT_RUN, said.group(1).strip().splitlines()[0]
    if result.reason.startswith(SETUP_PREFIX):
        return NOT_RUN, f"setup failed: {result.reason[len(SETUP_PREFIX) :][:300]}"
    return SCORED, ""


def score_of(result: RunResult) -> float:
    if status_of(result)[0] != SCORED:
        return 0.0
    if result.score is not None:
        return result.score
    return 1.0 if result.success else 0.0


def row(result: RunResult, domain: str) -> dict[str, Any]:
    status, why = status_of(result)
    return {
        "domain": domain,
        "example_id": result.task,
        "score": score_of(result) if status == SCORED else None,
        "status": status,
        "not_run": why,
        "repeat": result.repeat,
        "steps": result.steps,
        "tokens": token_counts(result.tokens),
        "cost_usd": round(result.cost_usd, 6),
        "wall_s": result.wall_s,
        "run_id": result.run_id,
        "report": result.report,
        "reason": result.reason,
    }


def _rates(rows: list[dict[str, Any]]) -> dict[str, Any]:
    scored = [r for r in rows if r["status"] == SCORED]
    total = sum(r["score"] for r in scored)
    tasks: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        tasks.setdefault(r["example_id"], []).append(r)
    passed = sum(any(r["score"] == 1.0 for r in runs) for runs in tasks.values())
    usage = sum((Usage.model_validate(_usage(r)) for r in rows), Usage())
    return {
        "runs": len(rows),
        "scored": len(scored),
        "not_run": len(rows) - len(scored),
        "score_sum": round(total, 4),
        "success_rate_scored": round(total / len(scored), 4) if scored else 0.0,
        "success_rate_all": round(total / len(rows), 4) if rows else 0.0,
        "pass_at_k": round(passed / len(tasks), 4) if tasks else 0.0,
        "steps": sum(r["steps"] for r in rows),
        "tokens": token_counts(usage),
        "cost_usd": round(sum(r["cost_usd"] for r in rows), 6),
        "wall_s": round(sum(r["wall_s"] for r in rows), 3),
    }


def _usage(r: dict[str, Any]) -> dict[str, int]:
    t = r["tokens"]
    return {
        "input_tokens": t["input"],
        "output_tokens": t["output"],
        "cache_read_tokens": t["cache_read"],
    }


def summarize(
    results: list[RunResult], domains: dict[str, str], *, repeat: int, max_steps: int
) -> dict[str, Any]:
    """The OSWorld summary: rows, per domain, overall (``k`` of pass@k is ``repeat``)."""
    rows = [row(r, domains.get(r.task, "unknown")) for r in results]
    per_domain = {
        d: _rates([r for r in rows if r["domain"] == d])
        for d in sorted({r["domain"] for r in rows})
    }
    return {
        "format": "osworld",
        "max_steps": max_steps,
        "k": repeat,
        "domains": per_domain,
        "total": _rates(rows),
        "rows": rows,
    }


def write_results(summary: dict[str, Any], folder: Path) -> Path:
    """``results.json`` (OSWorld's rows with Jarvis's fields) and ``summary.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "summary.json").write_text(json.dumps(summary, indent=1))
    path = folder / "results.json"
    path.write_text(json.dumps(summary["rows"], indent=1))
    return path
