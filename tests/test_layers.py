"""Layers point one way: nothing in jarvis/desktop/, jarvis/config.py or jarvis/llm/
imports from a layer above it (DESIGN section 1).

Every ``import`` and ``from ... import`` in a module counts, wherever it is: at the top,
inside a function (a lazy import hides a cycle, it does not remove it) or under
``TYPE_CHECKING``.
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
        "jarvis.geometry",
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
        "jarvis.gateway.channels.email.settings",
        "jarvis.safety.channel_policy",  # the channel policy blocks (channels.NAME)
        "jarvis.gateway.settings",
        "jarvis.fleet.settings",
        "jarvis.llm.profiles.settings",
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


# ---------------------------------------------------------------- packages: no cycle
#
# A node is a package under jarvis/ (jarvis.gateway, with its subpackages) or a top-level
# module. The ground and settings layers (BOTTOM, SECTIONS, jarvis.config) are left out:
# the rule above already lets them import only each other, downward, so they close no
# cycle, and a section that lives in a package (safety.channel_policy) does not tie that
# package to every package config reads. The roots are left out too: a command module
# picks and wires the parts of any package, above them all, wherever its file sits.

ROOT_MODULES = frozenset(
    {"jarvis.cli", "jarvis.__main__", "jarvis.console", "jarvis.doctor", "jarvis.preflight"}
)


def is_root(module: str) -> bool:
    """``jarvis`` command modules: cli, doctor, preflight, every ``commands.py``
    (``*_commands.py``) and ``serve_command.py``."""
    last = module.rsplit(".", 1)[-1]
    return (
        module in ROOT_MODULES
        or last in ("commands", "serve_command")
        or (last.endswith("_commands"))
    )


KNOWN_CYCLE_EDGES: frozenset[tuple[str, str]] = frozenset(
    # (issue 34: to remove) the imports that close today's package cycles, each against
    # DESIGN section 1's order; a cycle not broken by one of these fails. Shrink, never grow.
    {
        ("jarvis.gateway", "jarvis.fleet"),  # the gateway runs the fleet's coordinator
        ("jarvis.fleet", "jarvis.eval"),  # a fleet worker runs eval tasks (eval.remote)
        ("jarvis.safety", "jarvis.tools"),  # approvals reads the tool context
    }
)


def node_of(module: str, root: Path = ROOT) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def package_edges(root: Path = ROOT) -> dict[tuple[str, str], list[str]]:
    """(importer, imported) node pairs above the settings layer, each with the module
    imports that make it."""
    edges: dict[tuple[str, str], list[str]] = {}
    for path in sorted((root / "jarvis").rglob("*.py")):
        module = module_name(path, root)
        if layer_of(module) in ("bottom", "section", "config") or is_root(module):
            continue
        source = path.read_text(encoding="utf-8")
        for target in imported_modules(source, module, path.name == "__init__.py", root):
            if layer_of(target) in ("bottom", "section", "config") or is_root(target):
                continue
            a, b = node_of(module), node_of(target)
            if a != b:
                edges.setdefault((a, b), []).append(f"{module} -> {target}")
    return edges


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), sorted."""
    graph: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_packages_import_each_other_in_no_cycle() -> None:
    edges = package_edges()
    left = cycles(set(edges) - KNOWN_CYCLE_EDGES)
    detail = [
        f"{a} -> {b}: {', '.join(edges[(a, b)][:3])}"
        for component in left
        for (a, b) in sorted(edges)
        if a in component and b in component
    ]
    assert left == [], "package import cycles:\n" + "\n".join(detail)


def test_the_known_cycle_edges_still_exist() -> None:
    """The allow-list shrinks: an edge that is gone comes off it."""
    assert sorted(KNOWN_CYCLE_EDGES - set(package_edges())) == []


