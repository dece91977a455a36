"""The `jarvis` command: help, doctor, and clear refusals when a task cannot start."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

SECRET = "sk-doctor-secret-9f8e7d6c5b4a"


def jarvis(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("JARVIS_", "ANTHROPIC_", "OPENAI_"))
    }
    base.pop("DISPLAY", None)
    return subprocess.run(
        [sys.executable, "-m", "jarvis", *args],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def test_help_lists_commands() -> None:
    proc = jarvis("--help", env={})
    assert proc.returncode == 0
    for command in ("run", "doctor", "memory", "inbox"):
        assert command in proc.stdout
    assert "real mouse" in proc.stdout


def test_the_installed_console_script_runs() -> None:
    script = Path(sys.executable).parent / "jarvis"
    if not script.exists():
        pytest.skip("jarvis is not installed in this environment (make setup installs it)")
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "doctor" in proc.stdout and "serve" in proc.stdout


def test_run_help_lists_flags() -> None:
    proc = jarvis("run", "--help", env={})
    assert proc.returncode == 0
    for flag in ("--max-steps", "--provider", "--model", "--data-dir"):
        assert flag in proc.stdout


def test_no_command_prints_usage_and_exits_2() -> None:
    proc = jarvis(env={})
    assert proc.returncode == 2
    assert "usage" in proc.stdout.lower()


def test_doctor_all_pass_on_virtual_display(xserver, tmp_path: Path) -> None:
    with socket.socket() as endpoint:  # doctor connects to the base URL: something listens
        endpoint.bind(("127.0.0.1", 0))
        endpoint.listen()
        url = f"http://127.0.0.1:{endpoint.getsockname()[1]}"
        env = {**xserver.env(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": url}
        proc = jarvis("doctor", "--data-dir", str(tmp_path / "d"), env=env)
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [line.split()[0] for line in lines] == ["PASS"] * 10
    assert {line.split()[1] for line in lines} == {
        "backend", "display", "input", "provider", "data", "presets", "memory", "mcp", "skills",
        "accessibility",
    }  # fmt: skip
    assert "embedding minilm-int8 loads offline (384 dimensions" in proc.stdout
    assert "open_app" in proc.stdout  # the shipped semantic presets
    assert "1920x1080" in proc.stdout
    assert url in proc.stdout
    assert SECRET not in proc.stdout + proc.stderr


def test_doctor_fails_a_refused_endpoint(tmp_path: Path) -> None:
    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
    env = {"ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": url}
    proc = jarvis("doctor", "--data-dir", str(tmp_path), env=env)
    assert proc.returncode == 1
    line = next(x for x in proc.stdout.splitlines() if x.split()[1] == "provider")
    assert line.startswith("FAIL") and url in line and "Connection refused" in line


@pytest.mark.parametrize("listening", [True, False])
def test_doctor_never_prints_a_password_in_the_base_url(tmp_path: Path, listening: bool) -> None:
    with socket.socket() as endpoint:
        endpoint.bind(("127.0.0.1", 0))
        if listening:
            endpoint.listen()
        port = endpoint.getsockname()[1]
        url = f"http://user:hunter2secret@127.0.0.1:{port}/v1"
        env = {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": url, "JARVIS_PROVIDER": "openai"}
        proc = jarvis("doctor", "--data-dir", str(tmp_path), env=env)
    line = next(x for x in proc.stdout.splitlines() if x.split()[1] == "provider")
    assert line.startswith("PASS" if listening else "FAIL"), line
    assert f"127.0.0.1:{port}" in line
    assert "hunter2secret" not in proc.stdout + proc.stderr
    assert SECRET not in proc.stdout + proc.stderr


def test_doctor_reports_each_failure(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    proc = jarvis("doctor", "--data-dir", str(blocked / "sub"), env={})
    assert proc.returncode == 1
    out = proc.stdout
    assert "FAIL  display" in out and "DISPLAY is not set" in out
    assert "FAIL  input" in out
    assert "FAIL  provider" in out and "ANTHROPIC_API_KEY is not set" in out
    assert "FAIL  data dir" in out


def test_doctor_fails_a_bad_base_url_and_presets_file(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "presets.json").write_text('{"presets": [{"name": 1}]')
    env = {"ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": "localhost:8080"}
    proc = jarvis("doctor", "--data-dir", str(tmp_path), env=env)
    assert proc.returncode == 1
    assert "FAIL  provider" in proc.stdout and "not an http(s) URL" in proc.stdout
    assert "FAIL  presets" in proc.stdout and "presets.json" in proc.stdout
    assert "not valid JSON" in proc.stdout and SECRET not in proc.stdout


def test_run_with_a_bad_presets_file_is_one_clear_line(xserver, tmp_path: Path) -> None:
    """Checked once the brake is armed (the check loads the tools), before the agent."""
    (tmp_path / "config").mkdir()
    bad = tmp_path / "config" / "presets.json"
    bad.write_text('{"presets": [{"name": "go", "steps": [{"tool": "fly", "arguments": {}}]}]}')
    env = {**xserver.env(), "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    proc = jarvis("run", "do something", "--data-dir", str(tmp_path), env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    armed, refusal = proc.stdout.splitlines()
    assert armed.startswith("brake armed: ") and "Traceback" not in proc.stderr
    assert refusal.startswith("jarvis: ") and str(bad) in refusal


def test_doctor_names_the_openai_key(tmp_path: Path) -> None:
    proc = jarvis("doctor", "--provider", "openai", "--data-dir", str(tmp_path), env={})
    assert "OPENAI_API_KEY is not set" in proc.stdout


def test_run_without_key_says_what_to_do(tmp_path: Path) -> None:
    proc = jarvis("run", "do something", "--data-dir", str(tmp_path), env={})
    assert proc.returncode == 1
    assert proc.stdout.strip().count("\n") == 0
    assert "ANTHROPIC_API_KEY is not set" in proc.stdout


def test_run_without_display_says_what_to_do(tmp_path: Path) -> None:
    proc = jarvis(
        "run", "do something", "--data-dir", str(tmp_path), env={"ANTHROPIC_API_KEY": SECRET}
    )
    assert proc.returncode == 1
    assert "no display" in proc.stdout
    assert SECRET not in proc.stdout + proc.stderr


def test_malformed_settings_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "settings.json").write_text('{"max_steps": "lots"}')
    proc = jarvis("run", "x", "--data-dir", str(tmp_path), env={})
    assert proc.returncode == 2
    assert "settings.json" in proc.stderr and "max_steps" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("flag", ["--version"])
def test_version(flag: str) -> None:
    proc = jarvis(flag, env={})
    assert proc.returncode == 0 and proc.stdout.startswith("jarvis ")


def test_log_file_has_no_secrets(tmp_path: Path) -> None:
    import logging

    from jarvis.logfile import log_path, setup_logging

    os.environ["OPENAI_API_KEY"] = SECRET
    try:
        path = setup_logging(tmp_path)
        logging.getLogger("jarvis.test").warning("calling with key %s", SECRET)
        try:
            raise RuntimeError(f"auth failed for {SECRET}")
        except RuntimeError:
            logging.getLogger("jarvis.test").exception("provider error")
    finally:
        del os.environ["OPENAI_API_KEY"]
        root = logging.getLogger()
        for handler in [h for h in root.handlers if getattr(h, "jarvis", False)]:
            root.removeHandler(handler)
            handler.close()
    assert path == log_path(tmp_path)
    text = path.read_text()
    assert "calling with key [REDACTED]" in text
    assert "auth failed for [REDACTED]" in text
    assert SECRET not in text


def test_commands_write_the_days_log(tmp_path: Path) -> None:
    proc = jarvis("inbox", "add", "hello there", "--data-dir", str(tmp_path), env={})
    assert proc.returncode == 0, proc.stderr
    logs = list((tmp_path / "logs").glob("*.log"))
    assert len(logs) == 1
    assert "jarvis 0.1.0 inbox" in logs[0].read_text()
