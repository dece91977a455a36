"""Fail fast, speak once: a base URL that cannot be reached (refused, unresolvable, TLS)
ends the task after one step's retries with one line naming the URL and its variable,
and what the console shows is not logged to the terminal a second time."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from jarvis.events import EventBus, EventRecorder, ModelRetry
from jarvis.llm.anthropic import AnthropicProvider
from jarvis.llm.base import ProviderUnreachable, complete
from jarvis.llm.openai import OpenAIProvider
from jarvis.logfile import log_path
from tests.agent_harness import TEST_KEY
from tests.fake_model import FakeModel
from tests.llm_cases import FAST, request, run
from tests.test_serve import ROOT, serve_env

NETGUARD = Path(__file__).parent / "netguard"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def jarvis_run(
    xserver: Any, fake_model: FakeModel, data: Path, env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    full = serve_env(xserver, fake_model) | {
        "PYTHONPATH": os.pathsep.join([str(NETGUARD), str(ROOT)]),  # the child's net guard
        "JARVIS_TEST_NET_LOG": str(data.parent / "net.log"),
        "JARVIS_MAX_RETRIES": "1",
        "COLUMNS": "200",
        **env,
    }
    proc = subprocess.run(
        [sys.executable, "-m", "jarvis", "run", "open the mail", "--data-dir", str(data), *args],
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert TEST_KEY not in proc.stdout + proc.stderr
    return proc


def net_log(data: Path) -> list[str]:
    path = data.parent / "net.log"
    return path.read_text().splitlines() if path.exists() else []


def assert_failed_fast_and_said_once(
    proc: subprocess.CompletedProcess[str], url: str, var: str
) -> None:
    out, err = proc.stdout, proc.stderr
    assert proc.returncode == 1, out + err
    assert "step 1" in out and "step 2" not in out  # one step, not three
    final = out.strip().splitlines()[-1]
    assert final.startswith("failed after 1 step(s)")
    assert url in final and var in final  # one line names the URL and its variable
    both = out + err
    assert both.count("model retry 1") == 1 and "model retry 2" not in both
    assert "retry 1/1" not in err and "giving up" not in err  # not said twice
    assert "Traceback" not in err


@pytest.mark.usefixtures("xserver")
def test_a_refused_port_fails_the_task_after_one_step(
    xserver: Any, fake_model: FakeModel, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    data = tmp_path / "data"
    proc = jarvis_run(xserver, fake_model, data, {"ANTHROPIC_BASE_URL": url})
    assert_failed_fast_and_said_once(proc, url, "ANTHROPIC_BASE_URL")
    assert "ConnectionRefusedError" in proc.stdout  # what failed, not just "Connection error."
    # the log file keeps what the terminal showed once
    log = log_path(data).read_text()
    assert "retry 1/1" in log and "giving up after 2 attempts" in log
    assert net_log(data) == []


@pytest.mark.usefixtures("xserver")
def test_an_unresolvable_name_fails_the_task_after_one_step(
    xserver: Any, fake_model: FakeModel, tmp_path: Path
) -> None:
    url = "http://nonexistent.invalid/v1"
    data = tmp_path / "data"
    env = {"OPENAI_API_KEY": TEST_KEY, "OPENAI_BASE_URL": url}
    proc = jarvis_run(xserver, fake_model, data, env, "--provider", "openai")
    assert_failed_fast_and_said_once(proc, "http://nonexistent.invalid/v1", "OPENAI_BASE_URL")
    assert "gaierror" in proc.stdout  # the name did not resolve
    # the name was looked up (and failed) on this machine; nothing left it
    assert set(net_log(data)) == {"lookup nonexistent.invalid"}
    assert fake_model.requests == []


@pytest.mark.usefixtures("xserver")
def test_verbose_puts_every_log_record_on_stderr_too(
    xserver: Any, fake_model: FakeModel, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    proc = jarvis_run(xserver, fake_model, tmp_path / "data", {"ANTHROPIC_BASE_URL": url}, "-v")
    assert proc.returncode == 1
    assert proc.stdout.count("model retry 1") == 1
    assert "retry 1/1" in proc.stderr and "giving up after 2 attempts" in proc.stderr


@pytest.mark.parametrize("make", ["anthropic", "openai"])
def test_tls_to_a_plain_http_port_is_unreachable_after_the_retries(
    fake_model: FakeModel, make: str
) -> None:
    """https:// against a plain-HTTP server: the TLS handshake fails, which is a
    connection that cannot be made; retried per the policy, then ProviderUnreachable."""
    bus = EventBus()
    recorder = EventRecorder(bus)
    port = fake_model.base_url.rsplit(":", 1)[1]
    if make == "anthropic":
        url, var = f"https://127.0.0.1:{port}", "ANTHROPIC_BASE_URL"
        provider: Any = AnthropicProvider("m", api_key=TEST_KEY, base_url=url, bus=bus, retry=FAST)
    else:
        url, var = f"https://127.0.0.1:{port}/v1", "OPENAI_BASE_URL"
        provider = OpenAIProvider("m", api_key=TEST_KEY, base_url=url, bus=bus, retry=FAST)
    with pytest.raises(ProviderUnreachable) as info:
        run(complete(provider, request()))
    message = str(info.value)
    assert url in message and var in message and "SSL" in message
    assert len(recorder.of(ModelRetry)) == FAST.max_retries
    assert fake_model.requests == []  # no request ever got through
