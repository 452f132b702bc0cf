"""`sparktop web`'s HTTP server: textual-serve's `Server` with the checks it leaves out (it has none).

Any page the admin's browser opens can reach a server on 127.0.0.1: a WebSocket is not bound by the
same-origin policy, and DNS rebinding makes a foreign name resolve to 127.0.0.1. So, as Jupyter and Cockpit
do:

- a secret token, new at each start and printed in the URL: the page, the downloads and the WebSocket need
  it, in the query (`?token=`) or in the cookie the page sets (the page's script opens the WebSocket without
  the query, and a cookie is not sent to another site's requests: SameSite=Strict);
- a request whose `Origin` is not this server is refused (cross-site WebSocket hijacking), and on a loopback
  bind so is a `Host` that is not a loopback name (DNS rebinding);
- at most `max_sessions` sessions at once: each is a dashboard process, and its slot is free only once
  that process is gone. A session whose socket closes is asked to quit, then sent SIGTERM, then SIGKILL: one
  busy drawing (or ignoring SIGTERM) no longer outlives its browser, nor gets around the cap;
- the terminal a browser asks for is clamped to MAX_WIDTH x MAX_HEIGHT, at the start and on every resize
  (20000x5000 cells took 3.4 GB and a core per session); the session bounds its own memory too (lifeline);
- no log line holds the token: aiohttp's access log prints each request's line (`GET /?token=…`), and under
  systemd that is the journal. Every log line is written through a formatter that blanks it;
- on shutdown the sessions' connections are closed (their processes are ended as above), so SIGTERM and
  SIGHUP end the server at once instead of after aiohttp's shutdown timeout.

Only textual-serve's public methods are extended or replaced (the handlers, `initialize_logging`,
`on_startup`, `on_shutdown`; its `AppService` is used as it is); the static files (the page's script, fonts
and CSS, the same for everyone) are served without the token, as Jupyter does.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import re
import secrets
import signal
import socket
import sys
from pathlib import Path
from urllib.parse import urlsplit

import psutil  # type: ignore[import-untyped]
from aiohttp import WSMessage, WSMsgType, web
from textual_serve.app_service import AppService
from textual_serve.server import Server

from sparktop.exporter.server import is_loopback

log = logging.getLogger("sparktop.web")

DEFAULT_MAX_SESSIONS = 4
# The largest terminal a browser may ask for: a 4K screen at a 7-pixel font is about 550x150 cells. Larger
# sizes cost memory and CPU in proportion (3000x1000 took 259 MB, 20000x5000 3.4 GB) and show nothing more.
MAX_WIDTH, MAX_HEIGHT = 500, 200
MIN_WIDTH, MIN_HEIGHT = 10, 4
DEFAULT_WIDTH, DEFAULT_HEIGHT = 80, 24  # textual-serve's, for a size missing or not a number
# A session whose socket closed: this long to quit when asked, then SIGTERM, this long again, then SIGKILL.
QUIT_WAIT_S = 2.0
TERM_WAIT_S = 3.0
KILL_WAIT_S = 5.0
INPUT_WAIT_S = 10.0  # a session that takes no input for this long is stuck: it ends
# `token=` in any URL a log line quotes: the request line, a Referer.
_TOKEN_IN_QUERY = re.compile(r"(?i)(token=)[^&\s\"']*")
PAGE_DIR = Path(__file__).parent  # our app_index.html (textual-serve's page, its font served here)


def new_token() -> str:
    return secrets.token_urlsafe(32)


def public_url(host: str, port: int) -> str:
    """Where browsers reach the server. The page opens its WebSocket there, so it must be the name the
    browser used (Origin and cookie follow it): a wildcard bind is reached by this machine's name, not
    at 0.0.0.0 (textual-serve's default); an IPv6 address needs brackets."""
    name = socket.gethostname() if host in ("0.0.0.0", "::", "") else host
    return f"http://[{name}]:{port}" if ":" in name else f"http://{name}:{port}"


def terminal_size(width: object, height: object) -> tuple[int, int]:
    """The size a browser asked for (query strings or JSON numbers), clamped to what a screen can show."""
    return (
        _clamped(width, DEFAULT_WIDTH, MIN_WIDTH, MAX_WIDTH),
        _clamped(height, DEFAULT_HEIGHT, MIN_HEIGHT, MAX_HEIGHT),
    )


def _clamped(value: object, default: int, low: int, high: int) -> int:
    try:
        number = int(value) if isinstance(value, int | str) and not isinstance(value, bool) else default
    except ValueError:
        number = default
    return max(low, min(high, number))


class RedactingFormatter(logging.Formatter):
    """Every line as the plain formatter writes it (traceback included), with the secrets blanked: the
    token wherever it appears, and any `token=` value in a URL (a wrong token is someone's guess)."""

    def __init__(self, secrets_: list[str], fmt: str) -> None:
        super().__init__(fmt)
        self.secrets = [s for s in secrets_ if s]

    def format(self, record: logging.LogRecord) -> str:
        return self.redact(super().format(record))

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "…")
        return _TOKEN_IN_QUERY.sub(r"\1…", text)


