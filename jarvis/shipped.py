"""Files Jarvis ships beside its package: the prompt templates (``prompts/``) and the
semantic presets (``data/config/presets.json``).

In a source tree (a clone, ``pip install -e .``) they sit next to the ``jarvis`` folder.
``pip install .`` puts them under the install's data directory as
``share/jarvis/...`` (``[tool.setuptools.data-files]`` in pyproject.toml), so a wheel
install finds them without the source tree.
"""

from __future__ import annotations

import site
import sysconfig
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parent.parent


def _installed_roots() -> list[Path]:
    roots = [Path(sysconfig.get_path("data")) / "share" / "jarvis"]
    user_base = site.getuserbase()
    if user_base:  # pip install --user
        roots.append(Path(user_base) / "share" / "jarvis")
    return roots


def shipped(relative: str) -> Path:
    """Where the shipped file or folder ``relative`` (e.g. ``"prompts"``) is: the source
    tree's when there is one, else the installed copy's (the first that exists; the source
    tree's path when none does, so an error names where it was looked for)."""
    source = SOURCE_ROOT / relative
    if source.exists():
        return source
    for root in _installed_roots():
        if (root / relative).exists():
            return root / relative
    return source
