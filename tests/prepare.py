"""What the slowest tests install, made ahead of the suite by ``make test`` (issue 40: the
suite's time is its tests', installs excluded), so that a fresh machine's first run
spends the same time in pytest as the next one:

- the container tests' image (tests/container_image.py: the base image, the wheelhouse
  of the image's dependencies, ``podman build`` of the Containerfile with this tree); the
  tests' own build then finds every layer in Podman's cache and still builds what changed;
- the fresh-install test's wheelhouse (tests/wheelhouse.py); the test still makes its
  fresh venv and installs this tree into it.

Each part says in one line what it did and how long it took; a part that fails (no
podman, no network) says why and is left to its tests, which then report it themselves.
Exit status 0 either way.

    python -m tests.prepare
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import container_image
from tests.wheelhouse import copy_source, fill_wheelhouse


def image() -> str:
    tool = container_image.podman()
    container_image.base_image(tool)
    return f"{tool.image} built in {container_image.build_image(tool):.0f} s"


def wheels() -> str:
    with tempfile.TemporaryDirectory(prefix="jarvis-wheels-") as folder:
        source = copy_source(Path(folder) / "jarvis-src")
        made = fill_wheelhouse(Path(sys.executable).parent / "pip", source)
    if made.returncode != 0:
        raise RuntimeError((made.stderr or made.stdout).strip().splitlines()[-1:])
    return "the fresh-install wheelhouse is whole"


def main() -> int:
    parts: list[tuple[str, Callable[[], str]]] = [("image", image), ("wheelhouse", wheels)]
    for name, part in parts:
        started = time.monotonic()
        try:
            said = part()
        except (Exception, pytest.fail.Exception) as exc:  # pytest.fail's is no Exception
            said = f"not made ({type(exc).__name__}: {str(exc)[-300:]}); its tests will say why"
        print(f"prepare {name}: {said} ({time.monotonic() - started:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
