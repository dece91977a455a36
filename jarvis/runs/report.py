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

import base64
import io
import json
import time
from datetime import datetime
from html import escape
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from PIL import Image

from jarvis.redaction import known_secrets, redact
from jarvis.runs.markers import ARROW_DEFS, step_markers
from jarvis.runs.reader import find_run, folder_name
from jarvis.runs.report_takeovers import takeovers_html
from jarvis.runs.report_tree import tree_html, tree_meta
from jarvis.runs.run_info import RunInfo, RunPart
from jarvis.runs.step_file import CallFile, StepFile, load_steps, step_folder
from jarvis.usage import Usage

REPORT_FILE = "report.html"
REPLAY_FILE = "replay.json"
TIMING_PARTS = ("capture", "model", "act", "settle")
_THUMB_WIDTH = 240


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


def data_uri(path: Path) -> str:
    kind = "image/png" if path.suffix == ".png" else "image/jpeg"
    return f"data:{kind};base64,{base64.b64encode(path.read_bytes()).decode()}"


def thumbnail_uri(path: Path, width: int = _THUMB_WIDTH) -> str:
    with Image.open(path) as opened:
        image = opened.convert("RGB")
    image.thumbnail((width, width * 4))
    buf = io.BytesIO()
    image.save(buf, "JPEG", quality=70)
    return f"data:image/jpeg;base64,{base64.b64encode(buf.getvalue()).decode()}"


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


def _fmt_tokens(tokens: Usage) -> str:
    return (
        f"{tokens.input_tokens} in · {tokens.output_tokens} out · {tokens.cache_read_tokens} cached"
    )


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
        ("status", f'<span class="badge {escape(status)}" id="status">{escape(status)}</span>'),
        ("verdict", escape(verdict_text)),
        ("duration", _fmt_seconds(_duration(info, steps))),
        ("steps", str(len(steps))),
        ("tokens", f'<span id="tokens">{_fmt_tokens(tokens)}</span>'),
        ("cost", f'<span id="cost">${float(cost):.4f}</span>'),
        *tree_meta(steps, verdict.tree_tokens if verdict is not None else 0),
    ]
    if len(runs) > 1:
        last = runs[-1]
        rows += [
            ("runs", str(len(runs))),
            (
                f"this run ({last.run})",
                f'<span id="run-usage">{_fmt_tokens(last.tokens)} · ${last.cost_usd:.4f}</span>',
            ),
        ]
    return "".join(f"<div><dt>{k}</dt><dd>{v}</dd></div>" for k, v in rows)


def _step_tokens(steps: list[tuple[Path, StepFile]]) -> Usage:
    return sum((step.tokens for _, step in steps), Usage())


def _ending(info: RunInfo | None) -> str:
    """How the task ended, said in words (finished, failed, cancelled, needs you)."""
    if info is None:
        return ""
    status = info.status
    return (
        f'<p class="ending {escape(status)}" id="ending">'
        f'<span class="badge {escape(status)}">{escape(status)}</span> '
        f"{escape(info.ending)}</p>"
    )


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
        f"{_fmt_tokens(part.tokens)} · ${part.cost_usd:.4f}</p></section>"
    )


def _filmstrip(steps: list[tuple[Path, StepFile]], cancelled: set[Path]) -> str:
    parts = []
    for folder, step in steps:
        picture = folder / step.before
        if not picture.is_file():
            continue
        failed = " failed" if _failed(step) and folder not in cancelled else ""
        parts.append(
            f'<a class="frame{failed}" href="#{_anchor(step)}">'
            f'<img alt="{_label(step)}" src="{thumbnail_uri(picture, 150)}">'
            f"{_label(step)}</a>"
        )
    return "".join(parts)


def _anchor(step: StepFile) -> str:
    return f"step-{step.step}" if step.run <= 1 else f"step-r{step.run}-{step.step}"


def _label(step: StepFile) -> str:
    return f"step {step.step}" if step.run <= 1 else f"run {step.run} step {step.step}"


def _cut_steps(info: RunInfo | None, steps: list[tuple[Path, StepFile]]) -> set[Path]:
    """The steps a cancel cut short: the last step of each run that ended cancelled (it
    is recorded as failed, but nothing failed: a person stopped it)."""
    if info is None:
        return set()
    last: dict[int, Path] = {}
    for folder, step in steps:
        last[step.run] = folder
    ended = {p.run for p in info.runs if p.status == "cancelled"}
    return {folder for run, folder in last.items() if run in ended}


def _failed(step: StepFile) -> bool:
    stopped = bool(step.replay and step.replay.get("stopped"))
    return step.result == "failed" or stopped or any(c.ok is False for c in step.calls)


def _call_row(call: CallFile) -> str:
    args = json.dumps(call.arguments, ensure_ascii=False)
    if call.ok is None:
        result = '<span class="result">not run</span>'
    elif call.ok:
        data = "" if call.data in (None, {}) else json.dumps(call.data, ensure_ascii=False)
        result = f'<span class="result ok">ok</span> <code>{escape(data[:300])}</code>'
    else:
        error = call.error or {}
        result = (
            f'<span class="result bad">error {escape(str(error.get("code", "")))}</span> '
            f"{escape(str(error.get('message', '')))}"
        )
    window = call.window or call.focus
    where = f'<div class="win">{escape(window.label())}</div>' if window and window.known else ""
    latency = f"{call.latency_ms:.0f} ms" if call.latency_ms is not None else ""
    bad = " bad" if call.ok is False else ""
    return (
        f'<tr class="call{bad}"><td><b>{escape(call.name)}</b></td>'
        f"<td><code>{escape(args)}</code>{where}</td><td>{result}</td><td>{latency}</td></tr>"
    )


