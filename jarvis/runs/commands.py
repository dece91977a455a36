"""``jarvis runs``: a page of runs, newest first (``--before CURSOR`` for the next one);
``jarvis runs show TASK_ID``: one run's journal, readable.

Exit codes: 0 shown, 1 no such run, 2 a cursor that is not one.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from jarvis.config import Settings
from jarvis.runs.reader import (
    EVENTS_FILE,
    PAGE,
    BadCursor,
    find_run,
    list_runs,
    load_run,
    read_events,
)
from jarvis.runs.run_info import RunSummary, ending_text
from jarvis.task_words import shown

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
TEXT_MAX = 100


def register(subparsers: Any) -> None:
    """Add the ``runs`` command to the ``jarvis`` parser."""
    runs = subparsers.add_parser(
        "runs",
        help="list recent runs, or show one run's journal",
        description="Runs are journaled under DATA/runs/DATE/TASK_ID/ (events.jsonl, run.json).",
    )
    runs.add_argument(
        "--limit", type=int, default=PAGE, help=f"how many runs to list (default {PAGE})"
    )
    runs.add_argument(
        "--before",
        metavar="CURSOR",
        help="list the runs older than a page's last one (the cursor it printed)",
    )
    runs.add_argument(
        "--json", action="store_true", help="print JSON ({runs, next}) instead of lines"
    )
    sub = runs.add_subparsers(dest="runs_command", metavar="SUBCOMMAND")
    show = sub.add_parser("show", help="print one run's journal as readable lines")
    show.add_argument("task_id", metavar="TASK_ID", help="the task id (T001, t-2026...)")
    # SUPPRESS: a sub-command's defaults would overwrite the same options given before it
    show.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print the lines as they are"
    )
    runs.set_defaults(handler=cmd_runs)


def cmd_runs(args: argparse.Namespace, settings: Settings) -> int:
    if getattr(args, "runs_command", None) == "show":
        return _show(args.task_id, settings, args.json)
    try:
        page = list_runs(settings.data_dir, max(1, args.limit), args.before)
    except BadCursor as exc:
        print(f"jarvis: {exc} (give the one a page of `jarvis runs` printed)")
        return EXIT_USAGE
    if args.json:
        print(
            json.dumps({"runs": [r.model_dump() for r in page.runs], "next": page.next}, indent=2)
        )
        return EXIT_OK
    if not page.runs:
        print(f"no {'older ' if args.before else ''}runs in {settings.data_dir / 'runs'}")
        return EXIT_OK
    print(HEADER)
    for run in page.runs:
        print(run_line(run))
    if page.next is not None:
        print(f"older runs: jarvis runs --before {page.next}")
    return EXIT_OK


HEADER = (
    f"{'started':<16}  {'task':<12} {'status':<15} {'steps':>9} {'tokens':>11} {'cost':>7}  "
    f"{'from':<6} {'what':<40}  ending"
)
"""The listing's header row, in the columns of :func:`run_line`."""


def run_line(run: RunSummary) -> str:
    """One run of the listing as a line."""
    tokens = run.tokens.input_tokens + run.tokens.output_tokens
    several = f" ({run.run_count} runs)" if run.run_count > 1 else ""
    return (
        f"{_when(run.started)}  {run.task_id:<12} {shown(run.status):<15} {run.steps:>3} steps "
        f"{tokens:>7} tok ${run.cost_usd:.4f}  {run.channel:<6} {_short(run.task, 40):<40}  "
        f"{_short(run.ending, 60)}{several}"
    )


def _show(task_id: str, settings: Settings, as_json: bool) -> int:
    folder = find_run(settings.data_dir, task_id) or find_run(settings.data_dir, task_id.upper())
    if folder is None:
        print(f"jarvis: no run of {task_id} under {settings.data_dir / 'runs'}")
        return EXIT_FAILED
    records = read_events(folder / EVENTS_FILE)
    if as_json:
        for record in records:
            print(json.dumps(record, ensure_ascii=False))
        return EXIT_OK
    run = load_run(settings.data_dir, folder)
    print(f"{run.task_id}: {run.task}")
    print(f"  {shown(run.status)}, {run.steps} steps, {run.channel}, {run.model}, {run.folder}")
    print(f"  {run.ending}")
    if len(run.runs) > 1:
        for part in run.runs:
            tokens = part.tokens.input_tokens + part.tokens.output_tokens
            answer = f" after: {_short(part.answer, 60)}" if part.answer else ""
            print(
                f"  run {part.run}: {_short(part.ending, 80)}, {part.steps} steps, "
                f"{tokens} tok ${part.cost_usd:.4f}{answer}"
            )
    for line in readable(records):
        print(line)
    return EXIT_OK


