"""``report.html``: one self-contained page that shows what a run did.

Everything is in the file: the template ships in the package
(``jarvis/runs/templates/report.html``), pictures are inline ``data:`` URIs, and a
Content-Security-Policy forbids fetching anything else. Parts: a header (task, channel,
model, status, verdict, duration, tokens, cost), a filmstrip, and a card per step with
the screenshot and its markers (:mod:`jarvis.runs.markers`), the thought, the calls and
their results, a timing bar and the tokens. Failed steps stand out. A replay's report
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
from jarvis.runs.step_file import CallFile, StepFile, load_steps

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


def load_info(folder: Path) -> dict[str, Any]:
    """``run.json`` of a run folder ({} when it is missing or broken)."""
    try:
        info = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


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


def _duration(info: dict[str, Any], steps: list[tuple[Path, StepFile]]) -> float | None:
    start = info.get("started") or (steps[0][1].started if steps else None)
    end = info.get("ended") or (steps[-1][1].ended if steps else None)
    if start is None or end is None:
        return None
    return float(end) - float(start)


def _fmt_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {seconds % 60:.0f} s"


def _tokens(info: dict[str, Any], steps: list[tuple[Path, StepFile]]) -> dict[str, int]:
    tokens = info.get("tokens")
    if isinstance(tokens, dict) and any(tokens.values()):
        return {k: int(v or 0) for k, v in tokens.items()}
    total = {"input": 0, "output": 0, "cache_read": 0}
    for _, step in steps:
        for key in total:
            total[key] += int(step.tokens.get(key, 0))
    return total


def _meta(info: dict[str, Any], steps: list[tuple[Path, StepFile]], task_id: str) -> str:
    status = str(info.get("status") or "unknown")
    verdict = info.get("verdict")
    if isinstance(verdict, dict):
        verdict_text = ("done: " if verdict.get("done") else "not done: ") + str(
            verdict.get("reason", "")
        )
    else:
        verdict_text = "–"
    tokens = _tokens(info, steps)
    cost = info.get("cost_usd")
    if cost is None:
        cost = sum(s.cost_usd for _, s in steps)
    model = str(info.get("model") or "–")
    if info.get("provider"):
        model = f"{info['provider']} / {model}"
    rows = [
        ("task id", escape(task_id)),
        ("channel", escape(str(info.get("channel") or "–"))),
        ("model", escape(model)),
        ("status", f'<span class="badge {escape(status)}" id="status">{escape(status)}</span>'),
        ("verdict", escape(verdict_text)),
        ("duration", _fmt_seconds(_duration(info, steps))),
        ("steps", str(len(steps))),
        (
            "tokens",
            f"{tokens.get('input', 0)} in · {tokens.get('output', 0)} out · "
            f"{tokens.get('cache_read', 0)} cached",
        ),
        ("cost", f"${float(cost):.4f}"),
    ]
    return "".join(f"<div><dt>{k}</dt><dd>{v}</dd></div>" for k, v in rows)


def _filmstrip(steps: list[tuple[Path, StepFile]]) -> str:
    parts = []
    for folder, step in steps:
        picture = folder / step.before
        if not picture.is_file():
            continue
        failed = " failed" if _failed(step) else ""
        parts.append(
            f'<a class="frame{failed}" href="#step-{step.step}">'
            f'<img alt="step {step.step}" src="{thumbnail_uri(picture, 150)}">'
            f"step {step.step}</a>"
        )
    return "".join(parts)


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
        recorded = original / "steps" / f"{int(of_step):04d}" / "before.jpg"
        if recorded.is_file():
            picture = (
                '<div class="recorded">the recording\'s screen before this step'
                f'<img alt="recorded before" src="{thumbnail_uri(recorded, 320)}"></div>'
            )
    stopped = " stopped" if replay.get("stopped") else ""
    return f'<div class="diff{stopped}"><b>{escape(head)}</b>{"".join(lines)}{picture}</div>'


def _card(folder: Path, step: StepFile, original: Path | None) -> str:
    picture = folder / step.before
    width, height = step.monitor.model
    shot = ""
    if picture.is_file():
        shot = (
            f'<div class="shot"><img class="shot-img" alt="step {step.step} before" '
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
    failed = _failed(step)
    result = "failed" if failed else "success"
    when = datetime.fromtimestamp(step.started).strftime("%H:%M:%S")
    reflection = f'<p class="reflection">{escape(step.reflection)}</p>' if step.reflection else ""
    rows = "".join(_call_row(c) for c in step.calls) or (
        '<tr><td colspan="4">no tool call</td></tr>'
    )
    tokens = step.tokens
    return (
        f'<section class="step{" failed" if failed else ""}" id="step-{step.step}" '
        f'data-step="{step.step}" data-scale="{step.scale[0]},{step.scale[1]}">'
        f'<h2>Step {step.step} <span class="badge {result}">{result}</span>'
        f'<span class="when">{when}</span></h2>'
        f'<div class="body"><div>{shot}{after}</div><div>{reflection}'
        f'<p class="thought">{escape(step.thought) or "<i>(no thought)</i>"}</p>'
        f'<table class="calls">{rows}</table>{_timing(step)}'
        f'<div class="tokens">{tokens.get("input", 0)} in · {tokens.get("output", 0)} out · '
        f"{tokens.get('cache_read', 0)} cached tokens · ${step.cost_usd:.4f}</div>"
        f"{_diff(step, original)}</div></div></section>"
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
    task_id = str(info.get("task_id") or (steps[0][1].task_id if steps else folder.name))
    replay = load_replay(folder)
    original = None
    if replay and data_dir is not None and replay.get("of"):
        original = find_run(data_dir, str(replay["of"]))
    template = Template(
        resources.files("jarvis.runs").joinpath("templates/report.html").read_text("utf-8")
    )
    page = template.substitute(
        title=escape(str(info.get("task") or task_id)),
        task_id=escape(task_id),
        meta=_meta(info, steps, task_id),
        replay_note=_replay_note(replay),
        filmstrip=_filmstrip(steps),
        cards="\n".join(_card(f, s, original) for f, s in steps)
        or "<p>This run recorded no steps.</p>",
        written=time.strftime("%Y-%m-%d %H:%M:%S"),
    )
    return redact(page, known_secrets())


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
