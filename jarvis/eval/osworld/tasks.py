"""OSWorld's task JSON, read as it is: one file, a folder of them, or OSWorld's
``evaluation_examples`` layout (``test_all.json``, a domain -> task ids map, beside
``examples/DOMAIN/ID.json``).

A task keeps its JSON unchanged (:attr:`OsTask.raw`); :mod:`jarvis.eval.osworld.convert`
turns it into the eval runner's task.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jarvis.eval.suite import SuiteError

LISTS = ("test_all.json", "test_small.json")
"""The domain lists of OSWorld's layout, in the order they are preferred."""


@dataclass
class OsTask:
    id: str
    domain: str
    instruction: str
    config: list[dict[str, Any]]
    evaluator: dict[str, Any]
    source: Path
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def infeasible(self) -> bool:
        return self.evaluator.get("func") == "infeasible"

    def urls(self) -> list[str]:
        """The URLs its setup and its evaluator download (what the cache must hold)."""
        found: list[str] = []
        for step in [*self.config, *self.evaluator.get("postconfig", [])]:
            if step.get("type") == "download":
                found += [
                    str(f.get("url", "")) for f in step.get("parameters", {}).get("files", [])
                ]
        for key in ("result", "expected"):
            for getter in as_list(self.evaluator.get(key)):
                if isinstance(getter, dict) and getter.get("type") == "cloud_file":
                    found += [str(p) for p in as_list(getter.get("path"))]
        return [u for u in found if u]


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def is_task(data: Any) -> bool:
    return isinstance(data, dict) and "instruction" in data and "evaluator" in data


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SuiteError(f"{path}: not readable as JSON: {exc}") from exc


def load_task(path: Path, domain: str | None = None) -> OsTask:
    data = _read(path)
    if not is_task(data):
        raise SuiteError(f"{path}: not an OSWorld task (no instruction and evaluator)")
    evaluator = data["evaluator"]
    if not isinstance(evaluator, dict) or "func" not in evaluator:
        raise SuiteError(f"{path}: its evaluator has no func")
    config = data.get("config") or []
    if not isinstance(config, list) or not all(isinstance(s, dict) for s in config):
        raise SuiteError(f"{path}: config must be a list of steps")
    return OsTask(
        id=str(data.get("id") or path.stem),
        domain=domain or path.parent.name,
        instruction=str(data["instruction"]),
        config=config,
        evaluator=evaluator,
        source=path,
        raw=data,
    )


def _from_lists(listing: Path, examples: Path) -> list[OsTask]:
    domains = _read(listing)
    if not isinstance(domains, dict):
        raise SuiteError(f"{listing}: not a domain -> task ids map")
    tasks = []
    for domain, ids in domains.items():
        for task_id in ids:
            path = examples / domain / f"{task_id}.json"
            if not path.is_file():
                raise SuiteError(f"{listing}: task {domain}/{task_id} has no file {path}")
            tasks.append(load_task(path, domain))
    return tasks


def looks_like_osworld(path: Path) -> bool:
    """Whether ``path`` holds OSWorld tasks (a task file, a domain list, a layout)."""
    if path.is_file():
        return path.suffix == ".json"
    if not path.is_dir():
        return False
    if any((path / name).is_file() for name in LISTS) or (path / "examples").is_dir():
        return True
    for candidate in [*path.glob("*.json"), *path.glob("*/*.json")][:20]:
        try:
            if is_task(json.loads(candidate.read_text(encoding="utf-8"))):
                return True
        except (OSError, ValueError):
            continue
    return False


def load_tasks(path: Path, only: list[str] | None = None) -> list[OsTask]:
    """The tasks at ``path``: a task file, a domain list (``test_all.json``), a layout
    folder, or a folder of task files (one level of domain folders at most)."""
    if path.is_file():
        if is_task(_read(path)):
            tasks = [load_task(path)]
        else:  # a domain list beside its examples folder
            tasks = _from_lists(path, path.parent / "examples")
    elif path.is_dir():
        listing = next((path / n for n in LISTS if (path / n).is_file()), None)
        if listing is not None:
            tasks = _from_lists(listing, path / "examples")
        else:
            root = path / "examples" if (path / "examples").is_dir() else path
            files = sorted(root.glob("*.json")) + sorted(root.glob("*/*.json"))
            tasks = [load_task(f) for f in files if is_task(_read(f))]
    else:
        raise SuiteError(f"{path}: no such file or folder")
    if not tasks:
        raise SuiteError(f"{path}: no OSWorld tasks")
    return _only(path, tasks, only)


def _only(path: Path, tasks: list[OsTask], only: list[str] | None) -> list[OsTask]:
    seen: dict[str, OsTask] = {}
    for task in tasks:
        if task.id in seen:
            raise SuiteError(f"{path}: two tasks have the id {task.id!r}")
        seen[task.id] = task
    if not only:
        return tasks
    unknown = sorted(set(only) - set(seen))
    if unknown:
        raise SuiteError(f"{path}: no task {', '.join(unknown)}")
    return [t for t in tasks if t.id in only]
