"""The Jarvis desktop image for the container tests, built with Podman from the
``Containerfile`` users build.

Docker Hub is not reachable here, so the base image is made locally: ``debootstrap
--variant=minbase bookworm`` from the Debian mirror this machine's apt uses, imported as
``debian:bookworm-slim``; then ``podman build --pull=never``. Podman runs with ``runc``,
the ``cgroupfs`` manager and no default ulimits (a ``containers.conf`` of our own, named
by ``CONTAINERS_CONF``), and ``--network host`` (the build reaches the package indexes,
the containers reach the tests' loopback model and Redis).

Cached between runs on one machine (``~/.cache/jarvis-tests/container``, or
``$JARVIS_TEST_CONTAINER_CACHE``): the debootstrap tarball, keyed by a hash of what
makes it (mirror, suite, variant); the imported base image (labelled with that key);
a wheelhouse of the dependencies, keyed by their list; and Podman's layers.

The test build installs from this machine, not the network (the Containerfile is the
one users build; only the build's mounts differ):
- pip: the wheelhouse, made on the host by ``pip wheel`` (the host's pip configuration,
  its local indexes and download cache make this quick), reaches the build read-only
  with a ``pip.conf`` of ``no-index`` and ``find-links`` bound over ``/etc/pip.conf``.
- apt: the host's downloaded packages (``/var/cache/apt/archives``) as an overlay: apt
  takes what matches the index there and downloads the rest into the overlay's upper
  layer, which is thrown away with what ``apt-get clean`` removes; the host's files are
  never written.

``jarvis_image`` (a session fixture) yields a :class:`Podman` with the built image.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
BASE = "docker.io/library/debian:bookworm-slim"
IMAGE = "localhost/jarvis-desktop:test"
SUITE, VARIANT = "bookworm", "minbase"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
BASE_LABEL = "org.jarvis.test-base"
CONTAINERS_CONF = """[containers]
default_ulimits = []
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
"""
CA_BUNDLES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt")
APT_ARCHIVES = Path("/var/cache/apt/archives")
# an empty folder of the base image: mounting there leaves nothing behind (the bind over
# /etc/pip.conf leaves an empty file in the test image: an empty pip configuration)
WHEELS_IN_BUILD = "/mnt"
BUILD_PIP_CONF = f"[global]\nno-index = true\nfind-links = {WHEELS_IN_BUILD}\n"
# Debian bookworm's python3: environment markers can differ between patch releases
# (redis wants async-timeout below 3.11.3)
IMAGE_PYTHON = "3.11.2"


def cache_dir() -> Path:
    default = Path.home() / ".cache" / "jarvis-tests" / "container"
    path = Path(os.environ.get("JARVIS_TEST_CONTAINER_CACHE", default))
    path.mkdir(parents=True, exist_ok=True)
    return path


def debian_mirror(sources: Path = Path("/etc/apt")) -> str:
    """The Debian archive this machine's apt uses (deb822 ``.sources`` or one-line form)."""
    files = [sources / "sources.list", *sorted((sources / "sources.list.d").glob("*"))]
    for path in files:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for stanza in re.split(r"\n\s*\n", text):
            uris = re.search(r"^URIs:\s*(\S+)", stanza, re.M)
            suites = re.search(r"^Suites:\s*(.+)$", stanza, re.M)
            if uris and suites and SUITE in suites.group(1).split():
                return uris.group(1).rstrip("/")
        for line in text.splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "deb" and SUITE in parts[2:3]:
                url = next((p for p in parts[1:] if "://" in p), None)
                if url:
                    return url.rstrip("/")
    return DEFAULT_MIRROR


