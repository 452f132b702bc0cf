"""The exporter's HTTP server: `/metrics`, `/snapshot.json`, `/healthz`, and nothing that acts.

`/metrics` is prometheus_client's own WSGI app over a registry holding only `SparktopCollector` (content
negotiation, OpenMetrics, gzip, `name[]=` filtering all come from the library). Requests are served on
threads, at most MAX_CONCURRENT at a time (a request waits up to BUSY_WAIT_S for its turn, then gets a 503),
and none of it reaches the sampling loop, which only publishes states. HEAD gets GET's headers, no body.

Processes' command lines are left out of /snapshot.json unless `command_lines` (`--command-lines`): an argv
may hold a password, and any local user who can reach the port would read it past `hidepid` (node_exporter
and dcgm-exporter export none). Bound to loopback, it answers only requests whose Host names this machine: a
web page in a local browser could otherwise read it through DNS rebinding (a foreign name resolving to
127.0.0.1), past the same-origin policy. With a `token` (`sparktop web`'s private feed for its sessions) every
request must carry it (`Authorization: Bearer …`): any local user can reach a loopback port.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import socket
import socketserver
import threading
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app

from sparktop import __version__
from sparktop.exporter.metrics import ExportOptions, SparktopCollector
from sparktop.exporter.state import SamplingLoop, stale_after_s

MAX_CONCURRENT = 16
BUSY_WAIT_S = 2.0
LISTEN_BACKLOG = 1024
READ_METHODS = ("GET", "HEAD")

StartResponse = Callable[..., Any]


def is_loopback(host: str) -> bool:
    """Whether `host` (a bind address, or the name in a Host header) means this machine only."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """The name in a Host header: '[::1]:9877' → '::1', 'localhost:9877' → 'localhost'."""
    if header.startswith("["):
        return header[1:].partition("]")[0]
    return header.rpartition(":")[0] if header.count(":") == 1 else header


class _ThreadingServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    # socketserver's listen backlog is 5: a burst of scrapes beyond it had its SYNs dropped and waited out
    # TCP's retransmission back-off (1,000 at once: 524 timed out at 60 s). The kernel caps it at somaxconn.
    request_queue_size = LISTEN_BACKLOG

    def server_bind(self) -> None:
        """As HTTPServer's, without its `socket.getfqdn(host)`: a reverse DNS lookup at start (it waits on a
        resolver that does not answer) and the IDNA codec's tables (~0.5 MiB resident) for a name that only
        goes into SERVER_NAME, which nothing here reads (a request's URL comes from its Host header)."""
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)
        self.setup_environ()


