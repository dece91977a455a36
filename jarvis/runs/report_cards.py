"""The step cards of ``report.html`` (see :mod:`jarvis.runs.report`): the filmstrip, and a
card per step with its screenshot and markers, the calls and their results, the timing
bar and, for a replay, the picture the recording had; pictures as inline ``data:`` URIs."""

from __future__ import annotations

import base64
import io
import json
from datetime import datetime
from html import escape
from pathlib import Path

from PIL import Image

from jarvis.runs.markers import ARROW_DEFS, step_markers
from jarvis.runs.report_tree import tree_html
from jarvis.runs.run_info import RunInfo
from jarvis.runs.step_file import CallFile, StepFile, step_folder
from jarvis.usage import Usage

TIMING_PARTS = ("capture", "model", "act", "settle")
THUMB_WIDTH = 240


def data_uri(path: Path) -> str:
    kind = "image/png" if path.suffix == ".png" else "image/jpeg"
    return f"data:{kind};base64,{base64.b64encode(path.read_bytes()).decode()}"


def thumbnail_uri(path: Path, width: int = THUMB_WIDTH) -> str:
    with Image.open(path) as opened:
        image = opened.convert("RGB")
    image.thumbnail((width, width * 4))
    buf = io.BytesIO()
    image.save(buf, "JPEG", quality=70)
    return f"data:image/jpeg;base64,{base64.b64encode(buf.getvalue()).decode()}"


def filmstrip(steps: list[tuple[Path, StepFile]], cancelled: set[Path]) -> str:
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


def cut_steps(info: RunInfo | None, steps: list[tuple[Path, StepFile]]) -> set[Path]:
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
    return step.result == "failed" or stopped or any(_bad(c) for c in step.calls)


def _bad(call: CallFile) -> bool:
    return call.ok is False and not call.cancelled


def _call_row(call: CallFile) -> str:
    args = json.dumps(call.arguments, ensure_ascii=False)
    if call.ok is None:
        result = '<span class="result">not run</span>'
    elif call.cancelled:
        result = '<span class="result">cancelled</span> the task was stopped during this call'
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
    bad = " bad" if _bad(call) else ""
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


def card(folder: Path, step: StepFile, original: Path | None, cut: bool) -> str:
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
        f'<div class="tokens">{fmt_tokens(tokens)} tokens · ${step.cost_usd:.4f}</div>'
        f"{tree_html(step, _anchor(step))}{_diff(step, original)}</div></div></section>"
    )


def fmt_tokens(tokens: Usage) -> str:
    return (
        f"{tokens.input_tokens} in · {tokens.output_tokens} out · {tokens.cache_read_tokens} cached"
    )
