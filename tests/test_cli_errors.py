"""What a user gets wrong on day one gets one line, never a traceback, and the documented
exit code: every command with a broken settings file and an unknown flag; the commands that
use the display or the model with a stale DISPLAY and a base URL without a scheme; and an X
server started without a cookie file (``Xvfb :1 &``) with no ``~/.Xauthority``, where the
agent must simply work."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from jarvis.cli import _subparsers, build_parser
from tests.fake_model import FakeModel, Reply, call
from tests.test_serve import NEW_TASK, is_router

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-day-one-5e4d3c2b1a"
STALE_DISPLAY = ":424242"  # set, but no X server there

# Every leaf command with the fewest arguments it takes. A new command must be added here.
COMMANDS: dict[str, list[str]] = {
    "run": ["run", "open the editor"],
    "doctor": ["doctor"],
    "memory add": ["memory", "add", "likes tea"],
    "memory search": ["memory", "search", "tea"],
    "memory list": ["memory", "list"],
    "memory forget": ["memory", "forget", "m-1"],
    "memory compress": ["memory", "compress", "--dry-run"],
    "memory repair": ["memory", "repair"],
    "memory check": ["memory", "check"],
    "inbox add": ["inbox", "add", "hello"],
    "inbox list": ["inbox", "list"],
    "serve": ["serve", "--http", "127.0.0.1:0"],
    "mcp list": ["mcp", "list"],
    "mcp serve": ["mcp", "serve", "--no-start"],
    "stop": ["stop"],
    "login": ["login"],
    "runs": ["runs"],
    "runs show": ["runs", "show", "T001"],
    "report": ["report", "T001"],
    "replay": ["replay", "T001"],
    "eval": ["eval", "starter"],
    "email test": ["email", "test", "mail.eml"],
    "tui": ["tui", "--no-start"],
    "calibrate": ["calibrate"],
    "profiles list": ["profiles", "list"],
    "profiles show": ["profiles", "show", "generic"],
    "profiles test": ["profiles", "test", "generic", "--screen", "1024x768", "click(1, 1)"],
    "worker": ["worker", "--redis", "redis://127.0.0.1:9"],
    "workers": ["workers", "--redis", "redis://127.0.0.1:9"],
    "secrets add": ["secrets", "add", "site"],
    "secrets list": ["secrets", "list"],
    "secrets remove": ["secrets", "remove", "site"],
    "record": ["record", "a task"],
    "schedule add": ["schedule", "add", "every hour", "check the mail"],
    "schedule list": ["schedule", "list"],
    "schedule remove": ["schedule", "remove", "S1"],
    "schedule pause": ["schedule", "pause", "S1"],
    "schedule resume": ["schedule", "resume", "S1"],
}


def leaf_commands(parser: argparse.ArgumentParser) -> set[str]:
    found: set[str] = set()
    for child in _subparsers(parser):
        name = child.prog.removeprefix("jarvis ")
        found.add(name)
        found |= leaf_commands(child)
    return found


def test_the_table_names_every_command() -> None:
    # only their actions run anything
    groups = {"memory", "inbox", "mcp", "email", "profiles", "secrets", "schedule"}
    assert leaf_commands(build_parser()) - groups == set(COMMANDS)


def jarvis(
    argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("JARVIS_", "ANTHROPIC_", "OPENAI_", "DISPLAY", "XAUTHORITY"))
    }
    base |= {"PYTHONPATH": str(ROOT), "ANONYMIZED_TELEMETRY": "False", "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "jarvis", *argv],
        env=base | env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def utf16_settings(data: Path) -> None:
    (data / "config").mkdir(parents=True)
    (data / "config" / "settings.json").write_bytes('{"max_steps": 3}'.encode("utf-16"))


def directory_settings(data: Path) -> None:
    (data / "config" / "settings.json").mkdir(parents=True)


@pytest.mark.parametrize(
    ("broken", "expect"),
    [
        (utf16_settings, "settings.json: saved as UTF-16; save it as UTF-8"),
        (directory_settings, "settings.json: cannot read it: Is a directory"),
        (None, "error: unrecognized arguments: --bogus"),
    ],
    ids=["settings-utf16", "settings-directory", "unknown-flag"],
)
def test_every_command_says_one_line_and_exits_2(broken: Any, expect: str, tmp_path: Path) -> None:
    def one(name: str) -> str | None:
        data = tmp_path / name.replace(" ", "-") / "data"
        data.parent.mkdir()
        if broken is not None:
            broken(data)
        extra = ["--bogus"] if broken is None else []
        env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
        proc = jarvis([*COMMANDS[name], "--data-dir", str(data), *extra], env, data.parent)
        out = proc.stdout + proc.stderr
        if "Traceback" in out or proc.returncode != 2 or expect not in proc.stderr:
            return f"{name}: exit {proc.returncode}\n{out[-2000:]}"
        if broken is None:  # the command's own usage, not the top level's
            if f"usage: jarvis {name}" not in proc.stderr:
                return f"{name}: not its own usage\n{proc.stderr}"
        elif proc.stderr.strip().count("\n") or proc.stdout.strip():
            return f"{name}: more than one line\n{out}"
        return None

    with ThreadPoolExecutor(2) as pool:
        problems = [p for p in pool.map(one, COMMANDS) if p is not None]
    assert not problems, "\n\n".join(problems)


def one_line(proc: subprocess.CompletedProcess[str]) -> str:
    out = (proc.stdout + proc.stderr).strip()
    assert "Traceback" not in out and "\n" not in out, out
    return out


@pytest.mark.parametrize("argv", [["run", "open the editor"], ["serve", "--once"], ["serve"]])
def test_a_stale_display_is_one_line(argv: list[str], tmp_path: Path) -> None:
    env = {"ANTHROPIC_API_KEY": KEY, "DISPLAY": STALE_DISPLAY}
    proc = jarvis([*argv, "--http", "127.0.0.1:0"] if argv == ["serve"] else argv, env, tmp_path)
    assert proc.returncode == 1
    line = one_line(proc)
    assert line.startswith(f"jarvis: cannot connect to the X display {STALE_DISPLAY} (DISPLAY)")
    assert "waiting for messages" not in line and KEY not in line


def test_doctor_says_the_stale_display_in_its_lines(tmp_path: Path) -> None:
    env = {"ANTHROPIC_API_KEY": KEY, "DISPLAY": STALE_DISPLAY, "JARVIS_LONG_TERM_MEMORY": "false"}
    proc = jarvis(["doctor", "--data-dir", str(tmp_path / "data")], env, tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "FAIL  display" in proc.stdout and "FAIL  input" in proc.stdout


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["run", "open the editor"], 1),
        (["serve", "--once"], 1),
        (["eval", "starter"], 2),
        (["calibrate"], 2),
    ],
)
def test_a_base_url_without_a_scheme_is_refused_at_once(
    argv: list[str], code: int, tmp_path: Path
) -> None:
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": "localhost:18001"}
    started = time.monotonic()
    proc = jarvis([*argv, "--data-dir", str(tmp_path / "data")], env, tmp_path)
    assert time.monotonic() - started < 20  # no retries: it is not a URL
    assert proc.returncode == code
    line = one_line(proc)
    assert "ANTHROPIC_BASE_URL is not an http(s) URL: 'localhost:18001'" in line


# --------------------------------------------------------- an X server with no cookie file


@contextmanager
def bare_xvfb() -> Iterator[str]:
    """``Xvfb`` as people start it in containers: no ``-auth``, so no access control and no
    cookie file anywhere. Yields the display name."""
    read, write = os.pipe()
    server = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write), "-noreset", "-nolisten", "tcp",
         "-screen", "0", "1024x768x24"],
        pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(write)
    try:
        with os.fdopen(read) as pipe:
            number = pipe.readline().strip()
        assert number.isdigit(), "Xvfb did not report its display"
        yield f":{number}"
    finally:
        server.terminate()
        server.wait(10)


@pytest.fixture
def no_cookie_env(tmp_path: Path, fake_model: FakeModel) -> Iterator[dict[str, str]]:
    home = tmp_path / "home"
    home.mkdir()
    with bare_xvfb() as display:
        yield {
            "DISPLAY": display,
            "HOME": str(home),  # no ~/.Xauthority, and XAUTHORITY is not passed on
            "ANTHROPIC_API_KEY": KEY,
            "ANTHROPIC_BASE_URL": fake_model.anthropic_base_url,
            "JARVIS_MAX_RETRIES": "0",
            "JARVIS_LONG_TERM_MEMORY": "false",
            "JARVIS_SETTLE_CEILING_MS": "300",
            "PATH": os.environ["PATH"],
        }
    assert not (home / ".Xauthority").exists()


def a_step_that_moves_then_asks() -> Reply:
    return Reply(
        text="Thought: move, then ask.",
        tool_calls=[call("mouse_move", x=30, y=40), call("call_user", message="which file?")],
    )


def test_run_works_on_an_x_server_without_a_cookie_file(
    no_cookie_env: dict[str, str], fake_model: FakeModel, tmp_path: Path
) -> None:
    fake_model.script(a_step_that_moves_then_asks())
    proc = jarvis(["run", "tidy up", "--data-dir", str(tmp_path / "data")], no_cookie_env, tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 3, out  # needs_user: the task ran to its ending
    assert "✓ mouse_move" in out and "Traceback" not in out and "Xauth" not in out


def test_serve_works_on_an_x_server_without_a_cookie_file(
    no_cookie_env: dict[str, str], fake_model: FakeModel, tmp_path: Path
) -> None:
    def answer(request: Any) -> Reply:
        return NEW_TASK if is_router(request) else a_step_that_moves_then_asks()

    fake_model.set_default(answer)
    data = tmp_path / "data"
    added = jarvis(["inbox", "add", "tidy up", "--data-dir", str(data)], no_cookie_env, tmp_path)
    assert added.returncode == 0, added.stderr
    proc = jarvis(["serve", "--once", "--data-dir", str(data)], no_cookie_env, tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "ran 1 task(s): 1 needs_user" in out and "Traceback" not in out


def test_doctor_passes_input_on_an_x_server_without_a_cookie_file(
    no_cookie_env: dict[str, str], tmp_path: Path
) -> None:
    proc = jarvis(["doctor", "--data-dir", str(tmp_path / "data")], no_cookie_env, tmp_path)
    lines = {line.split()[1]: line for line in proc.stdout.splitlines()}
    assert lines["display"].startswith("PASS"), proc.stdout
    assert lines["input"].startswith("PASS"), proc.stdout


def test_serve_outlives_its_x_server_without_a_traceback(tmp_path: Path) -> None:
    """The X server goes away under a running `jarvis serve`: one line says the kill switch
    is off, and SIGTERM still ends serve promptly, without a traceback."""
    home = tmp_path / "home"
    home.mkdir()
    read, write = os.pipe()
    xvfb = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write), "-noreset", "-nolisten", "tcp",
         "-screen", "0", "1024x768x24"],
        pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(write)
    out = tmp_path / "serve.out"
    serve: subprocess.Popen[bytes] | None = None
    try:
        with os.fdopen(read) as pipe:
            number = pipe.readline().strip()
        env = {
            "DISPLAY": f":{number}",
            "HOME": str(home),
            "ANTHROPIC_API_KEY": KEY,
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
            "JARVIS_LONG_TERM_MEMORY": "false",
            "JARVIS_API__HTTP": "127.0.0.1:0",
            "PATH": os.environ["PATH"],
            "PYTHONPATH": str(ROOT),
        }
        with out.open("w") as sink:
            serve = subprocess.Popen(
                [sys.executable, "-m", "jarvis", "serve", "--data-dir", str(tmp_path / "data")],
                env=env, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                cwd=tmp_path,
            )  # fmt: skip
        until_said(out, serve, "waiting for messages")
        xvfb.kill()
        xvfb.wait(10)
        until_said(out, serve, "kill switch is off", "Traceback")
        sent = time.monotonic()
        serve.terminate()
        code = serve.wait(timeout=30)
        took = time.monotonic() - sent
    finally:
        for proc in (serve, xvfb):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    text = out.read_text()
    assert "Traceback" not in text and "Exception in thread" not in text, text
    said = [line for line in text.splitlines() if "kill switch is off" in line]
    assert len(said) == 1 and "the X display is gone" in said[0], text
    assert took < 4, f"serve took {took:.1f}s to end after SIGTERM\n{text}"
    assert code in (0, 130, -15, 143), text


def until_said(out: Path, proc: subprocess.Popen[bytes], *words: str) -> None:
    deadline = time.monotonic() + 60
    while not any(w in out.read_text() for w in words):
        assert proc.poll() is None, out.read_text()
        assert time.monotonic() < deadline, f"never said {words}: {out.read_text()}"
        time.sleep(0.05)
