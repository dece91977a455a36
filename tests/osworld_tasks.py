"""Where the tests find OSWorld's own task files (``evaluation_examples/examples/DOMAIN/
ID.json``, unchanged). They are not kept in this repository: ``JARVIS_OSWORLD_TASKS`` names
a folder of domain folders, else ``../shared/osworld`` beside the checkout. Tests that need
them say so and are skipped when they are absent; the starter set and the tasks the tests
write themselves cover the same code in every run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REAL = Path(os.environ.get("JARVIS_OSWORLD_TASKS") or ROOT.parent / "shared" / "osworld")
needs_real_tasks = pytest.mark.skipif(
    not (REAL / "libreoffice_calc").is_dir(),
    reason=f"OSWorld's own task files are not here ({REAL}; set JARVIS_OSWORLD_TASKS)",
)