async def relay(websocket: web.WebSocketResponse, app_service: AppService) -> None:
    """The browser's messages to its session (textual-serve's protocol), the terminal's size clamped; a
    message that is not the protocol's is skipped. A session that takes no input for INPUT_WAIT_S ends the
    relay (TimeoutError): waiting on it, the relay would not see its socket close."""
    async for message in websocket:
        async with asyncio.timeout(INPUT_WAIT_S):
            await _deliver(websocket, app_service, message)


async def _deliver(websocket: web.WebSocketResponse, app_service: AppService, message: WSMessage) -> None:
    if message.type != WSMsgType.TEXT:
        return
    try:
        envelope = json.loads(message.data)
    except (ValueError, RecursionError):
        return
    if not isinstance(envelope, list) or not envelope:
        return
    kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
    if kind == "stdin" and isinstance(data, str):
        await app_service.send_bytes(data.encode("utf-8", "replace"))
    elif kind == "resize" and isinstance(data, dict):
        await app_service.set_terminal_size(*terminal_size(data.get("width"), data.get("height")))
    elif kind == "ping":
        await websocket.send_json(["pong", data])
    elif kind == "blur":
        await app_service.blur()
    elif kind == "focus":
        await app_service.focus()


def _child_pids() -> set[int]:
    return {child.pid for child in psutil.Process().children()}


def _new_children(known: set[int]) -> list[psutil.Process]:
    """This process's children whose pids are not in `known` (this process starts no other children)."""
    return [child for child in psutil.Process().children() if child.pid not in known]


