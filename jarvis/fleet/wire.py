"""Entries of ``jarvis:events``: what a worker sends, and how the coordinator reads it.

Three types: ``event`` (an event's JSON), ``artefact`` (a file's bytes and its path
relative to the data dir: step records, screenshots, approval screenshots) and
``outcome`` (written by the engine's COMPLETE script only, with the lease token).
An artefact's path is checked before anything is written: relative, no ``..``, under one
of :data:`ARTEFACT_ROOTS`, and inside the data dir once resolved.

Side: both (the coordinator and the workers).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import ConfigDict, ValidationError

from jarvis.events import Event
from jarvis.runs.index import index_files

ARTEFACT_ROOTS = ("runs", "memory", "approvals")
KEPT_HERE = ("events.jsonl", "run.json", "seq", *index_files())
"""The coordinator writes these itself (its journal and its run index): never shipped,
and refused as an artefact."""
MAX_ARTEFACT_BYTES = 32 * 1024 * 1024


class ForgedEntry(ValueError):
    """An entry that must not be acted on (a path out of bounds, a malformed event)."""


class RemoteEvent(Event):
    """An event of a kind this process does not know: kept whole for the journal."""

    model_config = ConfigDict(extra="allow")


def event_fields(event: Event, worker: str) -> dict[str, str]:
    return {
        "type": "event",
        "task": event.task_id or "",
        "worker": worker,
        "data": event.model_dump_json(),
    }


def artefact_fields(rel: str, data: bytes, task_id: str, worker: str) -> dict[str, Any]:
    return {"type": "artefact", "task": task_id, "worker": worker, "path": rel, "data": data}


def _kinds() -> dict[str, type[Event]]:
    found: dict[str, type[Event]] = {}
    todo: list[type[Event]] = [Event]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        default = cls.model_fields["kind"].default
        if cls is not Event and cls is not RemoteEvent and isinstance(default, str):
            found.setdefault(default, cls)
    return found


def parse_event(data: str) -> Event:
    """The typed event in ``data`` (a :class:`RemoteEvent` for an unknown kind)."""
    try:
        raw = json.loads(data)
    except ValueError as exc:
        raise ForgedEntry(f"an event that is not JSON: {exc}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("kind"), str):
        raise ForgedEntry("an event without a kind")
    cls = _kinds().get(raw["kind"], RemoteEvent)
    try:
        return cls.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ForgedEntry(f"a {raw['kind']} event that does not validate: {first['msg']}") from None


def artefact_target(data_dir: Path, rel: str) -> Path:
    """Where artefact ``rel`` goes under ``data_dir``; :class:`ForgedEntry` when it would
    land anywhere else."""
    path = PurePosixPath(rel)
    if not rel or "\\" in rel or "\x00" in rel or path.is_absolute() or rel.startswith("~"):
        raise ForgedEntry(f"artefact path refused (not a relative path): {rel!r}")
    if any(part in ("..", ".", "") for part in rel.split("/")):
        raise ForgedEntry(f"artefact path refused (.. or an empty part): {rel!r}")
    if path.parts[0] not in ARTEFACT_ROOTS or len(path.parts) < 2:
        raise ForgedEntry(f"artefact path refused (not under {', '.join(ARTEFACT_ROOTS)}): {rel!r}")
    if path.parts[0] == "runs" and path.name in KEPT_HERE:
        raise ForgedEntry(f"artefact path refused (the coordinator writes it): {rel!r}")
    root = data_dir.resolve()
    target = (root / Path(*path.parts)).resolve()
    if not target.is_relative_to(root):
        raise ForgedEntry(f"artefact path refused (leaves the data dir): {rel!r}")
    return target


def write_artefact(data_dir: Path, rel: str, data: bytes) -> Path:
    """Write ``data`` to ``rel`` under ``data_dir`` (checked; atomically)."""
    if len(data) > MAX_ARTEFACT_BYTES:
        raise ForgedEntry(f"artefact {rel!r} refused: {len(data)} bytes is too large")
    target = artefact_target(data_dir, rel)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".fleet-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
