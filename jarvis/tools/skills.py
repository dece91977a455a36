"""Skills: code tools dropped into ``DATA_DIR/skills/*_skill.py`` or installed as packages
that declare a ``jarvis.skills`` entry point.

A skill defines tools the way the built-in ones are defined: a typed function that takes a
pydantic arguments model (``extra="forbid"``) and the :class:`ToolContext`, marked with
:func:`skill_tool`::

    from pydantic import BaseModel, ConfigDict, Field
    from jarvis.tools.skills import skill_tool

    class ShoutArgs(BaseModel):
        model_config = ConfigDict(extra="forbid")
        text: str = Field(max_length=200, description="what to shout")

    @skill_tool()
    def shout(args: ShoutArgs, ctx) -> dict:
        "Say the text in capitals."
        return {"said": args.text.upper()}

A file that fails to import (or defines a bad tool) is reported once, in the log and in
``jarvis doctor``; the other files still load. :meth:`SkillManager.scan` loads files that
are new or changed and drops the tools of files that changed or went away, so ``serve``
picks up edits without a restart (:meth:`SkillManager.watch`).

These are code tools. The "skill" memories the agent distils after a verified task
(``memory/long_term/skills.json``) are learned procedures, something else.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import inspect
import logging
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from jarvis.config import Settings
from jarvis.tools.mcp_config import NAME_RE
from jarvis.tools.registry import ToolRegistry

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "jarvis.skills"
SUFFIX = "_skill.py"
_MARK = "__jarvis_skill_tool__"

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class SkillToolInfo:
    name: str | None
    timeout_s: float | None
    moves_input: bool = False


def skill_tool(
    name: str | None = None, *, timeout_s: float | None = None, moves_input: bool = False
) -> Callable[[F], F]:
    """Mark a function ``fn(args: ArgsModel, ctx)`` as a tool (named after it by default).

    ``moves_input``: the tool sends mouse or keyboard input (through ``ctx.input``), so the
    screen is left to settle after it; a tool that does not is followed at once."""

    def mark(fn: F) -> F:
        setattr(fn, _MARK, SkillToolInfo(name, timeout_s, moves_input))
        return fn

    return mark


@dataclass
class SkillTool:
    name: str
    fn: Callable[..., Any]
    args_model: type[BaseModel]
    timeout_s: float | None
    moves_input: bool = False


@dataclass
class SkillSource:
    """One file (or entry point) and what loading it gave."""

    origin: str
    stamp: tuple[int, int] | None = None
    tools: list[str] = field(default_factory=list)
    error: str | None = None


class SkillError(Exception):
    """A skill that cannot be used; the message says which and why."""


def tools_of(module: types.ModuleType | Any, where: str) -> list[SkillTool]:
    """The marked tools of a module (or one marked function, or a list of them)."""
    if isinstance(module, types.ModuleType):
        candidates = [v for v in vars(module).values() if callable(v) and hasattr(v, _MARK)]
    elif isinstance(module, list | tuple):
        candidates = list(module)
    else:
        candidates = [module]
    found = [_tool(fn, where) for fn in candidates]
    names = [t.name for t in found]
    if len(set(names)) != len(names):
        raise SkillError(f"{where}: two tools share a name: {sorted(names)}")
    if not found:
        raise SkillError(f"{where}: defines no tool (mark functions with @skill_tool())")
    return found


def _tool(fn: Any, where: str) -> SkillTool:
    info = getattr(fn, _MARK, None)
    if not callable(fn) or not isinstance(info, SkillToolInfo):
        raise SkillError(f"{where}: {fn!r} is not marked with @skill_tool()")
    name = info.name or fn.__name__
    if not NAME_RE.match(name):
        raise SkillError(f"{where}: tool name {name!r} must match {NAME_RE.pattern}")
    try:
        hints = typing.get_type_hints(fn)
    except Exception as exc:  # a bad annotation is the skill's bug, reported as such
        raise SkillError(f"{where}: {name}: cannot read its type hints: {exc}") from exc
    params = list(inspect.signature(fn).parameters)
    model = hints.get(params[0]) if params else None
    if len(params) != 2 or not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise SkillError(
            f"{where}: {name} must take (args: SomeArgsModel, ctx), with a pydantic model"
        )
    if model.model_config.get("extra") != "forbid":
        raise SkillError(f"{where}: {name}: its arguments model must set extra='forbid'")
    if not (inspect.getdoc(fn) or "").strip():
        raise SkillError(f"{where}: {name} needs a docstring (the model reads it)")
    return SkillTool(name, fn, model, info.timeout_s, info.moves_input)


def import_file(path: Path) -> types.ModuleType:
    """Import a skill file as a fresh module object (each load runs the file again, so
    edits take effect; the name is fixed per path)."""
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:10]
    name = f"jarvis_skill_{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SkillError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pydantic look their module up
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        sys.modules.pop(name, None)
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise SkillError(f"{path.name} failed to import: {type(exc).__name__}: {exc}") from exc
    return module


class SkillManager:
    """The skills of one data dir, kept in step with their files on a registry."""

    def __init__(self, settings: Settings, registry: ToolRegistry) -> None:
        self.settings = settings
        self.registry = registry
        configured = settings.toolbox.skills.dir
        if configured is None:
            self.folder = settings.data_dir / "skills"
        else:
            self.folder = configured if configured.is_absolute() else settings.data_dir / configured
        self.sources: dict[str, SkillSource] = {}

    @property
    def problems(self) -> list[str]:
        return [s.error for s in self.sources.values() if s.error]

    def load_entry_points(self) -> None:
        """Packages' ``jarvis.skills`` entry points (loaded once)."""
        for point in entry_points(group=ENTRY_POINT_GROUP):
            key = f"entry point {point.name} ({point.value})"
            source = SkillSource(origin=key)
            try:
                found = tools_of(point.load(), key)
            except SkillError as exc:
                source.error = str(exc)
            except Exception as exc:  # a package's import error is reported, not raised
                source.error = f"{key} failed to load: {type(exc).__name__}: {exc}"
            else:
                source.tools = self._register(found, f"skill:{point.name}", key, source)
            self._report(source)
            self.sources[key] = source

    def scan(self) -> bool:
        """Load new and changed files, drop the tools of changed and removed ones; True
        when anything changed."""
        return self.apply(self.plan())

    def plan(self) -> tuple[list[str], list[tuple[Path, tuple[int, int], Any]]]:
        """What changed on disk: (removed keys, [(path, stamp, tools or SkillError)]).

        Imports run here (user code: the watcher calls this in a worker thread); the
        registry is only touched by :meth:`apply`.
        """
        present = self._stamps()
        removed = [k for k in self.sources if k.endswith(SUFFIX) and k not in present]
        loaded: list[tuple[Path, tuple[int, int], Any]] = []
        for key, (path, stamp) in present.items():
            old = self.sources.get(key)
            if old is not None and old.stamp == stamp:
                continue
            try:
                outcome: Any = tools_of(import_file(path), path.name)
            except SkillError as exc:
                outcome = exc
            loaded.append((path, stamp, outcome))
        return removed, loaded

    def apply(self, plan: tuple[list[str], list[tuple[Path, tuple[int, int], Any]]]) -> bool:
        removed, loaded = plan
        for key in removed:
            source = self.sources.pop(key, None)
            if source is not None:
                self._drop(source)
                log.info("skill %s removed", key)
        for path, stamp, outcome in loaded:
            old = self.sources.pop(str(path), None)
            if old is not None:
                self._drop(old)
            source = SkillSource(origin=str(path), stamp=stamp)
            if isinstance(outcome, SkillError):
                source.error = str(outcome)
            else:
                source.tools = self._register(outcome, f"skill:{path.name}", path.name, source)
                log.info("skill %s loaded: %s", path.name, ", ".join(source.tools) or "no tool")
            self._report(source)
            self.sources[str(path)] = source
        return bool(removed or loaded)

    def _stamps(self) -> dict[str, tuple[Path, tuple[int, int]]]:
        if not self.folder.is_dir():
            return {}
        out = {}
        for path in sorted(self.folder.glob(f"*{SUFFIX}")):
            try:
                info = path.stat()
            except OSError:
                continue
            out[str(path)] = (path, (info.st_mtime_ns, info.st_size))
        return out

    def _register(
        self, found: list[SkillTool], origin: str, where: str, source: SkillSource
    ) -> list[str]:
        names = []
        for tool in found:
            existing = self.registry.get(tool.name)
            if existing is not None:
                source.error = f"{where}: tool '{tool.name}' is already defined ({existing.origin})"
                continue
            self.registry.register(
                tool.name,
                tool.fn,
                tool.args_model,
                timeout_s=tool.timeout_s,
                origin=origin,
                moves_input=tool.moves_input,
            )
            names.append(tool.name)
        return names

    def _drop(self, source: SkillSource) -> None:
        for name in source.tools:
            self.registry.unregister(name)

    @staticmethod
    def _report(source: SkillSource) -> None:
        """Once per version of a file: a new stamp is a new source, reported again."""
        if source.error:
            log.warning("skill not loaded: %s", source.error)

    async def watch(self) -> None:
        """Scan every ``reload_interval_s`` until cancelled (``serve`` runs this)."""
        interval = self.settings.toolbox.skills.reload_interval_s
        while True:
            await asyncio.sleep(interval)
            try:
                self.apply(await asyncio.to_thread(self.plan))
            except Exception:  # the boundary: a scan error must not stop the daemon
                log.exception("scanning %s for skills failed", self.folder)
