"""What `jarvis run` loads before its first model request (issue 40): the chosen
provider's SDK, and not the other SDKs, chromadb (long-term memory off), mcp (no MCP server
configured), the web tool's libraries, the other commands' modules, SciPy (the screenshot's
pHash is numpy's) or aiohttp (the SDK's unused transport). A real `jarvis run` process on
Xvfb with the scripted model behind the real SDK; an audit hook in that process lists
``sys.modules`` the moment it connects to the model, and whether the garbage collector,
paused while the run started, is on again by then. Not timed: the seconds are
bench/startup.py's; this keeps a later import from bringing them back unseen."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from jarvis import gc_pause
from jarvis.cli import build_parser, named_command
from jarvis.config import Settings
from jarvis.llm.factory import sdk_name
from tests.fake_model import FakeModel, Reply
from tests.test_cli_run import run_env

# Runs `python -m jarvis` after an audit hook that writes sys.modules to $PROBE_OUT at the
# first connect to the model's port ($PROBE_PORT).
PROBE = """
import gc, json, os, runpy, sys
port, out = int(os.environ["PROBE_PORT"]), os.environ["PROBE_OUT"]
def hook(event, args):
    if event == "socket.connect" and isinstance(args[1], tuple) and args[1][1] == port:
        if not os.path.exists(out):
            found = {"modules": sorted(sys.modules), "gc": gc.isenabled()}
            with open(out, "w") as f:
                json.dump(found | {"frozen": gc.get_freeze_count()}, f)
sys.addaudithook(hook)
runpy.run_module("jarvis", run_name="__main__", alter_sys=True)
"""

NOT_BEFORE_THE_FIRST_REQUEST = (
    "openai",  # the other providers' SDKs
    "google.genai",
    "chromadb",  # long-term memory is off
    "jarvis.memory.long_term",
    "mcp",  # no MCP server is configured
    "jarvis.tools.mcp_bridge",
    "trafilatura",  # web_fetch's libraries: at its first call
    "jarvis.tools.web_fetcher",
    "jsonschema",  # only MCP tools have a JSON schema
    "textual",  # the other commands'
    "fastapi",
    "uvicorn",
    "jarvis.gateway.commands",
    "jarvis.gateway.serve_command",
    "jarvis.eval",
    "jarvis.tui.commands",
    "jarvis.fleet.commands",
    "jarvis.api.app",
    "scipy",  # the pHash is numpy's (jarvis.desktop.perceptual_hash)
    "imagehash",
    "aiohttp",  # the SDK's aiohttp transport (jarvis.llm.factory.AIOHTTP_TRANSPORTS)
)


@pytest.mark.usefixtures("xserver")
def test_jarvis_run_loads_only_its_provider_sdk_before_its_first_request(
    xserver: Any, fake_model: FakeModel, tmp_path: Path
) -> None:
    fake_model.set_default(Reply(text="Hello. Done."))
    out = tmp_path / "modules.json"
    env = run_env(xserver, fake_model) | {
        "PROBE_PORT": str(fake_model.base_url.rsplit(":", 1)[1]),
        "PROBE_OUT": str(out),
        "JARVIS_MAX_STEPS": "1",
    }
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, "run", "say hello", "--data-dir", str(tmp_path / "d")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert out.exists(), proc.stdout + proc.stderr  # it reached the model
    probed = json.loads(out.read_text())
    loaded = set(probed["modules"])
    assert {"anthropic", "jarvis.llm.anthropic", "jarvis.agent.agent"} <= loaded
    assert probed["gc"] and probed["frozen"] > 10_000  # on again, past start-up's objects
    early = [m for m in NOT_BEFORE_THE_FIRST_REQUEST if m in loaded]
    assert early == [], f"loaded before the first model request: {early}"
    first = fake_model.requests[0]  # the same first request: the task and a screenshot
    assert "say hello" in first.all_text() and first.image_count() >= 1


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["run", "open the notes"], "run"),
        (["--data-dir", "d", "-v", "run", "x"], "run"),
        (["--data-dir=d", "doctor"], "doctor"),
        (["runs", "list"], "runs"),
        (["-h", "run", "x"], None),  # the top level's help lists every command
        (["--version"], None),
        (["--data-dir", "d"], None),
        ([], None),
    ],
)
def test_the_command_named_on_the_command_line(argv: list[str], command: str | None) -> None:
    assert named_command(argv) == command


def test_the_lean_parser_reads_run_and_doctor_as_the_full_one_does() -> None:
    full, argv = build_parser(), ["--data-dir", "d", "run", "x", "--provider", "openai", "-v"]
    lean = build_parser(argv)
    assert vars(lean.parse_args(argv)).keys() == vars(full.parse_args(argv)).keys()
    assert lean.parse_args(argv).provider == "openai" and lean.parse_args(argv).verbose
    assert lean._subparsers is not None and full._subparsers is not None
    assert {"run", "doctor"} == set(_commands(lean)) < set(_commands(full))
    assert _commands(build_parser(["runs", "list"])) == _commands(full)


def _commands(parser: Any) -> list[str]:
    return [
        name
        for action in parser._subparsers._group_actions
        for name in getattr(action, "choices", {})
    ]


@pytest.mark.parametrize(
    ("provider", "sdk"),
    [("anthropic", "anthropic"), ("openai", "openai"), ("gemini", "google.genai")],
)
def test_the_sdk_loaded_ahead_is_the_chosen_providers(
    provider: str, sdk: str, tmp_path: Path
) -> None:
    settings = Settings(data_dir=tmp_path, provider=provider)  # type: ignore[arg-type]
    assert sdk_name(settings) == sdk


def test_the_collector_is_left_alone_where_it_was_not_paused() -> None:
    """A test calling the command's main in its own process: resume neither freezes its
    objects nor changes the collector."""
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    gc_pause.resume()
    assert gc.isenabled() and gc.get_freeze_count() == frozen