class _ThreadingServer6(_ThreadingServer):
    address_family = socket.AF_INET6


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes every few seconds would fill the terminal; errors reach the client as HTTP statuses."""


class ExporterApp:
    """The WSGI application. Read-only: only GET and HEAD, on three paths."""

    def __init__(
        self,
        loop: SamplingLoop,
        options: ExportOptions | None = None,
        command_lines: bool = False,
        loopback_only: bool = False,
        token: str | None = None,
    ) -> None:
        self.loop = loop
        self.token = token
        self.command_lines = command_lines
        self.loopback_only = loopback_only
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(SparktopCollector(loop, options))
        self._metrics = make_wsgi_app(self.registry)
        self._slots = threading.BoundedSemaphore(MAX_CONCURRENT)

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        # A burst waits its turn (each answer takes milliseconds) rather than being turned away at once.
        if not self._slots.acquire(timeout=BUSY_WAIT_S):
            body: Iterable[bytes] = _reply(
                start_response, "503 Service Unavailable", b"busy\n", extra=[("Retry-After", "1")]
            )
        else:
            try:
                body = self._route(environ, start_response)
            finally:
                self._slots.release()
        if environ.get("REQUEST_METHOD") == "HEAD":
            return []  # wsgiref sends whatever body it is given, even for HEAD (RFC 9110: none)
        return body

    def _route(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD", "GET")
        path = environ.get("PATH_INFO", "/")
        host = environ.get("HTTP_HOST")
        if self.loopback_only and host is not None and not is_loopback(host_name(host)):
            refusal = f"Host {host!r} is not this machine: sparktop serve listens on loopback only\n"
            return _reply(start_response, "403 Forbidden", refusal.encode())
        if self.token is not None and not _bearer_matches(environ.get("HTTP_AUTHORIZATION", ""), self.token):
            return _reply(
                start_response, "401 Unauthorized", b"sparktop: this feed needs its token\n",
                extra=[("WWW-Authenticate", "Bearer")],
            )  # fmt: skip
        if method not in READ_METHODS:
            return _reply(
                start_response, "405 Method Not Allowed", b"sparktop serve is read-only\n",
                extra=[("Allow", ", ".join(READ_METHODS))],
            )  # fmt: skip
        if path == "/metrics":
            # prometheus_client answers HEAD with 405: it gets GET's answer, whose body __call__ drops.
            return list(self._metrics({**environ, "REQUEST_METHOD": "GET"}, start_response))
        if path == "/snapshot.json":
            return self._snapshot(start_response)
        if path == "/healthz":
            return self._health(start_response)
        if path == "/":
            body = b"sparktop exporter: /metrics /snapshot.json /healthz\n"
            return _reply(start_response, "200 OK", body)
        return _reply(start_response, "404 Not Found", b"not found\n")

    def _snapshot(self, start_response: StartResponse) -> Iterable[bytes]:
        state = self.loop.latest
        if state is None:
            return _reply(start_response, "503 Service Unavailable", b"no snapshot yet\n")
        age = self.loop.age_s() or 0.0
        # The body is exactly `--once --json`; how old it is travels in a header, outside the schema.
        headers = [
            ("X-Sparktop-Age-Seconds", f"{age:.3f}"),
            ("X-Sparktop-Interval", f"{self.loop.interval:g}"),
            ("X-Sparktop-Safe-Bytes", str(state.safe_bytes)),  # the node's own lines, for the cluster view
            ("X-Sparktop-Aggressive-Bytes", str(state.max_bytes)),
        ]
        body = state.snapshot_json(command_lines=self.command_lines)
        return _reply(start_response, "200 OK", body, "application/json", extra=headers)

    def _health(self, start_response: StartResponse) -> Iterable[bytes]:
        loop = self.loop
        age = loop.age_s()
        stale = age is None or age > stale_after_s(loop.interval)
        # A part that fails while sampling goes on (the footprint database) makes the node "degraded":
        # still 200, so a supervisor does not restart it for that, but it is said here and in /metrics.
        problems = [p for p in (loop.footprints_problem,) if p]
        fine = "degraded" if problems else "ok"
        report = {
            "status": "ended" if loop.ended else ("stale" if stale else fine),
            "version": __version__,
            "source": loop.source.name,
            "interval_s": loop.interval,
            "age_s": age,
            "error": loop.last_error,
            "problems": problems,
        }
        status = "200 OK" if report["status"] in ("ok", "degraded", "ended") else "503 Service Unavailable"
        return _reply(start_response, status, (json.dumps(report) + "\n").encode(), "application/json")


def _bearer_matches(header: str, token: str) -> bool:
    scheme, _, given = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def _reply(
    start_response: StartResponse,
    status: str,
    body: bytes,
    content_type: str = "text/plain; charset=utf-8",
    extra: list[tuple[str, str]] | None = None,
) -> list[bytes]:
    headers = [("Content-Type", content_type), ("Content-Length", str(len(body)))]
    start_response(status, headers + (extra or []))
    return [body]


class ExporterServer:
    """Binds at construction (so a port in use fails at once, with OSError), serves on a daemon thread."""

    def __init__(
        self,
        loop: SamplingLoop,
        host: str = "127.0.0.1",
        port: int = 9877,
        options: ExportOptions | None = None,
        command_lines: bool = False,
        token: str | None = None,
    ) -> None:
        """`token`: every request must carry it (`Authorization: Bearer TOKEN`); None: none needed."""
        self.app = ExporterApp(loop, options, command_lines, loopback_only=is_loopback(host), token=token)
        server_class = _ThreadingServer6 if ":" in host else _ThreadingServer
        self._server = make_server(
            host, port, self.app, server_class=server_class, handler_class=_QuietHandler
        )
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        host, port = self.address
        return f"http://{host}:{port}"

    def start(self) -> None:
        # A short poll so shutdown() returns quickly (the default waits up to 0.5 s).
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="sparktop-http",
            daemon=True,
        )
        self._thread.start()

    def shutdown(self) -> None:
        # Only a server whose thread runs: shutdown() waits for serve_forever, which a thread never started (a
        # stop signal in the middle of start()) would never run.
        if self._thread is not None and self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()
