"""A recording as a run folder `jarvis replay` can repeat: ``steps/NNNN/step.json`` with the
action as a tool call in the model's space, the screen before it (``before.jpg``, whose
pHash the replay compares) and the crop around its pointer (``target.png``, which the
replay finds again on the screen). The replay then acts only where the screen matches,
through a task's safety path (approvals, the kill switch, `jarvis stop`)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from PIL import Image

from jarvis.config import Settings
from jarvis.desktop.screen import phash_hex
from jarvis.geometry import Size, fit_size, screen_to_model
from jarvis.recording.actions import Action
from jarvis.recording.skill_file import RecordedStep, RecordingFile, load_recording
from jarvis.runs.step_file import (
    CallFile,
    Monitor,
    Phashes,
    StepFile,
    Target,
    call_points,
    step_folder,
)

HALF_CROP = 60


class SecretStepError(ValueError):
    """A step typed a secret and no stored secret was named for it."""


def _arguments(action: Action, point: Any, secret: str) -> tuple[str, dict[str, Any]]:
    x, y = point(action.x, action.y)
    if action.kind == "drag":
        ex, ey = point(action.end_x or 0, action.end_y or 0)
        return "drag", {"startX": x, "startY": y, "endX": ex, "endY": ey}
    if action.kind == "middle_click":
        return "click", {"x": x, "y": y}
    if action.kind == "scroll":
        args = {"x": x, "y": y, "direction": action.direction, "amount": action.amount}
        return "scroll", args
    if action.kind == "type":
        if action.secret:
            return "type_secret", {"name": secret}
        return "type", {"text": action.text}
    if action.kind == "hotkey":
        return "hotkey", {"keys": action.keys}
    if action.kind == "press_key":
        return "press_key", {"key": action.keys}
    return action.kind, {"x": x, "y": y}


def as_run_folder(
    folder: Path, data: RecordingFile, max_side: int, secret: str | None = None
) -> Path:
    """Write ``folder/steps/`` for ``data`` (replacing an earlier one); the folder.
    SecretStepError when a step typed a secret and ``secret`` names none."""
    secret_steps = [s.number for s in data.steps if s.action.secret]
    if secret_steps and not secret:
        raise SecretStepError(
            f"step {secret_steps[0]} typed a secret: name the stored secret to type there "
            "with --secret NAME"
        )
    if not data.screen:
        raise ValueError(f"recording {data.name!r} has no pictures to compare with")
    screen = Size(*data.screen)
    model = fit_size(screen, max_side)
    shutil.rmtree(folder / "steps", ignore_errors=True)
    monitor = Monitor(screen=(screen.width, screen.height), model=(model.width, model.height))
    scale = (screen.width / model.width, screen.height / model.height)

    def point(x: int, y: int) -> tuple[int, int]:
        return screen_to_model(x, y, model, screen)

    for step in data.steps:
        out = step_folder(folder, step.number)
        out.mkdir(parents=True)
        name, arguments = _arguments(step.action, point, secret or "")
        call = CallFile(
            id=f"rec-{step.number}",
            name=name,
            arguments=arguments,
            model_points=call_points(name, arguments),
            screen_points=[(step.action.x, step.action.y)] if call_points(name, arguments) else [],
            ok=True,
        )
        phashes = Phashes()
        if step.before:
            size = (model.width, model.height)
            before = Image.open(folder / step.before).convert("RGB").resize(size)
            before.save(out / "before.jpg", quality=80)
            phashes.before = phash_hex(before)
        if step.crop and call.model_points:
            call.target = _target(folder, out, step)
        StepFile(
            task_id=f"recording:{data.slug}",
            step=step.number,
            started=time.time(),
            thought=step.words,
            monitor=monitor,
            scale=scale,
            phash=phashes,
            calls=[call],
        ).save(out)
    return folder


def _target(folder: Path, out: Path, step: RecordedStep) -> Target:
    """The step's crop as the replay's target, with its box on the screen."""
    crop = Image.open(folder / step.crop)
    crop.save(out / "target.png")
    x, y = step.action.x, step.action.y
    left, top, right, bottom = step.action.target.get("crop_box") or (
        x - HALF_CROP,
        y - HALF_CROP,
        x + HALF_CROP,
        y + HALF_CROP,
    )
    box = (int(left), int(top), int(right), int(bottom))
    return Target(file="target.png", box=box, phash=phash_hex(crop))


def recording_run_folder(settings: Settings, name: str, secret: str | None = None) -> Path:
    """The run folder `jarvis replay --recording NAME` repeats (written from the recording
    with the settings' model space)."""
    folder, data = load_recording(settings.data_dir, name)
    return as_run_folder(folder, data, settings.max_side, secret)
