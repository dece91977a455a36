"""The app profiles an OSWorld run's home is given (made once per machine, copied per run):
GIMP's with its plug-in list and pixel-conversion caches, Thunderbird's with the prefs that
turn first-run and network work off, which real Thunderbird opens instead of making a
profile of its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jarvis.eval.osworld.app_profiles import THUNDERBIRD_PREFS

pytestmark = pytest.mark.slow


def _profiled(home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "XAUTHORITY")}
    done = subprocess.run(
        [sys.executable, "-m", "jarvis.eval.osworld.profile"],
        env={**env, "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.skipif(shutil.which("gimp") is None, reason="GIMP is not installed")
def test_gimp_starts_from_its_plugin_list_and_caches(tmp_path: Path) -> None:
    _profiled(tmp_path)
    assert (tmp_path / ".config/GIMP/2.10/pluginrc").stat().st_size > 0
    assert any((tmp_path / ".cache/babl").iterdir())


@pytest.mark.skipif(shutil.which("thunderbird") is None, reason="Thunderbird is not installed")
def test_thunderbird_opens_the_seeded_profile_with_its_prefs(tmp_path: Path) -> None:
    _profiled(tmp_path)
    folder = tmp_path / ".thunderbird"
    assert (folder / "installs.ini").is_file()
    [user_js] = list(folder.glob("*/user.js"))
    assert 'user_pref("mail.shell.checkDefaultClient", false);' in user_js.read_text()
    assert len(user_js.read_text().splitlines()) == len(THUNDERBIRD_PREFS)
    before = sorted(p.name for p in folder.iterdir())
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "XAUTHORITY")}
    env |= {"HOME": str(tmp_path), "GSETTINGS_BACKEND": "memory"}
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    proc = subprocess.Popen(
        ["thunderbird", "--headless"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        lock = user_js.parent / "lock"
        while not lock.is_symlink() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert lock.is_symlink()  # Thunderbird runs on this profile
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert sorted(p.name for p in folder.iterdir()) == before  # and made none of its own
