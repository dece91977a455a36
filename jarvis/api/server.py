"""Running the API inside ``jarvis serve``: uvicorn on the gateway's own asyncio loop.

:class:`HttpService` binds the sockets itself (a clear error when the port is taken; port
0 picks a free one), then runs ``uvicorn.Server`` as a task of the running loop, with
uvicorn's own signal handling off (the gateway owns SIGTERM and SIGINT). It announces the
address and a one-time login link for the browser. A host other than loopback is only
used when given explicitly, and then with a warning.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import stat
import sys
from collections.abc import AsyncIterator, Callable, Generator
from pathlib import Path

import uvicorn

from jarvis.api.app import create_app
from jarvis.api.auth import LoginCodes, allowed_hosts, load_or_create_token
from jarvis.api.live_view import LiveView, live_view
from jarvis.api.recordings import finish_recording
from jarvis.api.routes import Daemon
from jarvis.api.settings import HttpAddress
from jarvis.api.stream import EventHub
from jarvis.api.takeover import mount_takeover
from jarvis.gateway.gateway import Gateway
from jarvis.gateway.service import DaemonService
from jarvis.redaction import register

log = logging.getLogger(__name__)

STARTUP_TIMEOUT_S = 10.0
SEND_BUFFER = 256 * 1024
KEEP_ALIVE_S = 30
"""How long an idle client connection stays open: longer than the clients keep one (2 s),
so a request never meets a connection the server is closing."""


class ApiUnavailable(Exception):
    """The API could not listen where it was told to."""


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield  # the gateway handles the signals


class HttpService:
    """The control API of one gateway; ``async with service.running(): ...``."""

    def __init__(
        self,
        gateway: Gateway,
        address: HttpAddress | None,
        unix_socket: Path | None = None,
        *,
        announce: Callable[[str], None] | None = None,
    ) -> None:
        if address is None and unix_socket is None:
            raise ValueError("the API needs a TCP address or a Unix socket")
        self.gateway = gateway
        self.address = address
        self.unix_socket = unix_socket
        self.announce = announce or (lambda line: print(line, flush=True))
        self.port: int | None = None
        self.daemon: Daemon | None = None
        self.login_code = ""
        self.live_view: LiveView | None = None

    @property
    def url(self) -> str:
        if self.address is None or self.port is None:
            return ""
        return f"http://{self.address.url_host}:{self.port}"

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[HttpService]:
        settings = self.gateway.settings
        try:
            token = load_or_create_token(settings.data_dir)
        except (OSError, ValueError) as exc:
            raise ApiUnavailable(f"no API token: {exc}") from exc
        register(token)  # a token quoted anywhere (a task, an error) is redacted
        sockets = self._bind()
        service = DaemonService(self.gateway)
        hub = EventHub(service, asyncio.get_running_loop(), settings.api.queue_size)
        codes = LoginCodes()
        self.login_code = codes.issue()
        self.daemon = Daemon(service, hub, token, codes, settings.api.heartbeat_s)
        hosts = allowed_hosts(
            self.address.host if self.address else "127.0.0.1",
            self.port,
            bool(self.address and self.address.explicit),
            self.unix_socket is not None,
        )
        views = contextlib.AsyncExitStack()  # x11vnc of the live view, stopped at the end
        app = create_app(self.daemon, hosts)
        self.live_view = await views.enter_async_context(
            live_view(settings, service.display_now())  # under --sandbox its private one
        )
        mount_takeover(app, self.live_view, self.daemon.live)
        config = uvicorn.Config(
            app,
            lifespan="off",
            log_config=None,
            access_log=False,  # it would log the one-time login link
            timeout_graceful_shutdown=2,
            timeout_keep_alive=KEEP_ALIVE_S,
            server_header=False,
        )
        server = _Server(config)
        task = asyncio.create_task(server.serve(sockets=sockets), name="http-api")
        try:
            await self._started(server, task)
            self._record_where()
            self._say_where()
            yield self
        finally:
            await finish_recording(app)
            hub.shutdown()
            server.should_exit = True
            with contextlib.suppress(asyncio.CancelledError, SystemExit):
                await asyncio.wait_for(task, timeout=10)
            hub.close()
            await views.aclose()
            for sock in sockets:
                sock.close()
            if self.unix_socket is not None:
                with contextlib.suppress(FileNotFoundError):
                    self.unix_socket.unlink()

    async def _started(self, server: uvicorn.Server, task: asyncio.Task[None]) -> None:
        deadline = asyncio.get_running_loop().time() + STARTUP_TIMEOUT_S
        while not server.started:
            if task.done():
                error = task.exception() if not task.cancelled() else None
                raise ApiUnavailable(f"the API server stopped at start: {error!r}")
            if asyncio.get_running_loop().time() > deadline:
                raise ApiUnavailable("the API server did not start in time")
            await asyncio.sleep(0.01)

    def _bind(self) -> list[socket.socket]:
        sockets: list[socket.socket] = []
        try:
            if self.address is not None:
                sockets.append(self._bind_tcp(self.address))
            if self.unix_socket is not None:
                sockets.append(self._bind_unix(self.unix_socket))
        except BaseException:
            for sock in sockets:
                sock.close()
            raise
        return sockets

    def _bind_tcp(self, address: HttpAddress) -> socket.socket:
        host = address.host.strip("[]")
        try:
            family = socket.getaddrinfo(host, address.port, type=socket.SOCK_STREAM)[0][0]
        except socket.gaierror as exc:
            raise ApiUnavailable(f"cannot listen on {address.host}: {exc.strerror}") from exc
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # accepted sockets inherit it: a stalled stream client holds at most this much in the
        # kernel (not megabytes), so its queue overflows soon and it gets a gap
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
        try:
            sock.bind((host, address.port))
            sock.listen(128)
        except OSError as exc:
            sock.close()
            raise ApiUnavailable(
                f"cannot listen on {address.host}:{address.port}: {exc.strerror}"
                " (another jarvis serve? choose one with --http HOST:PORT, or --http off)"
            ) from exc
        sock.setblocking(False)
        self.port = sock.getsockname()[1]
        return sock

    def _bind_unix(self, path: Path) -> socket.socket:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() or path.is_symlink():
            if not stat.S_ISSOCK(os.lstat(path).st_mode):
                raise ApiUnavailable(f"{path} exists and is not a socket; not replacing it")
            if _in_use(path):
                raise ApiUnavailable(f"{path} is in use by another server")
            path.unlink()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # the socket is made 0600: only this user may connect
        try:
            sock.bind(str(path))
        except OSError as exc:
            sock.close()
            raise ApiUnavailable(f"cannot listen on {path}: {exc.strerror}") from exc
        finally:
            os.umask(old)
        sock.listen(128)
        sock.setblocking(False)
        return sock

    def _record_where(self) -> None:
        """Name the address in ``DATA/serve.lock``: clients read it there (jarvis.discovery)."""
        where: dict[str, str] = {}
        if self.address is not None:
            where["api"] = self.url
        if self.unix_socket is not None:
            where["api_socket"] = str(self.unix_socket.resolve())
        if self.gateway.serve_lock.held:
            self.gateway.serve_lock.update(**where)

    def _say_where(self) -> None:
        data = self.gateway.settings.data_dir
        if self.address is not None:
            self.announce(
                f"jarvis serve: control API on {self.url}/api (token in {data}/config/api_token)"
            )
            self.announce(f"jarvis serve: web panel, one-time login: {self.login_url}")
            if not self.address.loopback:
                warning = (
                    f"jarvis serve: WARNING: the API listens on {self.address.host}, not only "
                    "on this machine; anyone who can reach it and has the token drives this "
                    "desktop, over plain HTTP"
                )
                print(warning, file=sys.stderr, flush=True)
                log.warning(warning)
        if self.unix_socket is not None:
            self.announce(f"jarvis serve: control API on unix socket {self.unix_socket}")

    @property
    def login_url(self) -> str:
        return f"{self.url}/login?code={self.login_code}"


def _in_use(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True
