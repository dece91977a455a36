"""One model selection: every command's ``--provider`` offers every provider, and
``--provider P --model X`` (or ``--model X`` alone over a configured provider) runs with
model X of provider P, through each command's own way of building its settings.

The commands are found by walking the real ``jarvis`` parser, so a new command that takes
``--model`` or ``--provider`` is in the table (and fails it until it has a settings path
here)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jarvis.cli import build_parser, settings_from
from jarvis.config import MODEL_FIELDS, PROVIDERS, Settings, load_settings, model_overrides
from jarvis.eval.child import task_settings
from jarvis.eval.remote import claimed_settings
from jarvis.eval.runner import eval_model
from jarvis.fleet.commands import worker_settings
from tests.agent_harness import TEST_KEY
from tests.fake_gemini import FakeGemini, fake_gemini_fixture, fc

__all__ = ["fake_gemini_fixture"]

MODEL = "some-model-x"


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every command at every depth, by its words (``"fleet status"``), with its parser."""
    found: dict[str, Any] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                words = (*path, name)
                found[" ".join(words)] = child
                found |= _commands(child, words)
    return found


def _option(parser: argparse.ArgumentParser, flag: str) -> argparse.Action | None:
    return next((a for a in parser._actions if flag in a.option_strings), None)


def _takes_a_model(parser: argparse.ArgumentParser) -> bool:
    action = _option(parser, "--model")
    return action is not None and action.nargs != 0  # replay's --model is a switch


PARSER = build_parser()
COMMANDS = _commands(PARSER)
WITH_PROVIDER = sorted(c for c, p in COMMANDS.items() if _option(p, "--provider"))
WITH_MODEL = sorted(c for c, p in COMMANDS.items() if _takes_a_model(p))


def _argv(command: str, data: Path, *flags: str) -> list[str]:
    """The command line: its words, a value for each positional, the flags."""
    positionals = [
        "x"
        for a in COMMANDS[command]._actions
        if not a.option_strings and not isinstance(a, argparse._SubParsersAction)
    ]
    return [*command.split(), *positionals, "--data-dir", str(data), *flags]


def _eval_child(args: argparse.Namespace) -> Settings:
    """`jarvis eval` on this machine: the provider the command passes on, then the child."""
    provider = args.eval_provider or settings_from(args).provider
    spec = {"data_dir": args.data_dir, "provider": provider, "model": args.eval_model}
    return task_settings(spec, steps=5)


def _eval_fleet(args: argparse.Namespace) -> Settings:
    """`jarvis eval --fleet`: what the worker that claims the task runs with."""
    worker = settings_from(argparse.Namespace(data_dir=args.data_dir))
    provider = args.eval_provider or settings_from(args).provider
    return claimed_settings(worker, {"provider": provider, "model": args.eval_model}, steps=5)


