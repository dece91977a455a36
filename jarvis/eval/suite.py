"""An eval suite: a folder of YAML task files (in the spirit of OSWorld's task configs).

One task per file (``*.yaml``, sorted by name)::

    id: mousepad-note                 # default: the file's stem
    task: Write "Dear diary" in the open note and save it.
    screen: 1280x800                  # the virtual display (default 1280x800)
    files:                            # written into the task's work folder ($WORK) first
      note.txt: ""
    setup:                            # in order, with DISPLAY, XAUTHORITY and WORK set
      - run: mousepad "$WORK/note.txt"
        background: true              # keep it running (stopped after the check)
        wait_window: Mousepad         # until a window of this class (or title) is mapped
      - run: test -f "$WORK/note.txt" # a foreground command must exit 0
    budget: {steps: 5, seconds: 60}
    check:                            # a command (exit 0 passes; its output says why not)
      command: grep -qx "Dear diary" "$WORK/note.txt"
    # or a Python function: check: {python: "jarvis.eval.checks:file_equals",
    #                                args: {path: note.txt, text: "Dear diary"}}
    # either may wait for the state to appear: check: {..., wait_s: 3}
    oracle:                           # the scripted model: one list of tool calls per step
      - - {click: {x: 300, y: 300}}
        - {type: {text: Dear diary}}
      - - {hotkey: {keys: ctrl+s}}
      - - {finished: {summary: saved}}

Commands run with ``sh -c``; ``$WORK``, ``$SUITE`` (the suite folder), ``$PYTHON`` and
``$DISPLAY`` are in their environment, and ``$HOME`` is a fresh folder under ``$WORK``
(every application starts as on a new machine). Coordinates in the oracle are in the
model's screenshot space, which equals the screen when its longest side is at most
``max_side`` (1280).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

SHIPPED = Path(__file__).parent / "suites"
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class SuiteError(ValueError):
    """A suite or task file is missing or malformed; the message names the file."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SetupStep(Strict):
    run: str
    background: bool = False
    wait_window: str | None = None
    """A window class or title (substring) to wait for after starting the command."""
    timeout_s: float = Field(20.0, gt=0)


class Budget(Strict):
    steps: int = Field(10, ge=1, le=200)
    seconds: float = Field(120.0, gt=0)


class Check(Strict):
    command: str | None = None
    python: str | None = None
    """``module:function``; called as ``fn(context, **args)``, returns ``(ok, reason)``."""
    args: dict[str, Any] = Field(default_factory=dict)
    wait_s: float = Field(0.0, ge=0, le=60)
    """Judge again until it passes or this much time has gone (for state that lags)."""

    @model_validator(mode="after")
    def _one_kind(self) -> Check:
        if (self.command is None) == (self.python is None):
            raise ValueError("a check is either a command or a python function, exactly one")
        if self.python is not None and ":" not in self.python:
            raise ValueError("python checks are written module:function")
        return self


OracleCall = dict[str, dict[str, Any]]


class EvalTask(Strict):
    id: str
    task: str = Field(min_length=1)
    screen: str = "1280x800"
    files: dict[str, str] = Field(default_factory=dict)
    setup: list[SetupStep] = Field(default_factory=list)
    budget: Budget = Field(default_factory=Budget)
    check: Check
    oracle: list[list[OracleCall]] = Field(default_factory=list)
    window_manager: bool = False
    """Start the display's window manager (it maximizes windows, as OSWorld's image)."""
    source: str = ""
    """The YAML file (filled in by the loader)."""

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not _ID.match(value):
            raise ValueError(f"id {value!r}: letters, digits, '-', '_', '.', at most 64")
        return value

    @field_validator("files")
    @classmethod
    def _relative(cls, files: dict[str, str]) -> dict[str, str]:
        for name in files:
            path = Path(name)
            if path.is_absolute() or ".." in path.parts:
                raise ValueError(f"file {name!r} must stay inside the work folder")
        return files

    @field_validator("oracle")
    @classmethod
    def _calls(cls, steps: list[list[OracleCall]]) -> list[list[OracleCall]]:
        for number, step in enumerate(steps, 1):
            for call in step:
                if len(call) != 1:
                    raise ValueError(f"oracle step {number}: one tool name per call, got {call}")
        return steps

    @property
    def size(self) -> tuple[int, int]:
        width, _, height = self.screen.lower().partition("x")
        return int(width), int(height)


def resolve_suite(name_or_path: str) -> Path:
    """A suite folder: a path, or the name of a suite shipped with Jarvis (``starter``)."""
    path = Path(name_or_path)
    if path.is_dir():
        return path
    shipped = SHIPPED / name_or_path
    if _ID.match(name_or_path) and shipped.is_dir():
        return shipped
    raise SuiteError(f"no suite {name_or_path!r}: not a folder, and not one of {shipped_names()}")


def shipped_names() -> list[str]:
    return sorted(p.name for p in SHIPPED.iterdir() if p.is_dir() and not p.name.startswith("_"))


def load_task(path: Path) -> EvalTask:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise SuiteError(f"{path}: cannot read it: {exc}") from exc
    if not isinstance(data, dict):
        raise SuiteError(f"{path}: the top level must be a mapping")
    data.setdefault("id", path.stem)
    try:
        task = EvalTask.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors()
        )
        raise SuiteError(f"{path}: {problems}") from exc
    task.source = str(path)
    return task


def load_suite(folder: Path, only: list[str] | None = None) -> list[EvalTask]:
    """The tasks of a suite folder, sorted by file name; ``only`` keeps those ids."""
    files = sorted(folder.glob("*.yaml"))
    if not files:
        raise SuiteError(f"{folder}: no task files (*.yaml)")
    tasks = [load_task(f) for f in files]
    seen: set[str] = set()
    for task in tasks:
        if task.id in seen:
            raise SuiteError(f"{folder}: two tasks have the id {task.id!r}")
        seen.add(task.id)
    if only:
        unknown = sorted(set(only) - seen)
        if unknown:
            raise SuiteError(f"{folder}: no task {', '.join(unknown)}")
        tasks = [t for t in tasks if t.id in only]
    return tasks
