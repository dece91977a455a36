"""A recording on disk: ``DATA/recordings/SLUG/`` with ``skill.md`` (the steps in words,
their targets and crops, for people and for the agent's memory), ``recording.json`` (the
steps as data, for `jarvis replay --recording`) and the pictures (``NNN-before.jpg``,
``NNN-after.jpg``, ``NNN-target.png``)."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from jarvis.fsutil import atomic_write_text
from jarvis.recording.actions import SECRET_TYPED, Action
from jarvis.recording.recorder import Recording, recordings_dir
from jarvis.redaction import redact

SLUG = re.compile(r"[^a-z0-9]+")


class RecordedStep(BaseModel):
    number: int
    action: Action
    words: str
    before: str = ""
    after: str = ""
    crop: str = ""


class RecordingFile(BaseModel):
    """``recording.json``."""

    name: str
    slug: str
    created: str
    screen: list[int] = Field(default_factory=list)
    steps: list[RecordedStep] = Field(default_factory=list)


def slug_of(name: str) -> str:
    slug = SLUG.sub("-", name.lower()).strip("-")[:60]
    if not slug:
        raise ValueError(f"{name!r} cannot name a recording: use letters or digits")
    return slug


def _target_words(target: dict[str, Any], x: int, y: int, pointer: bool) -> str:
    if target.get("role"):
        name = target.get("name") or ""
        what = f'the {target["role"]} "{name}"' if name else f"the {target['role']}"
    else:
        what = f"({x}, {y})" if pointer else "the focused field"
    window = target.get("window")
    return f"{what} in the window {window!r}" if window else what


def describe(action: Action) -> str:
    """One step in words."""
    pointer = action.kind not in ("type", "hotkey", "press_key")
    where = _target_words(action.target, action.x, action.y, pointer)
    if action.kind == "type" and action.secret:
        return (
            f"Type a secret into {where} ({SECRET_TYPED}: call type_secret with the "
            "stored secret's name; never type it as text)"
        )
    words = {
        "click": f"Click {where}",
        "double_click": f"Double-click {where}",
        "right_click": f"Right-click {where}",
        "middle_click": f"Middle-click {where}",
        "drag": f"Drag from {where} to ({action.end_x}, {action.end_y})",
        "scroll": f"Scroll {action.direction} {action.amount} at {where}",
        "type": f"Type {action.text!r} into {where}",
        "hotkey": f"Press {action.keys} (in {where})",
        "press_key": f"Press {action.keys} (in {where})",
    }
    return words[action.kind]


def write_recording(data_dir: Path, name: str, recording: Recording) -> Path:
    """Write the recording's folder (replacing one of the same name); its ``skill.md``."""
    slug = slug_of(name)
    folder = recordings_dir(data_dir) / slug
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*-*.*"):
        old.unlink()
    steps: list[RecordedStep] = []
    for number, step in enumerate(recording.steps, 1):
        files: dict[str, str] = {}
        for kind, image, ext in (
            ("before", step.before, "jpg"),
            ("after", step.after, "jpg"),
            ("crop", step.crop, "png"),
        ):
            if image is not None:
                file = f"{number:03d}-{'target' if kind == 'crop' else kind}.{ext}"
                image.save(folder / file, quality=80) if ext == "jpg" else image.save(folder / file)
                files[kind] = file
        action = step.action.model_copy(update={"text": redact(step.action.text)})
        steps.append(RecordedStep(number=number, action=action, words=describe(action), **files))
    size = next((list(s.before.size) for s in recording.steps if s.before is not None), [])
    created = datetime.now().astimezone().isoformat(timespec="seconds")
    data = RecordingFile(name=name, slug=slug, created=created, screen=size, steps=steps)
    atomic_write_text(folder / "recording.json", data.model_dump_json(indent=2) + "\n")
    atomic_write_text(folder / "skill.md", skill_markdown(data))
    return folder / "skill.md"


def skill_markdown(data: RecordingFile) -> str:
    lines = [
        f"# {data.name}",
        "",
        f"A skill recorded by a person on {data.created} ({len(data.steps)} steps). "
        "Follow it, adapting to what the screen shows.",
        "",
        "## Steps",
        "",
    ]
    for step in data.steps:
        lines.append(f"{step.number}. {step.words}")
        if step.crop:
            lines.append(f"   ![target of step {step.number}]({step.crop})")
    return "\n".join(lines) + "\n"


def procedure(data: RecordingFile) -> str:
    """The steps as the long-term memory keeps them (no picture links)."""
    return "\n".join(f"{s.number}. {s.words}" for s in data.steps)


def load_recording(data_dir: Path, name: str) -> tuple[Path, RecordingFile]:
    """The folder and data of a recording by its name or slug; FileNotFoundError when
    there is none."""
    folder = recordings_dir(data_dir) / slug_of(name)
    path = folder / "recording.json"
    if not path.is_file():
        raise FileNotFoundError(f"no recording named {name!r} in {recordings_dir(data_dir)}")
    return folder, RecordingFile.model_validate(json.loads(path.read_text(encoding="utf-8")))
