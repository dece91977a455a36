"""``run.json``: what a task's runs were and how each ended, as one pydantic model.

A task runs more than once when a person answers its ``call_user`` question or an update
is merged into it: every run is kept. :class:`RunInfo` is the whole task (its title, its
totals over all runs, how its latest run ended) and ``runs`` holds each run
(:class:`RunPart`: its number, times, ending, the person's answer that started it, its own
tokens and cost). The journal writes it (an event's numbers go in by
:meth:`RunInfo.record`), the reader, the report and the API read it; nothing else builds or
parses ``run.json``. :class:`RunSummary` is the part a listing shows (``jarvis runs``,
``GET /api/runs``), kept in the run index so a page opens no ``run.json``.

Files written before runs were kept (``tokens`` as ``{"input", "output", "cache_read"}``,
no ``runs``) still load: their one run is rebuilt from the top-level fields. ``status`` is
in the API's words (:mod:`jarvis.task_words`); a file written with the older ``running`` or
``finished`` loads as ``in_progress`` or ``completed``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, computed_field, field_validator, model_validator

from jarvis.events import (
    Event,
    ModelServer,
    StepFinished,
    TaskFinished,
    TaskStarted,
    VerificationFinished,
)
from jarvis.task_words import shown, status_word
from jarvis.usage import Usage

RUN_FILE = "run.json"
_UPDATE_LABEL = re.compile(r"^Update(?: \([^)\n]*\))?:[ \t]*\n?", re.MULTILINE)
_LEGACY_TOKENS = {
    "input": "input_tokens",
    "output": "output_tokens",
    "cache_read": "cache_read_tokens",
}


def usage_of(value: Any) -> Any:
    """A ``tokens`` value as :class:`Usage` fields (the short keys of older files too)."""
    if isinstance(value, dict):
        return {_LEGACY_TOKENS.get(k, k): v for k, v in value.items()}
    return value


class Verdict(BaseModel):
    done: bool
    reason: str = ""
    tree_tokens: int = 0
    """The accessibility tree's tokens in the verification's input."""


class RunPart(BaseModel):
    """One run of a task."""

    run: int = 1
    started: float | None = None
    ended: float | None = None
    status: str = "in_progress"
    """in_progress, then completed, failed, needs_user or cancelled."""
    summary: str = ""
    """The finish summary, the failure's reason, or the question (needs_user)."""
    verdict: Verdict | None = None
    stopped_by: str | None = None
    answer: str = ""
    """What the person said (an answer or a merged update) that started this run."""
    steps: int = 0
    tokens: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    first_seq: int | None = None
    last_seq: int | None = None

    _tokens = field_validator("tokens", mode="before")(lambda v: usage_of(v))
    _status = field_validator("status", mode="before")(lambda v: status_word(str(v)))

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ending(self) -> str:
        """How the run ended, in words (see :func:`ending_text`)."""
        return ending_text(self.status, self.summary, self.verdict, self.stopped_by)


