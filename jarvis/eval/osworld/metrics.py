"""OSWorld's metric functions, loaded one module at a time by name.

The functions are OSWorld's own (``vendor/metrics``, Apache-2.0, from the ``desktop-env``
1.0.2 wheel; see ``vendor/README.md``). Importing OSWorld's whole metrics package pulls
in torch, librosa and playwright; here a name is found in an index read from the vendored
sources (their top-level ``def``s, without importing anything), and only the module that
defines it is imported, when a task's evaluator first asks for it.
"""

from __future__ import annotations

import ast
import functools
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

VENDOR = Path(__file__).parent / "vendor" / "metrics"
PACKAGE = "jarvis.eval.osworld.vendor.metrics"
MODULES = ("basic_os", "docs", "general", "gimp", "pdf", "slides", "table", "thunderbird")
"""The metric modules carried, in the order of OSWorld's ``metrics/__init__.py``: a name two
define is the later one's there too (``check_file_exists``: gimp's). utils has helpers."""


class MetricError(LookupError):
    """No metric of that name here, or its module cannot be imported (a dependency of the
    ``osworld`` extra is missing); the message says which."""


@functools.cache
def index() -> dict[str, str]:
    """Metric name -> the module that defines it (public top-level functions)."""
    names: dict[str, str] = {}
    for module in MODULES:
        tree = ast.parse((VENDOR / f"{module}.py").read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                names[node.name] = module
    return names


def known(name: str) -> bool:
    return name in index()


def metric(name: str) -> Callable[..., Any]:
    """The metric function ``name``, its module imported now if it was not."""
    module = index().get(name)
    if module is None:
        raise MetricError(f"no OSWorld metric {name!r} among {', '.join(MODULES)}")
    try:
        loaded = importlib.import_module(f"{PACKAGE}.{module}")
    except ImportError as exc:
        raise MetricError(
            f"metric {name} needs {exc.name or exc}: pip install 'jarvis[osworld]'"
        ) from exc
    fn = getattr(loaded, name)
    if not callable(fn):
        raise MetricError(f"{module}.{name} is not a function")
    return fn
