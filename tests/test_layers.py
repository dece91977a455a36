"""Layers point one way: nothing in jarvis/desktop/, jarvis/config.py or jarvis/llm/
imports from a layer above it (DESIGN section 1).

Every ``import`` and ``from ... import`` in a module counts, wherever it is: at the top,
inside a function (a lazy import hides a cycle, it does not remove it) or under
``TYPE_CHECKING``. tests/test_layers_graph.py checks the package graph with the same walk
(no cycle, no other package's ``_private`` names).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "jarvis"

# ---------------------------------------------------------------- the rule, as data
#
# Lowest first:
#
#   bottom    pure helpers every layer may use: sizes and coordinates, events, prompt
#             files, redaction, text display, logging setup, file helpers, shipped data paths,
#             shared value types (Usage)
#   section   the settings sections config.py is made of (each package's settings.py;
#             one may compose another), among them jarvis.llm.profiles.settings: the
#             model-profile entries model_profile may name, checked when the settings load
#   config    jarvis/config.py: the one Settings object, passed down into everything
#   desktop   one X display: capture, input, settle      } siblings: neither imports
#   llm       providers, wire formats, model profiles     } the other (jarvis.geometry
#                                                            holds what both need)
#   upper     everything else (tools, memory, safety, agent, runs, gateway, api, tui,
#             eval, calibrate, cli, doctor, preflight, console): free to import any layer below,
#             and not checked here
#
# A layer may import the layers named for it below and nothing else from jarvis.

BOTTOM = frozenset(
    {
        "jarvis",  # the package itself: __version__
        "jarvis.freed_memory",  # set on import: malloc overwrites freed memory
        "jarvis.geometry",
        "jarvis.screen_sizes",  # Size and the screenshot size rules (geometry re-exports)
        "jarvis.events",
        "jarvis.redaction",
        "jarvis.text_display",  # how hidden characters are shown; events render with it
        "jarvis.logfile",
        "jarvis.fsutil",
        "jarvis.prompts",
        "jarvis.shipped",
        "jarvis.owner_lock",
        "jarvis.book_index",  # rebuildable SQLite indexes beside the books
        "jarvis.usage",  # token counts: providers, runs, eval, the budget and memory share them
    }
)
SECTIONS = frozenset(
    {
        "jarvis.api.settings",
        "jarvis.runs.settings",
        "jarvis.safety.settings",
        "jarvis.safety.takeover_settings",
        "jarvis.tui.settings",
        "jarvis.tools.toolbox_settings",
        "jarvis.tools.policy_settings",
        "jarvis.llm.grounder_settings",
        "jarvis.gateway.channels.email.settings",
        "jarvis.safety.channel_policy",  # the channel policy blocks (channels.NAME)
        "jarvis.gateway.settings",
        "jarvis.fleet.settings",
        "jarvis.llm.profiles.settings",
        "jarvis.desktop.settings",  # desktop.backend
    }
)
MAY_IMPORT: dict[str, frozenset[str]] = {
    "bottom": frozenset({"bottom"}),
    # a section may build on another (channels.NAME holds the tool and approval rules)
    "section": frozenset({"bottom", "section"}),
    "config": frozenset({"bottom", "section"}),
    "desktop": frozenset({"bottom", "config", "desktop"}),
    "llm": frozenset({"bottom", "section", "config", "llm"}),
}


def layer_of(module: str) -> str:
    if module in BOTTOM:
        return "bottom"
    if module in SECTIONS:
        return "section"
    if module == "jarvis.config":
        return "config"
    for layer in ("desktop", "llm"):
        if module == f"jarvis.{layer}" or module.startswith(f"jarvis.{layer}."):
            return layer
    return "upper"


# ---------------------------------------------------------------- reading the imports


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(name: str, root: Path = ROOT) -> bool:
    base = root.joinpath(*name.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module ``from ... import`` reads from, a relative one made absolute."""
    base = node.module or ""
    if node.level:
        anchor = module.split(".")
        if not is_package:
            anchor.pop()
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, *([base] if base else [])])
    return base


def imported_modules(source: str, module: str, is_package: bool, root: Path = ROOT) -> set[str]:
    """Every jarvis module ``source`` imports, at any depth of the tree. ``from a import b``
    names ``a.b`` when that is a module, else ``a``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = absolute(node, module, is_package)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if is_module(sub, root) else base)
    return {name for name in found if name == "jarvis" or name.startswith("jarvis.")}


def upward_imports(root: Path = ROOT) -> list[str]:
    wrong = []
    for path in sorted((root / "jarvis").rglob("*.py")):
        module = module_name(path, root)
        layer = layer_of(module)
        if layer == "upper":
            continue
        source = path.read_text(encoding="utf-8")
        for target in sorted(imported_modules(source, module, path.name == "__init__.py", root)):
            if layer_of(target) in MAY_IMPORT[layer]:
                continue
            wrong.append(f"{module} ({layer}) imports {target} ({layer_of(target)})")
    return wrong


# ---------------------------------------------------------------- the tests


def test_no_layer_imports_from_a_layer_above_it() -> None:
    assert upward_imports() == []


def test_every_layer_named_in_the_rule_exists() -> None:
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    layers = {layer_of(m) for m in modules}
    assert {"bottom", "section", "config", "desktop", "llm", "upper"} <= layers
    # every settings module is a section, so config's imports stay checked
    settings_modules = {m for m in modules if m.rsplit(".", 1)[-1].endswith("settings")}
    assert settings_modules <= SECTIONS
    # the rule names only modules that exist
    assert sorted((BOTTOM | SECTIONS) - modules) == []


@pytest.mark.parametrize(
    ("where", "source", "culprit"),
    [
        ("jarvis/desktop/bad.py", "def f():\n    from jarvis.llm.types import Message\n", "llm"),
        (
            "jarvis/llm/bad.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import jarvis.agent.brain\n",
            "agent",
        ),
        ("jarvis/config.py", "from jarvis.desktop import screen\n", "desktop.screen"),
        ("jarvis/api/settings.py", "class A:\n    from jarvis import config\n", "config"),
        ("jarvis/llm/sub/bad.py", "from ...desktop import screen\n", "desktop.screen"),
    ],
)
def test_the_walk_finds_lazy_typing_and_relative_imports(
    tmp_path: Path, where: str, source: str, culprit: str
) -> None:
    """The checker itself: an upward import anywhere in a module is reported."""
    for name in ("jarvis/__init__.py", "jarvis/config.py", "jarvis/llm/types.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    for name in ("jarvis/desktop/screen.py", "jarvis/agent/brain.py", "jarvis/llm/sub/x.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    (tmp_path / where).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / where).write_text(source)
    wrong = upward_imports(tmp_path)
    assert len(wrong) == 1 and wrong[0].split(" imports ")[1].startswith(f"jarvis.{culprit}")
