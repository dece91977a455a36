"""``report.html``: one self-contained page that shows what a run did.

Everything is in the file: the template ships in the package
(``jarvis/runs/templates/report.html``), pictures are inline ``data:`` URIs, and a
Content-Security-Policy forbids fetching anything else. Parts: a header (task, channel,
model, status, verdict, duration, tokens, cost; with several runs, the current run's too),
how the task ended in words (finished with the summary and the verification, failed with
the reason, cancelled with who stopped it, needs you with the question), a filmstrip, and
a card per step with the screenshot and its markers (:mod:`jarvis.runs.markers`), the
thought, the calls and their results, a timing bar and the tokens (and the accessibility
tree the step sent, with its share of the step's input tokens). Failed steps stand
out; the step a cancel cut short is badged cancelled. A task that ran more than once
(after an answer or an update) shows every run, each under a heading with what the person
said and how that run ended. A replay's report
also shows, per step, how the replay placed each action against the recording.

The page is built from the run's records, which hold no secrets; known secret values
are replaced once more in the finished page as a last line of defence.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from html import escape
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from jarvis.redaction import known_secrets, redact
from jarvis.runs.reader import find_run, folder_name
from jarvis.runs.report_cards import (
    card,
    cut_steps,
    filmstrip,
    fmt_tokens,
)
from jarvis.runs.report_takeovers import takeovers_html
from jarvis.runs.report_tree import tree_meta
from jarvis.runs.run_info import RunInfo, RunPart
from jarvis.runs.step_file import StepFile, load_steps
from jarvis.task_words import shown
from jarvis.usage import Usage

REPORT_FILE = "report.html"
REPLAY_FILE = "replay.json"


class RunNotFound(LookupError):
    """No run of that task id (or no such folder)."""


def locate(data_dir: Path, task_id_or_folder: str) -> Path:
    """The run folder of a task id (its latest run), or a run folder given as a path."""
    candidate = Path(task_id_or_folder)
    if (candidate / "steps").is_dir() or (candidate / "run.json").is_file():
        return candidate
    folder = find_run(data_dir, task_id_or_folder)
    if folder is None:  # steps recorded without a journal (an agent built without one)
        name = folder_name(task_id_or_folder)
        found = sorted((data_dir / "runs").glob(f"*/{name}/steps"), reverse=True)
        folder = found[0].parent if found else None
    if folder is None:
        raise RunNotFound(f"no run of task {task_id_or_folder!r} under {data_dir / 'runs'}")
    return folder


def load_info(folder: Path) -> RunInfo | None:
    """``run.json`` of a run folder (None when it is missing or broken)."""
    try:
        return RunInfo.load(folder)
    except (OSError, ValueError):
        return None


def load_replay(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / REPLAY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# ---------------------------------------------------------------- pieces


def _duration(info: RunInfo | None, steps: list[tuple[Path, StepFile]]) -> float | None:
    start = (info.started if info else None) or (steps[0][1].started if steps else None)
    end = (info.ended if info else None) or (steps[-1][1].ended if steps else None)
    if start is None or end is None:
        return None
    return float(end) - float(start)


def _fmt_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {seconds % 60:.0f} s"


def _meta(info: RunInfo | None, steps: list[tuple[Path, StepFile]], task_id: str) -> str:
    status = info.status if info else "unknown"
    verdict = info.verdict if info else None
    verdict_text = "–"
    if verdict is not None:
        verdict_text = ("done: " if verdict.done else "not done: ") + verdict.reason
    tokens = info.tokens if info and info.tokens != Usage() else _step_tokens(steps)
    cost = info.cost_usd if info else sum(s.cost_usd for _, s in steps)
    model = (info.model if info else "") or "–"
    if info and info.provider:
        model = f"{info.provider} / {model}"
    runs = info.runs if info else []
    rows = [
        ("task id", escape(task_id)),
        ("channel", escape(info.channel if info else "–")),
        ("model", escape(model)),
        *([("server", escape(info.server))] if info and info.server else []),
        ("status", f'<span class="badge {escape(status)}" id="status">{_said(status)}</span>'),
        ("verdict", escape(verdict_text)),
        ("duration", _fmt_seconds(_duration(info, steps))),
        ("steps", str(len(steps))),
        ("tokens", f'<span id="tokens">{fmt_tokens(tokens)}</span>'),
        ("cost", f'<span id="cost">${float(cost):.4f}</span>'),
        *tree_meta(steps, verdict.tree_tokens if verdict is not None else 0),
    ]
    if len(runs) > 1:
        last = runs[-1]
        rows += [
            ("runs", str(len(runs))),
            (
                f"this run ({last.run})",
                f'<span id="run-usage">{fmt_tokens(last.tokens)} · ${last.cost_usd:.4f}</span>',
            ),
        ]
    return "".join(f"<div><dt>{k}</dt><dd>{v}</dd></div>" for k, v in rows)


def _step_tokens(steps: list[tuple[Path, StepFile]]) -> Usage:
    return sum((step.tokens for _, step in steps), Usage())


def _ending(info: RunInfo | None) -> str:
    """How the task ended, said in words (completed, failed, cancelled, waiting for you)."""
    if info is None:
        return ""
    status = info.status
    return (
        f'<p class="ending {escape(status)}" id="ending">'
        f'<span class="badge {escape(status)}">{_said(status)}</span> '
        f"{escape(info.ending)}</p>"
    )


def _said(status: str) -> str:
    """A status as a person reads it (:func:`jarvis.task_words.shown`), escaped."""
    return escape(shown(status))


def _run_head(part: RunPart, count: int) -> str:
    """The heading of one run of a task that ran more than once: when, what the person
    said that started it, and how it ended."""
    when = datetime.fromtimestamp(part.started).strftime("%H:%M:%S") if part.started else ""
    answer = ""
    if part.answer:
        answer = f'<blockquote class="answer">You answered: {escape(part.answer)}</blockquote>'
    return (
        f'<section class="run-head" id="run-{part.run}" data-run="{part.run}">'
        f'<h2>Run {part.run} of {count} <span class="when">{when}</span></h2>{answer}'
        f'<p class="run-ending">{escape(part.ending)} · {part.steps} steps · '
        f"{fmt_tokens(part.tokens)} · ${part.cost_usd:.4f}</p></section>"
    )


def _replay_note(replay: dict[str, Any] | None) -> str:
    if replay is None:
        return ""
    stopped = replay.get("stopped")
    text = f"Replay of task {escape(str(replay.get('of', '')))}"
    text += f" ({replay.get('done', 0)} of {replay.get('total', 0)} actions repeated)"
    if stopped:
        text += f". Stopped: {escape(str(stopped))}"
        return f'<p class="replay-note stopped" id="replay-note">{text}</p>'
    return f'<p class="replay-note" id="replay-note">{text}</p>'


# ---------------------------------------------------------------- the page


def render(folder: Path, data_dir: Path | None = None) -> str:
    """The report of the run in ``folder`` as HTML text."""
    info = load_info(folder)
    steps = load_steps(folder)
    task_id = info.task_id if info else (steps[0][1].task_id if steps else folder.name)
    replay = load_replay(folder)
    original = None
    if replay and data_dir is not None and replay.get("of"):
        original = find_run(data_dir, str(replay["of"]))
    template = Template(
        resources.files("jarvis.runs").joinpath("templates/report.html").read_text("utf-8")
    )
    cut = cut_steps(info, steps)
    page = template.substitute(
        title=escape((info.task if info else "") or task_id),
        task_id=escape(task_id),
        meta=_meta(info, steps, task_id),
        ending=_ending(info),
        replay_note=_replay_note(replay) + takeovers_html(folder),
        filmstrip=filmstrip(steps, cut),
        cards=_cards(info, steps, original, cut) or "<p>This run recorded no steps.</p>",
        written=time.strftime("%Y-%m-%d %H:%M:%S"),
    )
    return redact(page, known_secrets())


def _cards(
    info: RunInfo | None, steps: list[tuple[Path, StepFile]], original: Path | None, cut: set[Path]
) -> str:
    """A card per step; a task that ran more than once gets a heading before each run."""
    runs = {p.run: p for p in info.runs} if info else {}
    out: list[str] = []
    shown: set[int] = set()
    for number, part in runs.items():  # runs that recorded no step still say how they ended
        if len(runs) > 1 and not any(s.run == number for _, s in steps):
            out.append(_run_head(part, len(runs)))
            shown.add(number)
    for folder, step in steps:
        if len(runs) > 1 and step.run not in shown and step.run in runs:
            shown.add(step.run)
            out.append(_run_head(runs[step.run], len(runs)))
        out.append(card(folder, step, original, folder in cut))
    return "\n".join(out)


def write_report(folder: Path, data_dir: Path | None = None, out: Path | None = None) -> Path:
    """Write ``report.html`` into the run folder (or ``out``); returns its path."""
    from jarvis.fsutil import atomic_write_text

    path = out or folder / REPORT_FILE
    atomic_write_text(path, render(folder, data_dir))
    return path


def report_for(data_dir: Path, task_id: str) -> Path:
    """The report of a task's latest run, written now unless one newer than every record
    of the run is there already (for the web panel, the TUI and email replies to link or
    attach). Raises RunNotFound."""
    folder = locate(data_dir, task_id)
    path = folder / REPORT_FILE
    if path.is_file():
        written = path.stat().st_mtime
        newest = max(
            (p.stat().st_mtime for p in folder.rglob("*") if p.is_file() and p != path),
            default=0.0,
        )
        if written >= newest:
            return path
    return write_report(folder, data_dir)