class RunInfo(BaseModel):
    """A task's ``run.json`` (see the module doc). ``tokens``, ``cost_usd`` and ``steps``
    are over all its runs; ``status`` and the rest of the ending are its latest run's."""

    task_id: str
    task: str = ""
    """What the task was when it first ran (an answer never replaces it)."""
    channel: str = "unknown"
    provider: str = ""
    model: str = ""
    server: str = ""
    """The serving stack behind an OpenAI-compatible endpoint and its version, as it named
    itself (``vLLM 0.19.0``, ``llama.cpp b6710-74b8fc17``), for served open models."""
    settings_hash: str = ""
    pid: int | None = None
    started: float | None = None
    ended: float | None = None
    status: str = "in_progress"
    summary: str = ""
    verdict: Verdict | None = None
    stopped_by: str | None = None
    steps: int = 0
    tokens: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    first_seq: int | None = None
    last_seq: int | None = None
    runs: list[RunPart] = Field(default_factory=list)
    task_text: str = ""
    """The whole text the latest run was given (the task with the answers and updates)."""
    folder: str = ""
    """The run's folder relative to the data dir (set by the reader; not in the file)."""

    _tokens = field_validator("tokens", mode="before")(lambda v: usage_of(v))
    _status = field_validator("status", mode="before")(lambda v: status_word(str(v)))

    @model_validator(mode="after")
    def _one_run_at_least(self) -> RunInfo:
        if not self.runs:  # an older file: its one run is the whole record
            self.runs = [
                RunPart(
                    started=self.started,
                    ended=self.ended,
                    status=self.status,
                    summary=self.summary,
                    verdict=self.verdict,
                    stopped_by=self.stopped_by,
                    steps=self.steps,
                    tokens=self.tokens,
                    cost_usd=self.cost_usd,
                    first_seq=self.first_seq,
                    last_seq=self.last_seq,
                )
            ]
        return self

    @property
    def current(self) -> RunPart:
        return self.runs[-1]

    def begin(self, started: float, answer: str) -> RunPart:
        """A new run of the task (after an answer or an update); the title stays."""
        part = RunPart(run=self.current.run + 1, started=started, answer=answer)
        self.runs.append(part)
        self.pid = None
        self.ended, self.status, self.summary = None, "in_progress", ""
        self.verdict, self.stopped_by = None, None
        return part

    def record(self, event: Event, clean: Callable[[str], str]) -> bool:
        """Take the numbers of a step, a verification or the ending from ``event`` into the
        latest run (its texts through ``clean``, which redacts) and bring the totals in
        line; False for an event that changes none of them."""
        if isinstance(event, ModelServer):
            changed = self.server != event.server
            self.server = clean(event.server)
            return changed
        part = self.current
        if isinstance(event, StepFinished):
            part.steps = max(part.steps, event.step)
            part.tokens = part.tokens + event_usage(event)
            part.cost_usd = event.cost_usd
        elif isinstance(event, VerificationFinished):
            reason = clean(event.reason)
            part.verdict = Verdict(done=event.done, reason=reason, tree_tokens=event.tree_tokens)
        elif isinstance(event, TaskFinished):
            part.status, part.ended = status_word(event.status), event.ts
            part.summary = clean(event.summary)
            part.steps, part.tokens, part.cost_usd = event.steps, event_usage(event), event.cost_usd
            part.stopped_by = event.stopped_by
        elif not isinstance(event, TaskStarted):
            return False
        self.total()
        return True

    def finishing(self, event: TaskFinished) -> dict[str, Any]:
        """The extra fields of a ``task_finished`` line: its status in the API's words, the
        run's number and the task's tokens and cost over all its runs (the event's own are
        this run's)."""
        before = self.runs[:-1]
        tokens = sum((p.tokens for p in before), Usage()) + event_usage(event)
        return {
            "status": status_word(event.status),
            "run": self.current.run,
            "task_tokens": tokens.model_dump(),
            "task_cost_usd": round(sum(p.cost_usd for p in before) + event.cost_usd, 10),
        }

    def total(self) -> None:
        """Bring the task's totals and latest ending in line with its runs."""
        last = self.current
        self.steps = sum(r.steps for r in self.runs)
        self.tokens = sum((r.tokens for r in self.runs), Usage())
        self.cost_usd = round(sum(r.cost_usd for r in self.runs), 10)
        self.status, self.summary, self.ended = last.status, last.summary, last.ended
        self.verdict, self.stopped_by = last.verdict, last.stopped_by
        self.started = self.runs[0].started
        self.first_seq, self.last_seq = self.runs[0].first_seq, last.last_seq

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ending(self) -> str:
        """How the latest run ended, in words (see :func:`ending_text`)."""
        return ending_text(self.status, self.summary, self.verdict, self.stopped_by)

    def save(self, folder: Path) -> None:
        from jarvis.fsutil import atomic_write_text

        derived = {"folder": True, "ending": True, "runs": {"__all__": {"ending"}}}
        text = self.model_dump_json(indent=2, exclude=derived)  # type: ignore[arg-type]
        atomic_write_text(folder / RUN_FILE, text + "\n")

    @classmethod
    def load(cls, folder: Path) -> RunInfo:
        """Raises OSError or ValueError (pydantic's ValidationError is one)."""
        data = json.loads((folder / RUN_FILE).read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"{folder / RUN_FILE} does not hold an object")
        return cls.model_validate(data)