async def _gone_within(process: psutil.Process, seconds: float) -> bool:
    """Whether `process` has ended (a zombie holds no memory: asyncio reaps it) within `seconds`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        try:
            # is_running() is False once the pid belongs to another process: never wait on a stranger.
            if not process.is_running() or process.status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(0.05)


async def end_session(
    app_service: AppService,
    process: psutil.Process | None,
    quit_wait_s: float = QUIT_WAIT_S,
    term_wait_s: float = TERM_WAIT_S,
) -> None:
    """End a session whose socket is closed: ask it to quit (textual-serve's `stop`), then SIGTERM, then
    SIGKILL, to exactly its process (psutil checks the pid was not reused); return once it is gone."""
    # stop() writes "quit" to the session's stdin and waits for its output to end: a session that is busy
    # (not reading stdin) would hold it for ever, so it runs beside the signals, which end it.
    stopping = asyncio.ensure_future(app_service.stop())
    if process is not None:
        for how, wait in ((None, quit_wait_s), (signal.SIGTERM, term_wait_s), (signal.SIGKILL, KILL_WAIT_S)):
            if how is signal.SIGKILL:
                log.warning("sparktop web: session pid %d ignored SIGTERM: SIGKILL", process.pid)
            if how is not None:
                with contextlib.suppress(psutil.NoSuchProcess):
                    process.send_signal(how)
            if await _gone_within(process, wait):
                break
    try:
        await asyncio.wait_for(stopping, quit_wait_s + term_wait_s + KILL_WAIT_S)
    except (TimeoutError, ConnectionError, RuntimeError):
        stopping.cancel()
    # Its stdin is the one pipe asyncio does not close by itself when it ends: left open, the transport is
    # collected after the event loop has closed, one "Event loop is closed" traceback per session at exit.
    with contextlib.suppress(AssertionError, OSError, RuntimeError):
        app_service.stdin.close()


class GuardedServer(Server):
    """textual-serve's server, refusing requests without the token, from another origin, or beyond the
    session cap."""

    def __init__(
        self,
        command: str,
        *,
        host: str,
        port: int,
        title: str,
        token: str,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        templates_path: Path | None = None,  # a folder with our own app_index.html (sparktop/web/)
    ) -> None:
        extra = {"templates_path": templates_path} if templates_path is not None else {}
        super().__init__(
            command, host=host, port=port, title=title, public_url=public_url(host, port), **extra
        )
        self.token = token
        self.max_sessions = max_sessions
        self.sessions: dict[int, web.Request] = {}  # by id(): a request is a mapping, not hashable
        self.quit_wait_s, self.term_wait_s = QUIT_WAIT_S, TERM_WAIT_S
        self._starting = asyncio.Lock()
        # Cookies are per host, not per port: the port in the name keeps two servers' tokens apart.
        self.cookie_name = f"sparktop-web-{port}"

    @property
    def start_url(self) -> str:
        """The URL to open (printed at start): the only way in."""
        return f"{self.public_url}/?token={self.token}"

    def refusal(self, request: web.Request) -> str | None:
        """Why `request` may not have a page, a download or a session; None when it may."""
        # The Host header's name, parsed here: `request.url.host` raised ValueError on aiohttp 3.9.5 (the
        # floor), which refused every request as "bad Host header".
        try:
            name = urlsplit(f"//{request.host}").hostname or ""
        except ValueError:
            return "bad Host header"
        if is_loopback(self.host) and not is_loopback(name):
            return f"Host {name!r} is not this machine (DNS rebinding?)"
        origin = request.headers.get("Origin")
        if origin is not None and origin != f"{request.scheme}://{request.host}":
            return f"Origin {origin!r} is not this server"
        given = request.query.get("token") or request.cookies.get(self.cookie_name) or ""
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return "the token is missing or wrong: open the URL `sparktop web` printed at start"
        return None

    @staticmethod
    def _forbidden(reason: str) -> web.Response:
        return web.Response(status=403, text=f"sparktop web: {reason}\n")

    async def handle_index(self, request: web.Request) -> web.StreamResponse:  # type: ignore[override]
        refusal = self.refusal(request)
        if refusal is not None:
            return self._forbidden(refusal)
        response: web.StreamResponse = await super().handle_index(request)  # type: ignore[misc]
        # The page's script opens the WebSocket and downloads without the query: they carry the cookie.
        response.set_cookie(self.cookie_name, self.token, httponly=True, samesite="Strict", path="/")
        # The URL holds the token: never send it on to another site (the page loads a web font).
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    async def handle_download(self, request: web.Request) -> web.StreamResponse:
        refusal = self.refusal(request)
        if refusal is not None:
            return self._forbidden(refusal)
        return await super().handle_download(request)

    async def handle_websocket(self, request: web.Request) -> web.StreamResponse:  # type: ignore[override]
        """textual-serve's handler, with the checks and bounds it leaves out: the terminal's size clamped
        (here and on every `resize`), and the session's process ended when its socket closes (asked to
        quit, then SIGTERM, then SIGKILL), its slot freed only once the process is gone."""
        refusal = self.refusal(request)
        if refusal is not None:
            return self._forbidden(refusal)
        if len(self.sessions) >= self.max_sessions:
            return web.Response(
                status=503, text=f"sparktop web: {self.max_sessions} sessions already open (--max-sessions)\n"
            )
        self.sessions[id(request)] = request  # counted before the first await: a burst cannot slip past
        try:
            return await self._run_session(request)
        finally:
            self.sessions.pop(id(request), None)

    async def _run_session(self, request: web.Request) -> web.WebSocketResponse:
        websocket = web.WebSocketResponse(heartbeat=15)
        width, height = terminal_size(request.query.get("width"), request.query.get("height"))
        await websocket.prepare(request)

        async def close() -> None:
            await websocket.close()

        app_service = AppService(
            self.command,
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=close,
            download_manager=self.download_manager,
        )
        # Which child is the session's process: textual-serve keeps it to itself. Its start is serialised,
        # so the one new child of ours that runs sparktop is it.
        async with self._starting:
            before = _child_pids()
            await app_service.start(width, height)
            started = _new_children(before)
        process = started[0] if len(started) == 1 else None
        if process is None:
            log.warning(
                "sparktop web: could not tell which process is the new session (%d new)", len(started)
            )
        ending: asyncio.Task[None] | None = None
        try:
            await relay(websocket, app_service)
        except Exception as exc:  # a stuck session, a socket gone: that session ends, not the server
            log.warning("sparktop web: session ended: %s", type(exc).__name__)
        finally:
            ending = asyncio.ensure_future(
                end_session(app_service, process, self.quit_wait_s, self.term_wait_s)
            )
            try:
                await asyncio.shield(ending)
            except asyncio.CancelledError:
                if process is not None:  # the server is going: no time to wait (lifeline would kill it too)
                    with contextlib.suppress(psutil.Error):
                        process.kill()
                raise
            # The process is gone: its slot is free now, not once the socket's close handshake is over (an
            # older aiohttp waits out its close timeout, 10 s, for a browser that already left).
            self.sessions.pop(id(request), None)
            with contextlib.suppress(ConnectionError, RuntimeError):
                await websocket.close()
        return websocket

    def initialize_logging(self) -> None:
        """Plain lines on stderr, with their time, through a formatter that blanks the token: textual-serve's
        own handler wrote each request's line, token included, and tracebacks with their local variables."""
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(RedactingFormatter([self.token], "%(asctime)s %(name)s: %(message)s"))
        logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)

    async def on_startup(self, app: web.Application) -> None:
        """textual-serve prints a banner with the URL but no token: `sparktop web` prints where to find the
        URL. It stops on SIGINT and SIGTERM; SIGHUP (a closed terminal, `systemctl reload`) ends it the same
        way, with status 0, as every other command."""
        asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self.request_exit)

    async def on_shutdown(self, app: web.Application) -> None:
        # A browser that is not reading would hold its handler (and aiohttp's shutdown) for a minute: close
        # each session's connection, which ends its handler, which tells its process to quit. One that does
        # not quit in time dies with this process (lifeline.exit_with_parent).
        for request in list(self.sessions.values()):
            if request.transport is not None:
                request.transport.close()
