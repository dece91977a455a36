"""Skills by file drop: typed tools from *_skill.py files through the real registry, broken
files reported once while the others load, edits and removals picked up by a scan."""

from __future__ import annotations

import asyncio
import logging
import os
import textwrap
from pathlib import Path

import pytest

from jarvis.config import Settings
from jarvis.tools.computer import build_registry
from jarvis.tools.context import ToolContext
from jarvis.tools.registry import ToolRegistry
from jarvis.tools.results import INVALID_PARAMS, ToolResult
from jarvis.tools.skills import SkillManager

GOOD = '''
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from jarvis.tools.skills import skill_tool


class ShoutArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, max_length=50, description="what to shout")
    times: int = Field(1, ge=1, le=3)


@skill_tool()
def shout(args: ShoutArgs, ctx) -> dict:
    """Say the text in capitals."""
    return {"said": " ".join([args.text.upper()] * args.times), "task": ctx.task_id}


@skill_tool(name="whisper")
async def quiet(args: ShoutArgs, ctx) -> dict:
    """Say the text in small letters."""
    return {"said": args.text.lower()}


def helper():  # not marked: not a tool
    return 1
'''

VERSIONED = '''
from pydantic import BaseModel, ConfigDict
from jarvis.tools.skills import skill_tool


class NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


@skill_tool()
def {name}(args: NoArgs, ctx) -> dict:
    """Which version is loaded."""
    return {{"version": {version}}}
'''

BROKEN = {
    "syntax_skill.py": "def oops(:\n",
    "import_skill.py": "import no_such_module_for_jarvis\n",
    "raises_skill.py": "raise RuntimeError('boom at import')\n",
    "exits_skill.py": "import sys\nsys.exit(3)\n",
    "notools_skill.py": "X = 1\n",
    "loose_skill.py": textwrap.dedent(
        '''
        from pydantic import BaseModel
        from jarvis.tools.skills import skill_tool

        class Loose(BaseModel):
            text: str

        @skill_tool()
        def loose(args: Loose, ctx) -> str:
            """Takes anything."""
            return args.text
        '''
    ),
    "clash_skill.py": VERSIONED.format(name="click", version=1),
}
REASONS = {
    "syntax_skill.py": "SyntaxError",
    "import_skill.py": "ModuleNotFoundError",
    "raises_skill.py": "boom at import",
    "exits_skill.py": "SystemExit",
    "notools_skill.py": "defines no tool",
    "loose_skill.py": "extra='forbid'",
    "clash_skill.py": "'click' is already defined (builtin)",
}


def setup(tmp_path: Path) -> tuple[Settings, ToolRegistry, SkillManager, Path]:
    settings = Settings(data_dir=tmp_path / "data")
    folder = settings.data_dir / "skills"
    folder.mkdir(parents=True)
    registry = build_registry(settings, [])
    return settings, registry, SkillManager(settings, registry), folder


def run(registry: ToolRegistry, settings: Settings, name: str, args: dict) -> ToolResult:
    ctx = ToolContext.for_task(settings, "t-skill")
    return asyncio.run(registry.execute(name, args, ctx))


def test_good_skills_load_and_broken_ones_are_reported_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings, registry, manager, folder = setup(tmp_path)
    (folder / "good_skill.py").write_text(GOOD)
    (folder / "notes.py").write_text("raise RuntimeError('not a skill file, never imported')")
    for name, text in BROKEN.items():
        (folder / name).write_text(text)
    caplog.set_level(logging.WARNING, logger="jarvis.tools.skills")
    assert manager.scan()

    assert {"shout", "whisper"} <= set(registry.offered())
    assert registry.get("shout").origin == "skill:good_skill.py"  # type: ignore[union-attr]
    spec = next(s for s in registry.specs() if s.name == "shout")
    assert spec.parameters["properties"]["times"]["maximum"] == 3
    assert spec.parameters["additionalProperties"] is False
    assert run(registry, settings, "shout", {"text": "hi", "times": 2}).data == {
        "said": "HI HI",
        "task": "t-skill",
    }
    assert run(registry, settings, "whisper", {"text": "HeY"}).data == {"said": "hey"}
    bad = run(registry, settings, "shout", {"text": "hi", "loud": True})
    assert bad.error is not None and bad.error.code == INVALID_PARAMS
    assert registry.get("click").origin == "builtin"  # type: ignore[union-attr]
    assert "loose" not in registry

    problems = manager.problems
    assert len(problems) == len(BROKEN)
    for name, reason in REASONS.items():
        assert any(name in p and reason in p for p in problems), (name, problems)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == len(BROKEN)
    assert not manager.scan()  # nothing changed: nothing loaded, nothing reported again
    assert len(caplog.records) == len(BROKEN)


def test_changed_and_removed_files_are_picked_up(tmp_path: Path) -> None:
    settings, registry, manager, folder = setup(tmp_path)
    path = folder / "version_skill.py"
    path.write_text(VERSIONED.format(name="which", version=1))
    manager.scan()
    assert run(registry, settings, "which", {}).data == {"version": 1}

    path.write_text(VERSIONED.format(name="which", version=2))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    assert manager.scan()
    assert run(registry, settings, "which", {}).data == {"version": 2}

    path.write_text(VERSIONED.format(name="renamed", version=3))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 2_000_000))
    manager.scan()
    assert "which" not in registry and run(registry, settings, "renamed", {}).data == {"version": 3}

    path.write_text("def broken(:\n")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 3_000_000))
    manager.scan()
    assert "renamed" not in registry and manager.problems

    path.unlink()
    assert manager.scan()
    assert not manager.problems and not manager.sources


def test_packages_declare_skills_with_an_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An installed distribution (a real dist-info on sys.path) with a `jarvis.skills`
    entry point, and one whose entry point cannot be imported."""
    site = tmp_path / "site"
    (site / "weather_pkg-1.0.dist-info").mkdir(parents=True)
    (site / "weather_pkg-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: weather-pkg\nVersion: 1.0\n"
    )
    (site / "weather_pkg-1.0.dist-info" / "entry_points.txt").write_text(
        "[jarvis.skills]\nweather = weather_skills\nmissing = no_such_module_xyz\n"
    )
    (site / "weather_skills.py").write_text(VERSIONED.format(name="forecast", version=7))
    monkeypatch.syspath_prepend(str(site))
    settings, registry, manager, _ = setup(tmp_path)
    manager.load_entry_points()
    assert registry.get("forecast").origin == "skill:weather"  # type: ignore[union-attr]
    assert run(registry, settings, "forecast", {}).data == {"version": 7}
    assert any("missing" in p and "ModuleNotFoundError" in p for p in manager.problems)