class RunSummary(BaseModel):
    """A task's runs as a listing shows them (``jarvis runs``, ``GET /api/runs``): the few
    fields of ``run.json`` the run index keeps, so a page opens no ``run.json``. The whole
    record, each run with its answer, is :class:`RunInfo` (``GET /api/tasks/{id}``)."""

    task_id: str
    task: str = ""
    channel: str = "unknown"
    model: str = ""
    pid: int | None = None
    started: float | None = None
    ended: float | None = None
    status: str = "in_progress"
    """As in :class:`RunInfo`; ``interrupted`` when it says in_progress and its process is
    gone."""
    summary: str = ""
    verdict: Verdict | None = None
    stopped_by: str | None = None
    steps: int = 0
    tokens: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    run_count: int = 1
    """How many runs the task had (it runs again after an answer or an update)."""
    first_seq: int | None = None
    last_seq: int | None = None
    folder: str = ""
    """The run's folder relative to the data dir."""

    _status = field_validator("status", mode="before")(lambda v: status_word(str(v)))

    @classmethod
    def of(cls, info: RunInfo) -> RunSummary:
        return cls.model_validate_json(cls.json_of(info))

    @classmethod
    def json_of(cls, info: RunInfo) -> str:
        """The summary of ``info`` as JSON (without ``ending``, made when it is read)."""
        fields = info.model_dump(mode="json", include=_SUMMARY_FIELDS)
        return json.dumps(fields | {"run_count": len(info.runs)}, ensure_ascii=False)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ending(self) -> str:
        """How the latest run ended, in words (see :func:`ending_text`)."""
        return ending_text(self.status, self.summary, self.verdict, self.stopped_by)


_SUMMARY_FIELDS = set(RunSummary.model_fields) - {"run_count", "folder"}


def ending_text(status: str, summary: str, verdict: Verdict | None, stopped_by: str | None) -> str:
    """How a run ended, in words (:func:`jarvis.task_words.shown`): completed with the summary
    and the verification, failed with the reason, cancelled with who stopped it, waiting for
    you with the question."""
    status = status_word(status)
    if status == "completed":
        check = ""
        if verdict is not None:
            check = f" (verified: {verdict.reason})" if verdict.done else " (not verified)"
        return f"completed: {summary}{check}".strip()
    if status == "failed":
        return f"failed: {summary or 'no reason given'}"
    if status == "cancelled":
        return f"cancelled by {stopped_by or 'the user'}"
    if status == "needs_user":
        return f"{shown(status)}: {summary or '(no question)'}"
    return shown(status)


def event_usage(event: Any) -> Usage:
    """The tokens a ``StepFinished`` or ``TaskFinished`` event (or its journal line) names."""
    get = event.get if isinstance(event, dict) else lambda k, d=0: getattr(event, k, d)
    return Usage(
        input_tokens=int(get("input_tokens", 0) or 0),
        output_tokens=int(get("output_tokens", 0) or 0),
        cache_read_tokens=int(get("cache_read_tokens", 0) or 0),
    )


def added_text(before: str, after: str) -> str:
    """What a person added to a task between two runs (the answer or the update), without
    the ``Update (m-...):`` labels the todo list writes around it."""
    extra = after[len(before) :] if after.startswith(before) else after
    return _UPDATE_LABEL.sub("", extra).strip()