SETTINGS_PATHS: dict[str, Callable[[argparse.Namespace], Settings]] = {
    "run": settings_from,
    "serve": settings_from,
    "calibrate": settings_from,
    "worker": lambda args: worker_settings(settings_from(args), None),
    "eval": _eval_child,
    "eval --fleet=redis://127.0.0.1:6379": _eval_fleet,
}


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("JARVIS_PROVIDER", "JARVIS_MODEL", "JARVIS_OPENAI_MODEL", "JARVIS_GEMINI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("JARVIS_DATA_DIR", raising=False)


def _data(tmp_path: Path, **settings: Any) -> Path:
    data = tmp_path / "data"
    (data / "config").mkdir(parents=True)
    (data / "config" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    return data


def test_the_table_has_every_command() -> None:
    assert set(WITH_PROVIDER) == {
        "run",
        "doctor",
        "serve",
        "worker",
        "eval",
        "calibrate",
        "replay",
    }
    assert set(WITH_MODEL) == {"run", "serve", "worker", "eval", "calibrate"}
    assert {path.split()[0] for path in SETTINGS_PATHS} == set(WITH_MODEL)


@pytest.mark.parametrize("command", WITH_PROVIDER)
def test_every_provider_flag_offers_every_provider(command: str) -> None:
    action = _option(COMMANDS[command], "--provider")
    assert action is not None and action.choices is not None
    assert set(PROVIDERS) <= set(action.choices)
    assert set(action.choices) - set(PROVIDERS) <= {"oracle"}  # eval's scripted provider


@pytest.mark.parametrize("command", WITH_PROVIDER)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_provider_flag_sets_the_provider(command: str, provider: str, tmp_path: Path) -> None:
    data = _data(tmp_path)
    args = PARSER.parse_args(_argv(command, data, "--provider", provider))
    path = SETTINGS_PATHS.get(command, settings_from)
    settings = path(args)
    assert settings.provider == provider
    assert settings.active_model == Settings().model_for(settings.provider)  # unchanged


@pytest.mark.parametrize("path_name", sorted(SETTINGS_PATHS))
@pytest.mark.parametrize("configured", PROVIDERS)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_provider_and_model_flags(
    path_name: str, configured: str, provider: str, tmp_path: Path
) -> None:
    command, *rest = path_name.split()
    data = _data(tmp_path, provider=configured)
    args = PARSER.parse_args(_argv(command, data, *rest, "--provider", provider, "--model", MODEL))
    settings = SETTINGS_PATHS[path_name](args)
    assert (settings.provider, settings.active_model) == (provider, MODEL)
    for other in PROVIDERS:  # the other providers' models are the configured ones
        if other != provider:
            assert settings.model_for(other) == Settings().model_for(other)


@pytest.mark.parametrize("path_name", sorted(SETTINGS_PATHS))
@pytest.mark.parametrize("configured", PROVIDERS)
def test_model_flag_alone_is_the_configured_providers(
    path_name: str, configured: str, tmp_path: Path
) -> None:
    """The bug: with "provider": "gemini" in settings.json, --model went to openai_model."""
    command, *rest = path_name.split()
    data = _data(tmp_path, provider=configured)
    args = PARSER.parse_args(_argv(command, data, *rest, "--model", MODEL))
    settings = SETTINGS_PATHS[path_name](args)
    assert (settings.provider, settings.active_model) == (configured, MODEL)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_eval_names_the_model_it_runs(provider: str, tmp_path: Path) -> None:
    settings = load_settings(_data(tmp_path, provider="anthropic"))
    assert eval_model(settings, provider, MODEL) == MODEL
    assert eval_model(settings, provider, None) == Settings().model_for(provider)  # type: ignore[arg-type]
    assert eval_model(settings, "oracle", MODEL) == "oracle"


def test_every_provider_has_a_model_field() -> None:
    assert set(MODEL_FIELDS) == set(PROVIDERS)
    assert set(MODEL_FIELDS.values()) <= set(Settings.model_fields)
    assert len(set(MODEL_FIELDS.values())) == len(PROVIDERS)


@pytest.mark.parametrize(
    ("provider", "model", "configured", "expected"),
    [
        (None, None, "gemini", {}),
        ("openai", None, "gemini", {"provider": "openai"}),
        (None, "x", "gemini", {"gemini_model": "x"}),
        (None, "x", "anthropic", {"model": "x"}),
        ("anthropic", "x", "gemini", {"provider": "anthropic", "model": "x"}),
        ("openai", "x", "anthropic", {"provider": "openai", "openai_model": "x"}),
        ("gemini", "x", "openai", {"provider": "gemini", "gemini_model": "x"}),
        ("gemini", "", "openai", {"provider": "gemini"}),
    ],
)
def test_model_overrides(
    provider: Any, model: str | None, configured: Any, expected: dict[str, str]
) -> None:
    assert model_overrides(provider, model, configured) == expected


JARVIS_RUN = (sys.executable, "-m", "jarvis", "run")
GEMINI_X = ("--provider", "gemini", "--model", MODEL)


def _bare_env() -> dict[str, str]:
    """No model keys, no JARVIS_* settings: only what starts Python with this checkout."""
    return {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
        "ANONYMIZED_TELEMETRY": "False",
    }


def test_run_with_gemini_and_a_model_asks_that_model(
    xserver: Any, fake_gemini: FakeGemini, tmp_path: Path
) -> None:
    """`jarvis run --provider gemini --model X` as a user runs it, with OpenAI configured:
    the request goes to Gemini's API for model X."""
    fake_gemini.script([fc("call_user", message="which file?")])
    data = _data(tmp_path, provider="openai")
    env = {**xserver.env(), **_bare_env()}
    env |= {"GEMINI_API_KEY": TEST_KEY, "GEMINI_BASE_URL": fake_gemini.base_url}
    env |= {"JARVIS_MAX_RETRIES": "0", "JARVIS_LONG_TERM_MEMORY": "false"}
    env |= {"JARVIS_SETTLE_CEILING_MS": "300"}
    proc = subprocess.run(
        [*JARVIS_RUN, "find the file", "--data-dir", str(data), *GEMINI_X],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    out = proc.stdout + proc.stderr
    assert fake_gemini.requests, out
    assert f"/models/{MODEL}:" in fake_gemini.requests[0].path, out
    assert proc.returncode == 3, out  # needs_user: the scripted call_user
    assert TEST_KEY not in out


def test_run_with_gemini_and_no_key_names_gemini(tmp_path: Path) -> None:
    """Without a key the run stops before any model call and names Gemini's variable."""
    proc = subprocess.run(
        [*JARVIS_RUN, "x", "--data-dir", str(_data(tmp_path)), *GEMINI_X],
        env=_bare_env(),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "GEMINI_API_KEY is not set" in proc.stdout


def test_doctor_checks_gemini_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """`jarvis doctor --provider gemini` names Gemini's key; google-genai's own name counts."""
    from jarvis.doctor import check_provider, has_key

    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    check = check_provider(Settings(provider="gemini"))
    assert not check.ok and "GEMINI_API_KEY is not set (provider gemini)" in check.detail
    monkeypatch.setenv("GOOGLE_API_KEY", TEST_KEY)
    assert has_key("gemini")
