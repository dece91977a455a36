"""The fresh-install test's wheelhouse: wheels of Jarvis's dependencies kept between runs
(``$JARVIS_TEST_WHEELHOUSE``, default ``~/.cache/jarvis-tests/wheelhouse``), from which
its fresh venv installs offline; and the copy of this tree it installs. ``make test``
fills the wheelhouse ahead (tests/prepare.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WHEELHOUSE = Path(
    os.environ.get("JARVIS_TEST_WHEELHOUSE")
    or Path.home() / ".cache" / "jarvis-tests" / "wheelhouse"
)


def copy_source(destination: Path) -> Path:
    """The files of this tree that git tracks or would track (what a clone has) but the
    tests, copied."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    for name in filter(None, listed.stdout.split("\0")):
        if name.startswith("tests/") or not (ROOT / name).is_file():
            continue
        (destination / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, destination / name)
    return destination


def fill_wheelhouse(pip: str | Path, source: Path) -> subprocess.CompletedProcess[str]:
    """Wheels of ``source`` and all it needs into the wheelhouse (what it lacks, from the
    package index, with ``pip`` of the Python that installs them)."""
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    argv = [str(pip), "wheel", "-q", "-w", str(WHEELHOUSE), "--find-links", str(WHEELHOUSE)]
    argv += [str(source), "setuptools>=77", "wheel"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=900)