def _timing(step: StepFile) -> str:
    parts = [(k, float(step.timings_ms.get(k, 0.0))) for k in TIMING_PARTS]
    total = sum(v for _, v in parts) or 1.0
    bar = "".join(
        f'<span class="{k}" style="width:{100 * v / total:.2f}%" title="{k} {v:.0f} ms"></span>'
        for k, v in parts
    )
    return f'<div class="timing">{bar}</div><div class="legend">{_legend(parts)}</div>'


def _legend(parts: list[tuple[str, float]]) -> str:
    colours = {"capture": "#8ab4f8", "model": "#a142f4", "act": "#f29900", "settle": "#34a853"}
    return (
        "".join(f'<i style="background:{colours[k]}"></i>{k} {v:.0f} ms' for k, v in parts)
        + f" · total {sum(v for _, v in parts):.0f} ms"
    )


def _diff(step: StepFile, original: Path | None) -> str:
    replay = step.replay
    if not replay:
        return ""
    lines = []
    for item in replay.get("calls", []):
        method = str(item.get("method", ""))
        text = f'<span class="badge {escape(method)}">{escape(method)}</span> '
        text += escape(str(item.get("name", "")))
        if item.get("offset") is not None:
            dx, dy = item["offset"]
            text += f" · offset ({dx:+d}, {dy:+d}) px"
        if item.get("score") is not None:
            text += f" · match {float(item['score']):.3f}"
        if item.get("reason"):
            text += f" · {escape(str(item['reason']))}"
        lines.append(f"<div>{text}</div>")
    distance = replay.get("phash_distance")
    head = f"Replay of step {replay.get('of_step')}"
    if distance is not None:
        head += f": screen differs from the recording by {distance} pHash bits"
    picture = ""
    of_step = replay.get("of_step")
    if original is not None and of_step is not None:
        of_run = int(replay.get("of_run") or 1)
        recorded = step_folder(original, int(of_step), of_run) / "before.jpg"
        if recorded.is_file():
            picture = (
                '<div class="recorded">the recording\'s screen before this step'
                f'<img alt="recorded before" src="{thumbnail_uri(recorded, 320)}"></div>'
            )
    stopped = " stopped" if replay.get("stopped") else ""
    return f'<div class="diff{stopped}"><b>{escape(head)}</b>{"".join(lines)}{picture}</div>'


def _card(folder: Path, step: StepFile, original: Path | None, cut: bool) -> str:
    picture = folder / step.before
    width, height = step.monitor.model
    shot = ""
    if picture.is_file():
        shot = (
            f'<div class="shot"><img class="shot-img" alt="{_label(step)} before" '
            f'width="{width}" height="{height}" src="{data_uri(picture)}">'
            f'<svg class="overlay" viewBox="0 0 {width} {height}" preserveAspectRatio="none" '
            f'xmlns="http://www.w3.org/2000/svg">{ARROW_DEFS}{step_markers(step)}</svg></div>'
        )
    after = ""
    if step.after and (folder / step.after).is_file():
        after = (
            f'<div class="after">after<img alt="step {step.step} after" '
            f'src="{thumbnail_uri(folder / step.after, 320)}"></div>'
        )
    failed = _failed(step) and not cut
    result = "cancelled" if cut else "failed" if failed else "success"
    when = datetime.fromtimestamp(step.started).strftime("%H:%M:%S")
    reflection = f'<p class="reflection">{escape(step.reflection)}</p>' if step.reflection else ""
    rows = "".join(_call_row(c) for c in step.calls) or (
        '<tr><td colspan="4">no tool call</td></tr>'
    )
    tokens = step.tokens
    return (
        f'<section class="step{" failed" if failed else ""}" id="{_anchor(step)}" '
        f'data-step="{step.step}" data-run="{step.run}" '
        f'data-scale="{step.scale[0]},{step.scale[1]}">'
        f'<h2>{_label(step).capitalize()} <span class="badge {result}">{result}</span>'
        f'<span class="when">{when}</span></h2>'
        f'<div class="body"><div>{shot}{after}</div><div>{reflection}'
        f'<p class="thought">{escape(step.thought) or "<i>(no thought)</i>"}</p>'
        f'<table class="calls">{rows}</table>{_timing(step)}'
        f'<div class="tokens">{_fmt_tokens(tokens)} tokens · ${step.cost_usd:.4f}</div>'
        f"{tree_html(step, _anchor(step))}{_diff(step, original)}</div></div></section>"
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
    cut = _cut_steps(info, steps)
    page = template.substitute(
        title=escape((info.task if info else "") or task_id),
        task_id=escape(task_id),
        meta=_meta(info, steps, task_id),
        ending=_ending(info),
        replay_note=_replay_note(replay) + takeovers_html(folder),
        filmstrip=_filmstrip(steps, cut),
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
        out.append(_card(folder, step, original, folder in cut))
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
