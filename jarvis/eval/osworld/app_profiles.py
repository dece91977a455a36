"""Application profiles made once per machine and user, and copied into each OSWorld
run's fresh home, so an app starts as it does on OSWorld's image: after its first start.

- GIMP: its first start queries every plug-in (``pluginrc``) and builds the babl and GEGL
  caches of pixel conversions (``~/.cache/babl``, ``~/.cache/gegl-0.4``); OSWorld's image
  spent those seconds before its snapshot. Copying the caches too cuts GIMP's start by
  about a third of its CPU time.
- Thunderbird: a profile made by its first start (with ``installs.ini``, which makes it
  the install's default, so Thunderbird does not make another), and a ``user.js`` that
  turns off what a first start and a machine without network spend time on: the
  default-client question, the data-reporting notice, update and add-on checks, the
  remote start page, telemetry. A task that extracts a profile of its own (OSWorld's
  Thunderbird tasks download one) replaces it.

Each template is made in a folder of its own and renamed into place, so parallel runs
never see half of one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

GIMP_CONFIG = Path(".config") / "GIMP" / "2.10"
GIMP_CACHES = ("babl", "gegl-0.4", "gimp")
THUNDERBIRD = Path(".thunderbird")
THUNDERBIRD_CACHE = Path(".cache") / "thunderbird"
THUNDERBIRD_MADE_S = 90.0
THUNDERBIRD_PREFS = {
    "mail.shell.checkDefaultClient": False,
    "mail.provider.suppress_dialog_on_startup": True,
    "mail.rights.version": 1,
    "mail.spotlight.firstRunDone": True,
    "mailnews.start_page.enabled": False,
    "app.update.enabled": False,
    "app.update.auto": False,
    "app.normandy.enabled": False,
    "extensions.update.enabled": False,
    "extensions.getAddons.cache.enabled": False,
    "browser.shell.checkDefaultBrowser": False,
    "network.connectivity-service.enabled": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "datareporting.healthreport.uploadEnabled": False,
    "toolkit.telemetry.enabled": False,
    "toolkit.telemetry.reportingpolicy.firstRun": False,
    "calendar.integration.notify": False,
    "mail.cloud_files.enabled": False,
}


def _template(name: str, program: str, made: Path, make: Callable[[Path], None]) -> Path | None:
    """The template ``name`` (a home where ``make`` ran ``program`` once), made now when
    it is not there yet; None without the program or when making it failed."""
    if shutil.which(program) is None:
        return None
    template = Path(tempfile.gettempdir()) / f"jarvis-osworld-{name}-{os.getuid()}"
    if (template / made).exists():
        return template
    making = Path(tempfile.mkdtemp(prefix=f"{template.name}-"))
    try:
        make(making)
        if (making / made).exists():
            making.rename(template)
    except (OSError, subprocess.SubprocessError):  # another run made it first, or no app
        pass
    finally:
        shutil.rmtree(making, ignore_errors=True)
    return template if (template / made).exists() else None


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    env["XDG_CACHE_HOME"] = str(home / ".cache")
    env["GSETTINGS_BACKEND"] = "memory"  # no dconf service writing into it afterwards
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    return env


def _make_gimp(home: Path) -> None:
    subprocess.run(
        ["gimp", "-i", "-b", "(gimp-quit 0)"],
        env=_env(home),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
    )


def _make_thunderbird(home: Path) -> None:
    """Thunderbird's first start, headless, until its profile is made and is the install's
    default; then stopped, and its locks and its mark of an unfinished start removed."""
    proc = subprocess.Popen(
        ["thunderbird", "--headless"],
        env=_env(home),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + THUNDERBIRD_MADE_S
        while time.monotonic() < deadline and proc.poll() is None:
            if (
                list((home / THUNDERBIRD).glob("*/compatibility.ini"))
                and (home / THUNDERBIRD / "installs.ini").is_file()
            ):
                break
            time.sleep(0.2)
        time.sleep(1.0)  # the files it writes right after
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for pattern in ("*/lock", "*/.parentlock", "*/.startup-incomplete"):
        for mark in [
            *(home / THUNDERBIRD).glob(pattern),
            *(home / THUNDERBIRD_CACHE).glob(pattern),
        ]:
            mark.unlink(missing_ok=True)  # a start cut short is no crash to recover from
    if list((home / THUNDERBIRD).glob("*/compatibility.ini")):
        (home / THUNDERBIRD / "jarvis-made").touch()


def _pref(value: object) -> str:
    return "true" if value is True else "false" if value is False else repr(value)


def user_js() -> str:
    return "".join(f'user_pref("{k}", {_pref(v)});\n' for k, v in THUNDERBIRD_PREFS.items())


def _copy(source: Path, target: Path) -> None:
    if source.is_dir() and not target.exists():
        shutil.copytree(source, target, symlinks=True)


def seed_gimp(home: Path) -> None:
    """GIMP's profile and caches in the run's home, as after its first start (what is
    there already is kept)."""
    template = _template("gimp", "gimp", GIMP_CONFIG / "pluginrc", _make_gimp)
    if template is None:
        return
    _copy(template / GIMP_CONFIG, home / GIMP_CONFIG)
    for name in GIMP_CACHES:
        _copy(template / ".cache" / name, home / ".cache" / name)


def seed_thunderbird(home: Path) -> None:
    """Thunderbird's profile in the run's home, as after its first start, with
    :func:`user_js` (kept when the home has a Thunderbird profile already)."""
    made = THUNDERBIRD / "jarvis-made"
    template = _template("thunderbird", "thunderbird", made, _make_thunderbird)
    if template is None or (home / THUNDERBIRD).exists():
        return
    _copy(template / THUNDERBIRD, home / THUNDERBIRD)
    _copy(template / THUNDERBIRD_CACHE, home / THUNDERBIRD_CACHE)
    (home / made).unlink(missing_ok=True)
    for profile in (home / THUNDERBIRD).glob("*/compatibility.ini"):
        (profile.parent / "user.js").write_text(user_js(), encoding="utf-8")