def test_the_cycle_finder_sees_a_long_cycle() -> None:
    edges = {("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("e", "e")}
    assert cycles(edges) == [["a", "b", "c"]]


# ---------------------------------------------------------------- another package's privates
#
# A ``_name`` is its package's own: another package (a node as above) asks for a public
# name instead. Found by reading the code: ``from jarvis.x import _name``, ``m._name`` on
# an imported jarvis module, and ``obj._name`` (not on ``self``/``cls``) when only other
# packages' classes define ``_name``, which is how ``self.gateway._books`` is seen.

KNOWN_PRIVATE_USES: frozenset[str] = frozenset(
    # (issue 34: to remove) the coordinator reaches into the gateway's books, its work
    # event and its memory bridge. Shrink, never grow.
    {
        "jarvis.fleet.serving: jarvis.gateway._books",
        "jarvis.fleet.serving: jarvis.gateway._bridge",
        "jarvis.fleet.serving: jarvis.gateway._work",
    }
)


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_attributes(tree: ast.Module) -> set[str]:
    """The private attributes a module's classes define: names in a class body (methods,
    class attributes, pydantic private fields) and every ``X._name = ...``."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    found.add(item.name)
                elif isinstance(item, ast.Assign | ast.AnnAssign):
                    targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                    found.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            found.add(node.attr)
    return {name for name in found if is_private(name)}


def private_uses(root: Path = ROOT) -> list[str]:
    """``module: owner._name`` for each private name a module takes from another node:
    ``from jarvis.x import _name``, ``x._name`` on an imported jarvis module, and
    ``obj._name`` (``obj`` not ``self``/``cls``) for an attribute only other nodes' classes
    define (the owner is then every node that defines it)."""
    trees = {}
    owners: dict[str, set[str]] = {}
    for path in sorted((root / "jarvis").rglob("*.py")):
        module = module_name(path, root)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        trees[module] = (tree, path.name == "__init__.py")
        for name in private_attributes(tree):
            owners.setdefault(name, set()).add(node_of(module))
    uses: set[str] = set()
    for module, (tree, is_package) in trees.items():
        mine = node_of(module)
        modules: dict[str, str] = {}  # local name -> the jarvis module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and alias.name.startswith("jarvis."):
                        modules[alias.asname] = alias.name
            elif isinstance(node, ast.ImportFrom):
                base = absolute(node, module, is_package)
                for alias in node.names:
                    if is_module(f"{base}.{alias.name}", root):
                        modules[alias.asname or alias.name] = f"{base}.{alias.name}"
                    elif is_private(alias.name) and node_of(base) != mine:
                        uses.add(f"{module}: {base}.{alias.name}")
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and is_private(node.attr)):
                continue
            value = node.value
            if isinstance(value, ast.Name) and value.id in modules:
                target = modules[value.id]
                if node_of(target) != mine:
                    uses.add(f"{module}: {target}.{node.attr}")
            elif isinstance(value, ast.Name) and value.id in ("self", "cls"):
                continue
            elif owners.get(node.attr) and mine not in owners[node.attr]:
                uses.add(f"{module}: {'|'.join(sorted(owners[node.attr]))}.{node.attr}")
    return sorted(uses)


def test_no_module_uses_another_packages_private_names() -> None:
    assert sorted(set(private_uses()) - KNOWN_PRIVATE_USES) == []


def test_the_known_private_uses_still_exist() -> None:
    """The allow-list shrinks: a use that is gone comes off it."""
    assert sorted(KNOWN_PRIVATE_USES - set(private_uses())) == []


def test_the_private_walk_sees_imports_modules_and_attributes(tmp_path: Path) -> None:
    files = {
        "jarvis/__init__.py": "",
        "jarvis/a/__init__.py": "",
        "jarvis/a/m.py": "_SECRET = 1\nclass A:\n    def _step(self): ...\n    def go(self):\n"
        "        self._state = 0\n        return self._step()\n",
        "jarvis/b/__init__.py": "",
        "jarvis/b/use.py": "from jarvis.a import m\nfrom jarvis.a.m import _SECRET\n"
        "def f(holder):\n    return m._SECRET, holder.a._state, holder.a._step(), "
        "holder._unknown\n",
        "jarvis/a/same.py": "from jarvis.a.m import _SECRET\ndef g(x):\n    return x._state\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert private_uses(tmp_path) == [
        "jarvis.b.use: jarvis.a._state",
        "jarvis.b.use: jarvis.a._step",
        "jarvis.b.use: jarvis.a.m._SECRET",
    ]