def readable(records: Iterable[dict[str, Any]]) -> Iterator[str]:
    """Journal lines as text; consecutive model text is joined into one ``thought`` line."""
    text: list[str] = []
    first: dict[str, Any] | None = None
    for record in records:
        if record["kind"] == "model_text_delta":
            first = first or record
            text.append(str(record.get("text", "")))
            continue
        if first is not None:
            yield _line(first, "thought: " + _short("".join(text), 400))
            text, first = [], None
        yield _line(record, describe(record))
    if first is not None:
        yield _line(first, "thought: " + _short("".join(text), 400))


def describe(record: dict[str, Any]) -> str:
    """One journal line in words."""
    kind = record["kind"]
    r = record
    if kind == "task_started":
        if r.get("answer") is not None and int(r.get("run") or 1) > 1:
            return f"run {r.get('run')} started after: {_short(str(r['answer']), TEXT_MAX)}"
        return f"task started: {_short(str(r.get('task', '')), TEXT_MAX)}"
    if kind == "step_started":
        return f"step {r.get('step')}"
    if kind == "tool_call_streaming":
        return f"  {r.get('tool_name')}: the model is writing the call"
    if kind == "tool_call_started":
        args = json.dumps(r.get("arguments") or {}, ensure_ascii=False)
        return f"  {r.get('tool_name')} {_short(args, TEXT_MAX)}"
    if kind == "tool_call_finished":
        if r.get("cancelled"):
            return f"  {r.get('tool_name')} cancelled ({r.get('latency_ms', 0):.0f} ms)"
        if r.get("ok"):
            result = "" if r.get("data") is None else " " + _short(json.dumps(r["data"]), 80)
            return f"  {r.get('tool_name')} ok ({r.get('latency_ms', 0):.0f} ms){result}"
        return (
            f"  {r.get('tool_name')} error {r.get('error_code')}: "
            f"{_short(str(r.get('error_message') or ''), TEXT_MAX)}"
        )
    if kind == "step_finished":
        timings = r.get("timings_ms") or {}
        parts = ", ".join(f"{k} {v:.0f}" for k, v in timings.items())
        return (
            f"step {r.get('step')} done ({parts} ms; "
            f"{r.get('input_tokens', 0)}+{r.get('output_tokens', 0)} tok, "
            f"${r.get('cost_usd', 0):.4f} so far)"
        )
    if kind == "verification_finished":
        verdict = "passed" if r.get("done") else "failed"
        return f"verification {verdict}: {_short(str(r.get('reason', '')), TEXT_MAX)}"
    if kind == "task_finished":
        ending = ending_text(
            str(r.get("status")), str(r.get("summary") or ""), None, r.get("stopped_by")
        )
        return f"task {ending} ({r.get('steps')} steps)"
    if kind == "warning":
        return f"warning: {r.get('message')}"
    if kind == "reply_ready":
        said = shown(str(r.get("status")))
        return f"reply to {r.get('channel')}: {said}: {_short(str(r.get('text')), 80)}"
    if kind == "model_retry":
        return f"model retry {r.get('attempt')} in {r.get('delay_s')}s: {r.get('reason')}"
    rest = {k: v for k, v in r.items() if k not in ("seq", "ts", "kind", "task_id")}
    return f"{kind} {_short(json.dumps(rest, ensure_ascii=False), TEXT_MAX)}"


def _line(record: dict[str, Any], text: str) -> str:
    stamp = datetime.fromtimestamp(float(record.get("ts") or 0)).strftime("%H:%M:%S.%f")[:-3]
    return f"{record['seq']:>6} {stamp} {text}"


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M") if ts else "?" * 16


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
