"""Typing into xterm on a loaded machine, many times over: the case where CJK and emoji
once came out of order (issue 38). Two busy processes keep both cores loaded while the
corpus of ``tests/test_real_apps.py`` (printable ASCII, accents, a CJK paragraph with more
distinct characters than there are spare keycodes, emoji, tabs and newlines) is typed
into ``cat`` in xterm 20 times; after each run the file holds every run so far, byte for
byte: no character dropped, none out of order."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realapps import App, app_env
from tests.test_real_apps import CORPUS
from tests.xserver import start_xvfb

RUNS = 20
pytestmark = pytest.mark.skipif(shutil.which("xterm") is None, reason="xterm is not installed")


def first_difference(got: str, expected: str) -> int:
    pairs = zip(got, expected, strict=False)
    return next((i for i, (a, b) in enumerate(pairs) if a != b), min(len(got), len(expected)))


@pytest.fixture
def busy() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Two processes that spin until ended (one per core of a 2-core machine)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        yield procs
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=5)


@pytest.mark.slow
def test_xterm_takes_every_key_in_order_under_load(
    busy: list[subprocess.Popen[bytes]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jarvis.desktop.keytyper")
    with (
        tempfile.TemporaryDirectory(prefix="jarvis-soak-") as tmp,
        start_xvfb(1920, 1080, set_env=True) as server,
    ):
        from jarvis.desktop.input import Input

        work = Path(tmp)
        app = App.start("xterm", work, app_env(work / "home", server.env()))
        inp = Input(failsafe=False, display=server.where)
        written, seconds = "", []
        try:
            for run in range(RUNS):
                assert all(p.poll() is None for p in busy), "the load stopped"
                started = time.monotonic()
                inp.type_text(CORPUS)
                seconds.append(time.monotonic() - started)
                written += CORPUS
                deadline = time.monotonic() + 10
                while (got := app.files["doc"].read_text("utf-8", "replace")) != written:
                    if time.monotonic() > deadline:
                        first = first_difference(got, written)
                        pytest.fail(
                            f"run {run + 1} of {RUNS}: the file differs from what was typed at "
                            f"character {first}: {got[first - 10 : first + 30]!r}"
                        )
                    time.sleep(0.02)
        finally:
            app.close()
    assert len(seconds) == RUNS
    unproven = [r.getMessage() for r in caplog.records if "gave no sign" in r.getMessage()]
    assert unproven == [], "xterm's keymap fetches were not seen: typed without the proof"
