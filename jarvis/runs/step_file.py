"""``steps/NNNN/step.json``: what one step did, in the terms a report and a replay need.

One :class:`StepFile` per step of a run (``runs/DATE/TASK_ID/steps/0001/``; a task's
later runs, after an answer or a merged update, as ``steps/r2-0001/``, ``r3-...``), beside
``before.jpg`` (the screenshot the model saw, in model space), ``after.jpg`` (the screen
once the step's actions settled) and ``target.png`` (a crop of about 96 screen pixels
around the first pointer target, taken from the screen just before the call; further
pointer calls of the step get ``target-N.png``, N their 1-based position). Coordinates
of ``model_points`` are in the screenshot's pixel space, ``screen_points`` in absolute
logical screen pixels; ``scale`` is screen pixels per model pixel on each axis.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator

from jarvis.desktop.windows import WindowInfo
from jarvis.runs.run_info import usage_of
from jarvis.usage import Usage

STEP_FILE = "step.json"
STEPS_DIR = "steps"
POINTER_TOOLS = frozenset(
    {"click", "double_click", "triple_click", "right_click", "mouse_move", "drag", "scroll"}
)
KEY_TOOLS = frozenset({"type", "hotkey", "press_key"})
_STEP_NAME = re.compile(r"(?:r(\d+)-)?(\d{4,})")


class Monitor(BaseModel):
    index: int = 1
    origin: tuple[int, int] = (0, 0)
    screen: tuple[int, int]
    """Logical size (what input coordinates address)."""
    model: tuple[int, int]
    physical: tuple[int, int] | None = None


class Target(BaseModel):
    """The crop around a pointer target, cut from the screen at full resolution."""

    file: str
    box: tuple[int, int, int, int]
    """left, top, right, bottom of the crop in absolute logical screen pixels."""
    phash: str


class CallFile(BaseModel):
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    """As the model sent them, with secrets replaced by ``[REDACTED]``."""
    model_points: list[tuple[int, int]] = Field(default_factory=list)
    screen_points: list[tuple[int, int]] = Field(default_factory=list)
    target: Target | None = None
    window: WindowInfo | None = None
    """The top-level window under the first point when the call started."""
    focus: WindowInfo | None = None
    """The window that had the keyboard when the call started."""
    ok: bool | None = None
    error: dict[str, Any] | None = None
    data: Any = None
    latency_ms: float | None = None
    cancelled: bool = False
    """Cut short by a cancel, a stop or the kill switch: not an error."""
    redacted: bool = False
    """True when a secret was cut out of the arguments (a replay cannot repeat the call)."""


class Phashes(BaseModel):
    before: str = ""
    after: str = ""


class StepFile(BaseModel):
    task_id: str
    step: int
    run: int = 1
    """Which run of the task (2, 3... after an answer or a merged update)."""
    started: float
    """Unix seconds when the step's screenshot was taken."""
    ended: float | None = None
    thought: str = ""
    reflection: str = ""
    result: str = "success"
    monitor: Monitor
    scale: tuple[float, float]
    phash: Phashes = Field(default_factory=Phashes)
    calls: list[CallFile] = Field(default_factory=list)
    timings_ms: dict[str, float] = Field(default_factory=dict)
    tokens: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    before: str = "before.jpg"
    after: str | None = None
    replay: dict[str, Any] | None = None
    """For a replay's steps: what was compared and how the action was placed."""
    tree: str = ""
    """The accessibility tree's text sent beside the screenshot (the ``observation``
    setting), or the note that there was none."""
    tree_tokens: int = 0
    """The tokens the tree adds to the step's request (four bytes a token, as the cost
    model counts text); part of the step's input tokens."""

    _tokens = field_validator("tokens", mode="before")(lambda v: usage_of(v))

    def save(self, folder: Path) -> None:
        from jarvis.fsutil import atomic_write_text

        atomic_write_text(folder / STEP_FILE, self.model_dump_json(indent=2) + "\n")

    @classmethod
    def load(cls, folder: Path) -> StepFile:
        return cls.model_validate(json.loads((folder / STEP_FILE).read_text(encoding="utf-8")))


def step_folder(run_folder: Path, step: int, run: int = 1) -> Path:
    """``steps/NNNN`` for the task's first run, ``steps/rK-NNNN`` for its run K (K >= 2)."""
    name = f"{step:04d}" if run <= 1 else f"r{run}-{step:04d}"
    return run_folder / STEPS_DIR / name


def parse_step_folder(name: str) -> tuple[int, int] | None:
    """(run, step) of a step folder's name, or None when it is not one."""
    match = _STEP_NAME.fullmatch(name)
    if match is None:
        return None
    return int(match[1] or 1), int(match[2])


def load_steps(run_folder: Path) -> list[tuple[Path, StepFile]]:
    """The step records of every run of a task, in run and step order (folders without a
    readable record skipped)."""
    root = run_folder / STEPS_DIR
    if not root.is_dir():
        return []
    found = []
    for folder in root.iterdir():
        key = parse_step_folder(folder.name) if folder.is_dir() else None
        if key is not None:
            found.append((key, folder))
    out = []
    for _, folder in sorted(found):
        try:
            out.append((folder, StepFile.load(folder)))
        except (OSError, ValueError):
            continue
    return out


def call_points(name: str, arguments: dict[str, Any]) -> list[tuple[int, int]]:
    """The model-space points a call acts on (start and end for a drag)."""
    try:
        if name == "drag":
            return [
                (int(arguments["startX"]), int(arguments["startY"])),
                (int(arguments["endX"]), int(arguments["endY"])),
            ]
        if name in POINTER_TOOLS:
            return [(int(arguments["x"]), int(arguments["y"]))]
    except (KeyError, TypeError, ValueError):
        return []
    return []
