"""Where the API listens: a Unix socket (0600), a taken port (a clear error, nothing
started), a host other than loopback (a warning), and bad --http values."""

from __future__ import annotations

import socket
import stat
from pathlib import Path
from typing import Any

import httpx
import pytest

from jarvis.api.server import ApiUnavailable, HttpService
from jarvis.api.settings import HttpAddress
from jarvis.cli import main
from jarvis.config import load_settings
from jarvis.desktop.x11 import XDisplay
from jarvis.gateway.gateway import Gateway


def gateway_at(tmp_path: Path) -> Gateway:
    return Gateway(
        load_settings(tmp_path / "data", long_term_memory=False), where=XDisplay.from_env()
    )


async def test_the_api_on_a_unix_socket_is_for_this_user_only(tmp_path: Path) -> None:
    gateway = gateway_at(tmp_path)
    path = tmp_path / "run" / "jarvis.sock"
    path.parent.mkdir()
    path.touch()  # a stale non-socket file is not replaced
    with pytest.raises(ApiUnavailable, match="not a socket"):
        async with HttpService(gateway, None, path, announce=lambda _: None).running():
            pass
    path.unlink()
    lines: list[str] = []
    service = HttpService(gateway, None, path, announce=lines.append)
    async with service.running():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_ISSOCK(path.stat().st_mode)
        assert service.daemon is not None
        transport = httpx.AsyncHTTPTransport(uds=str(path))
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            assert (await client.get("/api/health")).status_code == 401
            auth = {"authorization": f"Bearer {service.daemon.token}"}
            health = await client.get("/api/health", headers=auth)
            assert health.status_code == 200 and health.json()["status"] == "ok"
            rebound = await client.get("/api/health", headers=auth | {"host": "evil.example"})
            assert rebound.status_code == 403
    assert not path.exists()  # removed on the way out
    assert lines == [f"jarvis serve: control API on unix socket {path}"]
    gateway.journal.close()


async def test_a_taken_port_is_a_clear_error(tmp_path: Path) -> None:
    gateway = gateway_at(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        service = HttpService(gateway, HttpAddress(host="127.0.0.1", port=port))
        with pytest.raises(ApiUnavailable, match=f"cannot listen on 127.0.0.1:{port}"):
            async with service.running():
                pass
    gateway.journal.close()


def test_a_host_other_than_loopback_is_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gateway = gateway_at(tmp_path)
    lines: list[str] = []
    for host, warned in (("0.0.0.0", True), ("192.168.1.20", True), ("127.0.0.1", False),
                         ("127.0.0.2", False), ("::1", False)):  # fmt: skip
        service = HttpService(
            gateway, HttpAddress(host=host, port=8765, explicit=True), announce=lines.append
        )
        service.port = 8765
        service._say_where()
        assert ("WARNING" in capsys.readouterr().err) == warned, host
    assert not any("WARNING" in line for line in lines)  # on stderr, not in the banner
    gateway.journal.close()


@pytest.mark.parametrize("value", ["x:y", "1.2.3.4:70000", "::1:80", "a b:1"])
def test_bad_http_values_are_usage_errors(value: str, capsys: Any) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--http", value])
    assert exited.value.code == 2
    assert "--http" in capsys.readouterr().err


def test_http_off_serves_nothing_and_the_default_is_loopback(tmp_path: Path) -> None:
    from argparse import Namespace

    from jarvis.gateway.serve_command import _add_api

    gateway = gateway_at(tmp_path)
    _add_api(gateway, Namespace(http="off", unix_socket=None), gateway.settings)
    assert gateway.services == []
    _add_api(gateway, Namespace(http=None, unix_socket=None), gateway.settings)
    [running] = gateway.services
    service = running.__self__  # type: ignore[attr-defined]
    assert (service.address.host, service.address.port) == ("127.0.0.1", 8765)
    assert service.address.loopback
    gateway.journal.close()
