"""`sparktop web`'s HTTP server: textual-serve's `Server` with the checks it leaves out (it has none).

Any page the admin's browser opens can reach a server on 127.0.0.1: a WebSocket is not bound by the
same-origin policy, and DNS rebinding makes a foreign name resolve to 127.0.0.1. So, as Jupyter and Cockpit
do:

- a secret token, new at each start and printed in the URL: the page, the downloads and the WebSocket need
  it, in the query (`?token=`) or in the cookie the page sets (the page's script opens the WebSocket without
  the query, and a cookie is not sent to another site's requests: SameSite=Strict);
- a request whose `Origin` is not this server is refused (cross-site WebSocket hijacking), and on a loopback
  bind so is a `Host` that is not a loopback name (DNS rebinding);
- at most `max_sessions` sessions at once: each is a dashboard process;
- on shutdown the sessions' connections are closed (their processes are told to quit), so SIGTERM ends the
  server at once instead of after aiohttp's shutdown timeout.

Only textual-serve's public methods are extended (the handlers, `on_startup`, `on_shutdown`); the static
files (the page's script, fonts and CSS, the same for everyone) are served without the token, as Jupyter does.
"""

from __future__ import annotations

import hmac
import secrets
import socket
from pathlib import Path
from urllib.parse import urlsplit

from aiohttp import web
from textual_serve.server import Server

from sparktop.exporter.server import is_loopback

DEFAULT_MAX_SESSIONS = 4
PAGE_DIR = Path(__file__).parent  # our app_index.html (textual-serve's page, its font served here)


def new_token() -> str:
    return secrets.token_urlsafe(32)


def public_url(host: str, port: int) -> str:
    """Where browsers reach the server. The page opens its WebSocket there, so it must be the name the
    browser used (Origin and cookie follow it): a wildcard bind is reached by this machine's name, not
    at 0.0.0.0 (textual-serve's default); an IPv6 address needs brackets."""
    name = socket.gethostname() if host in ("0.0.0.0", "::", "") else host
    return f"http://[{name}]:{port}" if ":" in name else f"http://{name}:{port}"


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
        refusal = self.refusal(request)
        if refusal is not None:
            return self._forbidden(refusal)
        if len(self.sessions) >= self.max_sessions:
            return web.Response(
                status=503, text=f"sparktop web: {self.max_sessions} sessions already open (--max-sessions)\n"
            )
        self.sessions[id(request)] = request  # counted before the first await: a burst cannot slip past
        try:
            return await super().handle_websocket(request)
        finally:
            del self.sessions[id(request)]

    async def on_startup(self, app: web.Application) -> None:
        """textual-serve prints a banner with the URL but no token: `sparktop web` prints the URL to open."""

    async def on_shutdown(self, app: web.Application) -> None:
        # A browser that is not reading would hold its handler (and aiohttp's shutdown) for a minute: close
        # each session's connection, which ends its handler, which tells its process to quit. One that does
        # not quit in time dies with this process (lifeline.exit_with_parent).
        for request in list(self.sessions.values()):
            if request.transport is not None:
                request.transport.close()
