"""Clients find the daemon wherever it listens: ``serve --http 127.0.0.1:PORT`` on a port
that is not the default records that address in ``DATA/serve.lock``; ``jarvis stop``, the
TUI and scripts (``python -m jarvis.discovery``) reach it without ``--url``; a second serve
says only its error; a TUI that cannot reach the daemon keeps the typed text; and
``--data-dir`` goes before or after any command."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from jarvis.cli import build_parser
from jarvis.config import load_settings
from jarvis.discovery import find_daemon
from jarvis.tui.app import JarvisApp
from jarvis.tui.client import ApiBackend
from jarvis.tui.launcher import find_serve, free_port
from jarvis.tui.settings import TuiSettings
from tests.fake_model import FakeModel
from tests.test_serve import ROOT, is_step, responder, serve_env, slow_step, wait_until
from tests.tui_fixtures import until

pytestmark = pytest.mark.usefixtures("xserver")


def jarvis(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jarvis", *args],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@contextmanager
def serve(env: dict[str, str], data: Path, out: Path, *args: str) -> Iterator[subprocess.Popen]:
    with out.open("w+") as sink:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "jarvis", "serve", "--data-dir", str(data), *args],
            env=env, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            yield daemon
        finally:
            if daemon.poll() is None:
                daemon.terminate()
                daemon.wait(30)


def api_named(data: Path, daemon: subprocess.Popen, out: Path, key: str = "api") -> dict[str, Any]:
    """What serve.lock says once it names where the API listens (``key``)."""

    def named() -> Any:
        assert daemon.poll() is None, out.read_text()
        text = (data / "serve.lock").read_text() if (data / "serve.lock").exists() else ""
        return text.strip() and key in json.loads(text)

    wait_until(named, timeout=60)
    return json.loads((data / "serve.lock").read_text())


def test_stop_and_scripts_reach_a_serve_on_another_port(
    xserver: Any, fake_model: FakeModel, tmp_path: Path
) -> None:
    data, out = tmp_path / "data", tmp_path / "serve.out"
    env = serve_env(xserver, fake_model)
    env.pop("JARVIS_API__HTTP")  # the settings name the default port; the flag another
    fake_model.set_default(responder(slow_step))
    port = free_port()
    with serve(env, data, out, "--http", f"127.0.0.1:{port}") as daemon:
        holder = api_named(data, daemon, out)
        assert holder["pid"] == daemon.pid and holder["api"] == f"http://127.0.0.1:{port}"

        script = subprocess.run(
            [sys.executable, "-m", "jarvis.discovery", "--data-dir", str(data)],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert script.returncode == 0, script.stderr
        found = json.loads(script.stdout)
        assert found == {"pid": daemon.pid, "url": f"http://127.0.0.1:{port}", "socket": None}
        token = (data / "config" / "api_token").read_text().strip()
        assert token not in script.stdout

        second = jarvis("serve", "--data-dir", str(data), "--http", ":0", env=env)
        assert second.returncode == 1
        assert f"pid {daemon.pid}" in second.stderr and "waiting for messages" not in second.stdout
        assert second.stdout == ""  # only its error

        added = jarvis("inbox", "add", "count to a million", "--data-dir", str(data), env=env)
        assert added.returncode == 0, added.stderr
        wait_until(lambda: any(is_step(r) for r in fake_model.requests) or daemon.poll())
        stopped = jarvis("stop", "--data-dir", str(data), env=env)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        assert "the running task is being cancelled" in stopped.stdout
    assert "waiting for messages" in out.read_text()


def test_stop_reaches_a_serve_with_only_a_unix_socket(
    xserver: Any, fake_model: FakeModel, tmp_path: Path
) -> None:
    data, out = tmp_path / "data", tmp_path / "serve.out"
    env = serve_env(xserver, fake_model)
    sock = tmp_path / "api.sock"
    with serve(env, data, out, "--http", "off", "--unix-socket", str(sock)) as daemon:
        holder = api_named(data, daemon, out, "api_socket")
        assert holder["api_socket"] == str(sock.resolve()) and "api" not in holder
        stopped = jarvis("--data-dir", str(data), "stop", env=env)  # the flag before it
        assert stopped.returncode == 1, stopped.stdout + stopped.stderr
        assert stopped.stdout.strip() == "jarvis stop: no task is running"  # it answered


def test_login_prints_a_fresh_one_time_link_of_the_running_serve(
    xserver: Any, fake_model: FakeModel, tmp_path: Path
) -> None:
    """Issue 41 point 6: `jarvis login` prints a new link each time; each opens one
    browser session (a cookie), then is refused; the token is not in what it prints."""
    import httpx

    data, out = tmp_path / "data", tmp_path / "serve.out"
    env = serve_env(xserver, fake_model)
    port = free_port()
    with serve(env, data, out, "--http", f"127.0.0.1:{port}") as daemon:
        api_named(data, daemon, out)
        first, second = (jarvis("login", "--data-dir", str(data), env=env) for _ in range(2))
        assert (first.returncode, second.returncode) == (0, 0), first.stdout + first.stderr
        link = first.stdout.strip()
        assert link.startswith(f"http://127.0.0.1:{port}/login?code=") and "\n" not in link
        assert second.stdout.strip() != link
        token = (data / "config" / "api_token").read_text().strip()
        assert token not in first.stdout + second.stdout
        opened = httpx.get(link, follow_redirects=False, timeout=10)
        assert opened.status_code == 303 and "jarvis_session" in opened.headers["set-cookie"]
        assert httpx.get(link, follow_redirects=False, timeout=10).status_code == 401  # once
        refused = httpx.post(f"http://127.0.0.1:{port}/api/login/link", timeout=10)
        assert refused.status_code == 401  # only a client with the token asks for one


def test_login_without_a_serve_says_so_in_one_line(tmp_path: Path) -> None:
    proc = jarvis("login", "--data-dir", str(tmp_path), env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 1 and proc.stderr == ""
    assert proc.stdout.strip() == f"jarvis login: no `jarvis serve` holds {tmp_path}"


def test_stop_without_a_serve_says_so(tmp_path: Path) -> None:
    proc = jarvis("stop", "--data-dir", str(tmp_path), env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stdout.strip() == (
        f"jarvis stop: no `jarvis serve`, `jarvis run` or `jarvis replay` is running for {tmp_path}"
    )


async def test_the_tui_finds_a_serve_on_another_port(
    xserver: Any, fake_model: FakeModel, tmp_path: Path
) -> None:
    data, out = tmp_path / "data", tmp_path / "serve.out"
    env = serve_env(xserver, fake_model)
    env.pop("JARVIS_API__HTTP")
    port = free_port()
    with serve(env, data, out, "--http", f"127.0.0.1:{port}") as daemon:
        api_named(data, daemon, out)
        settings = load_settings(data)
        assert settings.api.http == "127.0.0.1:8765"  # the settings still say the default
        target = find_serve(settings)  # what `jarvis tui` connects to
        assert target is not None and target.url == f"http://127.0.0.1:{port}"
        backend = ApiBackend(target.url, target.token, label=target.label)
        app = JarvisApp(backend, TuiSettings())
        async with app.run_test(size=(100, 30)) as pilot:
            await until(lambda: app.connection == "live", pilot, 30)
            assert f"serve pid {daemon.pid} at 127.0.0.1:{port}" in str(app.status.render())


async def test_a_tui_that_cannot_reach_the_daemon_keeps_the_typed_text() -> None:
    backend = ApiBackend(f"http://127.0.0.1:{free_port()}", "token", label="gone")
    app = JarvisApp(backend, TuiSettings())
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press(*"open the mail", "enter")
        await until(lambda: app.prompt.text == "open the mail", pilot, 10)
        await pilot.press(*" now")  # and typing goes on from where it was
        assert app.prompt.text == "open the mail now"


def test_find_daemon_is_none_when_the_lock_names_nobody(tmp_path: Path) -> None:
    (tmp_path / "serve.lock").write_text("")  # released by the last serve
    assert find_daemon(tmp_path) is None
    (tmp_path / "serve.lock").write_text(json.dumps({"pid": 2**22 + 7, "api": "http://x:1"}))
    assert find_daemon(tmp_path) is None  # a dead pid (kill -9 left the file)


@pytest.mark.parametrize(
    "argv",
    [
        ["--data-dir", "D", "inbox", "add", "hi"],
        ["inbox", "--data-dir", "D", "add", "hi"],
        ["inbox", "add", "hi", "--data-dir", "D"],
        ["--data-dir", "D", "runs", "show", "T1"],
        ["memory", "--data-dir", "D", "list"],
        ["--data-dir", "D", "serve", "--once"],
        ["run", "task", "--data-dir", "D"],
    ],
)
def test_data_dir_before_or_after_any_command(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    assert args.data_dir == "D"


def test_the_token_file_is_named_in_one_place() -> None:
    """The daemon writes the token where every client looks for it: one constant."""
    from jarvis import discovery
    from jarvis.api import auth

    assert auth.TOKEN_FILE is discovery.TOKEN_FILE
