"""The outcome of an eval: one JSON summary and an HTML page linking each run's report."""

from __future__ import annotations

import json
import os
from html import escape
from pathlib import Path
from typing import Any

from jarvis.eval.workspace import RunResult, token_counts
from jarvis.usage import Usage


def _totals(results: list[RunResult]) -> dict[str, Any]:
    runs = len(results)
    successes = sum(r.success for r in results)
    tokens = sum((r.tokens for r in results), Usage())
    return {
        "runs": runs,
        "successes": successes,
        "success_rate": round(successes / runs, 4) if runs else 0.0,
        "steps": sum(r.steps for r in results),
        "mean_steps": round(sum(r.steps for r in results) / runs, 2) if runs else 0.0,
        "tokens": token_counts(tokens),
        "cost_usd": round(sum(r.cost_usd for r in results), 6),
        "wall_s": round(sum(r.wall_s for r in results), 3),
    }


def summarize(
    results: list[RunResult], *, suite: str, provider: str, model: str, repeat: int
) -> dict[str, Any]:
    order = list(dict.fromkeys(r.task for r in results))
    tasks = []
    for task in order:
        mine = [r for r in results if r.task == task]
        tasks.append(
            {
                "id": task,
                **_totals(mine),
                "failures": [
                    {"repeat": r.repeat, "run_id": r.run_id, "reason": r.reason}
                    for r in mine
                    if not r.success
                ],
            }
        )
    return {
        "suite": suite,
        "provider": provider,
        "model": model,
        "repeat": repeat,
        "tasks": tasks,
        "total": _totals(results),
        "runs": [r.model_dump() for r in results],
    }


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>Jarvis eval: {suite}</title>
<style>
body {{ font: 14px/1.45 system-ui, sans-serif; margin: 24px; color: #1d2330; }}
table {{ border-collapse: collapse; width: 100%; }}
th, td {{ text-align: left; padding: 5px 8px; border-bottom: 1px solid #e3e7ee; }}
td.pass {{ color: #1f9d55; font-weight: 700; }} td.fail {{ color: #d93025; font-weight: 700; }}
tr.fail td {{ background: #fdecea; }}
.big {{ font-size: 20px; font-weight: 700; }}
</style></head><body>
<h1>Eval: {suite}</h1>
<p class="big" id="rate">{rate:.0%} success ({successes} of {runs} runs)</p>
<p>provider {provider} · model {model} · repeat {repeat} · {steps} steps · tokens {tin} in /
{tout} out · ${cost:.4f} · {wall:.1f} s</p>
<table><thead><tr><th>task</th><th>#</th><th>result</th><th>why</th><th>steps</th>
<th>tokens</th><th>cost</th><th>time</th><th>report</th></tr></thead><tbody>
{rows}
</tbody></table></body></html>
"""


def write_html(summary: dict[str, Any], results: list[RunResult], path: Path) -> Path:
    rows = []
    for r in results:
        link = "–"
        if r.report:
            href = os.path.relpath(r.report, path.parent)
            link = f'<a href="{escape(href)}">report</a>'
        verdict = "pass" if r.success else "fail"
        rows.append(
            f'<tr class="{verdict} run" data-task="{escape(r.task)}"><td>{escape(r.task)}</td>'
            f'<td>{r.repeat}</td><td class="{verdict}">{verdict}</td><td>{escape(r.reason)}</td>'
            f"<td>{r.steps}</td><td>{r.tokens.input_tokens} / {r.tokens.output_tokens}</td>"
            f"<td>${r.cost_usd:.4f}</td><td>{r.wall_s:.1f} s</td><td>{link}</td></tr>"
        )
    total = summary["total"]
    page = _PAGE.format(
        suite=escape(summary["suite"]),
        rate=total["success_rate"],
        successes=total["successes"],
        runs=total["runs"],
        provider=escape(summary["provider"]),
        model=escape(summary["model"]),
        repeat=summary["repeat"],
        steps=total["steps"],
        tin=total["tokens"]["input"],
        tout=total["tokens"]["output"],
        cost=total["cost_usd"],
        wall=total["wall_s"],
        rows="\n".join(rows),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    (path.parent / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return path