@dataclass
class Podman:
    """``podman`` with this tests' configuration."""

    env: dict[str, str]
    image: str = IMAGE
    build_s: float = 0.0

    def run(
        self, *args: str, check: bool = True, timeout: float = 120, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            ["podman", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            input=input,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"podman {' '.join(args[:2])} failed: {proc.stderr[-2000:]}")
        return proc

    def exists(self, image: str) -> bool:
        return self.run("image", "exists", image, check=False).returncode == 0

    def label(self, image: str, name: str) -> str:
        fmt = '{{index .Labels "' + name + '"}}'
        return self.run("image", "inspect", "--format", fmt, image).stdout.strip()

    def exec(self, container: str, *argv: str, timeout: float = 60) -> str:
        return self.run("exec", container, *argv, timeout=timeout).stdout

    def logs(self, container: str) -> str:
        proc = self.run("logs", container, check=False)
        return proc.stdout + proc.stderr

    def remove(self, container: str) -> None:
        self.run("rm", "--force", "--time", "0", container, check=False, timeout=60)


def podman() -> Podman:
    if shutil.which("podman") is None or shutil.which("runc") is None:
        pytest.fail("podman and runc are not installed (make system installs them)")
    conf = cache_dir() / "containers.conf"
    if not conf.exists() or conf.read_text() != CONTAINERS_CONF:
        conf.write_text(CONTAINERS_CONF)
    return Podman(env={**os.environ, "CONTAINERS_CONF": str(conf)})


def base_image(tool: Podman) -> None:
    """``debian:bookworm-slim``: the one there, or one made with debootstrap (cached)."""
    mirror = debian_mirror()
    key = hashlib.sha256(f"{mirror} {SUITE} {VARIANT} v2".encode()).hexdigest()[:16]
    if tool.exists(BASE) and tool.label(BASE, BASE_LABEL) in ("", key):
        return  # a real one (pulled) or ours from an earlier run
    tarball = cache_dir() / f"{SUITE}-{VARIANT}-{key}.tar"
    if not tarball.exists():
        if shutil.which("debootstrap") is None:
            pytest.fail("debootstrap is not installed (make system installs it)")
        root = cache_dir() / f"rootfs-{key}"
        shutil.rmtree(root, ignore_errors=True)
        made = subprocess.run(
            ["debootstrap", f"--variant={VARIANT}", SUITE, str(root), mirror],
            capture_output=True,
            text=True,
            timeout=900,
        )
        if made.returncode != 0:
            pytest.fail(f"debootstrap failed: {made.stdout[-1500:]}{made.stderr[-1500:]}")
        slim(root)
        partial = tarball.with_suffix(".partial")
        subprocess.run(["tar", "-C", str(root), "-cf", str(partial), "."], check=True)
        partial.rename(tarball)
        shutil.rmtree(root, ignore_errors=True)
    tool.run("import", "--change", f"LABEL {BASE_LABEL}={key}", str(tarball), BASE, timeout=300)


SLIM_EXCLUDES = """path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
"""


def slim(root: Path) -> None:
    """What Debian's -slim images leave out (debuerreotype's slimify): docs but the
    copyrights, manuals, translations, and the downloaded packages and indexes."""
    (root / "etc/dpkg/dpkg.cfg.d/docker").write_text(SLIM_EXCLUDES)
    for folder in ("usr/share/man", "usr/share/groff", "usr/share/info", "usr/share/lintian"):
        for item in (root / folder).glob("*"):
            _remove(item)
    for item in (root / "usr/share/locale").glob("*"):
        if item.name != "locale.alias":
            _remove(item)
    for item in (root / "usr/share/doc").rglob("*"):
        if (item.is_file() or item.is_symlink()) and item.name != "copyright":
            item.unlink()
    for folder in ("var/cache/apt/archives", "var/cache/apt", "var/lib/apt/lists"):
        for item in (root / folder).glob("*"):
            if item.is_file():
                item.unlink()


def _remove(item: Path) -> None:
    if item.is_dir() and not item.is_symlink():
        shutil.rmtree(item)
    else:
        item.unlink()


def wheelhouse() -> Path | None:
    """Wheels of the image's Python dependencies (and the build's setuptools), made on
    the host with its pip; None when the host's Python cannot make them for the image
    or pip fails (the build then downloads as users' builds do)."""
    if sys.version_info[:2] != (3, 11) or platform.machine() != "x86_64":
        return None
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    wanted = [*pyproject["build-system"]["requires"], *pyproject["project"]["dependencies"]]
    key = hashlib.sha256("\n".join(["v1", *wanted]).encode()).hexdigest()[:16]
    path = cache_dir() / f"wheels-{key}"
    if (path / ".complete").exists():
        return path
    partial = cache_dir() / f"wheels-{key}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    (partial / "requirements.txt").write_text("\n".join(wanted) + "\n", encoding="utf-8")
    pip = [sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check"]
    pip += ["--wheel-dir", str(partial)]
    made = subprocess.run(
        [*pip, "--requirement", str(partial / "requirements.txt")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    while made.returncode == 0 and (missing := image_only_requirements(partial)):
        made = subprocess.run([*pip, *missing], capture_output=True, text=True, timeout=900)
    if made.returncode != 0:
        print(f"no wheelhouse (the build downloads): {made.stderr[-1000:]}")
        shutil.rmtree(partial, ignore_errors=True)
        return None
    for old in cache_dir().glob("wheels-*"):  # an earlier list's wheels
        if old != partial:
            shutil.rmtree(old, ignore_errors=True)
    (partial / ".complete").touch()
    partial.rename(path)
    return path


def image_only_requirements(wheels: Path) -> list[str]:
    """Requirements of the wheels in ``wheels`` that the image's Python needs and this
    one does not (markers on ``python_full_version``), and no wheel there satisfies."""
    host = default_environment()
    image = {**host, "python_full_version": IMAGE_PYTHON}
    have: dict[str, str] = {}
    needed: list[Requirement] = []
    for wheel in wheels.glob("*.whl"):
        with zipfile.ZipFile(wheel) as archive:
            name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
            metadata = Parser().parsestr(archive.read(name).decode("utf-8"))
        have[canonicalize_name(metadata["Name"])] = metadata["Version"]
        for line in metadata.get_all("Requires-Dist") or []:
            requirement = Requirement(line)
            marker = requirement.marker
            if (
                marker
                and marker.evaluate({**image, "extra": ""})
                and not marker.evaluate({**host, "extra": ""})
            ):
                needed.append(requirement)
    return [
        f"{r.name}{r.specifier}"
        for r in needed
        if not r.specifier.contains(have.get(canonicalize_name(r.name), "0"), prereleases=True)
    ]


def local_sources() -> list[str]:
    """``podman build`` options that let the build install from this machine."""
    options: list[str] = []
    wheels = wheelhouse()
    if wheels is not None:
        conf = cache_dir() / "build-pip.conf"
        if not conf.exists() or conf.read_text() != BUILD_PIP_CONF:
            conf.write_text(BUILD_PIP_CONF)
        options += ["--volume", f"{wheels}:{WHEELS_IN_BUILD}:ro"]
        options += ["--volume", f"{conf}:/etc/pip.conf:ro"]
    if any(APT_ARCHIVES.glob("*.deb")):
        options += ["--volume", f"{APT_ARCHIVES}:{APT_ARCHIVES}:O"]
    return options


def build_image(tool: Podman) -> float:
    """Build the Containerfile; the seconds it took."""
    args = ["build", "--pull=never", "--network", "host", "--format", "docker"]
    ca = next((c for c in CA_BUNDLES if os.path.isfile(c)), None)
    if ca:  # a TLS-inspecting proxy's CA reaches pip as a build secret, not in the image
        args += ["--secret", f"id=ca-bundle,src={ca}"]
    args += local_sources()
    args += ["-t", tool.image, "-f", str(ROOT / "Containerfile"), str(ROOT)]
    started = time.monotonic()
    tool.run(*args, timeout=1800)
    return time.monotonic() - started


@pytest.fixture(scope="session")
def jarvis_image() -> Iterator[Podman]:
    tool = podman()
    base_image(tool)
    tool.build_s = build_image(tool)
    size = tool.run("image", "inspect", "--format", "{{.Size}}", tool.image).stdout.strip()
    print(f"jarvis image: built in {tool.build_s:.0f} s, {int(size) / 1e9:.2f} GB")
    yield tool


def free_display(skip: tuple[str, ...] = ()) -> str:
    """An X display number of this helper's range (:200-:209) that nothing holds: with
    ``--network host`` a container's X server binds the host's abstract socket."""
    for number in range(200, 210):
        if f":{number}" in skip:
            continue
        if Path(f"/tmp/.X11-unix/X{number}").exists() or Path(f"/tmp/.X{number}-lock").exists():
            continue
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.bind(f"\0/tmp/.X11-unix/X{number}")
        except OSError:
            continue
        finally:
            probe.close()
        return f":{number}"
    pytest.fail("no free X display in :200-:209")


def wait_for(condition: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.2)
