"""Every HTTP request sparktop sends to a server it does not run: model servers, exporters and Prometheus for
the cluster view, the guard's webhook. `request()` gives each one

- one deadline for the whole exchange (connect, TLS, proxy tunnel, request, headers, body), as Prometheus's
  `scrape_timeout` and Go's `Client.Timeout`: a server that drips one byte a second is cut off at the deadline
  instead of each byte resetting a per-read timeout (the socket is non-blocking and every wait is bounded by
  what is left);
- a cap on the body: an answer over `max_body` is an error, never read on nor truncated silently;
- no redirects: a 3xx comes back as it is (a server on :11434 must not send sparktop to another host, nor to
  ftp://);
- proxies as curl takes them from the environment — `http_proxy` (lower case only, as curl), `https_proxy`,
  `all_proxy`, `no_proxy` with `*`, domain suffixes and CIDR blocks — except that loopback is never proxied;
- one line for every failure (`HttpError`).

Host names are resolved by the system resolver, which this deadline cannot interrupt; the addresses sparktop
reads by default are numeric (127.0.0.1).
"""

from __future__ import annotations

import base64
import http.client
import io
import ipaddress
import json
import os
import re
import select
import socket
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from email.message import Message
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit

from sparktop.core.safe_text import visible as _visible

KIB = 1024
MIB = 1024 * KIB
DEFAULT_PROXY_PORT = 1080  # curl's, for a proxy given without a port


def visible(value: object, limit: int) -> str:
    """Text the server controls (a reason phrase, a Location), controls made visible, cut to `limit`."""
    text = _visible(" ".join(str(value).split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


class HttpError(Exception):
    """One line saying why no usable reply came. `reachable`: an HTTP server answered (with a status that is
    not wanted, a body too large or not JSON); False: nothing connected, or no complete answer in time
    (`timed_out`)."""

    def __init__(self, message: str, reachable: bool = False, timed_out: bool = False) -> None:
        super().__init__(" ".join(message.split()))
        self.reachable = reachable
        self.timed_out = timed_out  # the deadline passed before the whole answer came


@dataclass(frozen=True)
class Reply:
    status: int
    reason: str
    headers: Message  # case-insensitive .get()
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except (ValueError, RecursionError) as exc:  # RecursionError: "[[[[…" deeper than the stack
            raise HttpError("answer is not JSON", reachable=True) from exc

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def ok_body(self) -> bytes:
        """The body of a 2xx answer; anything else raises HttpError with the status (and, for a redirect,
        where it pointed: not followed)."""
        if 200 <= self.status < 300:
            return self.body
        line = f"HTTP {self.status} {visible(self.reason, 60) if self.reason else ''}".strip()
        if 300 <= self.status < 400:
            location = self.headers.get("Location")
            where = f" to {visible(location, 120)}" if location else ""
            line += f" (a redirect{where}: not followed)"
        raise HttpError(line, reachable=True)


# --- the deadline ------------------------------------------------------------------------------------------


class _Expired(Exception):
    """The whole-request deadline passed (caught in `request`, which knows the figure to name)."""


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        left = self.at - time.monotonic()
        if left <= 0:
            raise _Expired
        return left


class _DeadlineSocket:
    """A connected socket as http.client uses it (`sendall`, `makefile`, `close`), non-blocking, every wait
    for it bounded by what is left of the deadline. Works for TLS sockets too (SSLWantRead/Write). As a
    socket does, it stays open until the files made from it are closed too (http.client closes the connection
    before the answer's body is read when the server says `Connection: close`)."""

    def __init__(self, sock: socket.socket, deadline: _Deadline) -> None:
        sock.setblocking(False)
        self.sock = sock
        self._deadline = deadline
        self._files = 0
        self._closed = False

    def wait(self, write: bool) -> None:
        poller = select.poll()
        poller.register(self.sock.fileno(), select.POLLOUT if write else select.POLLIN)
        poller.poll(max(1, int(self._deadline.left() * 1000)))  # nothing ready: the caller asks the deadline

    def recv_into(self, buffer: memoryview | bytearray) -> int:
        while True:
            try:
                return self.sock.recv_into(buffer)
            except (BlockingIOError, ssl.SSLWantReadError):
                self.wait(write=False)
            except ssl.SSLWantWriteError:
                self.wait(write=True)

    def sendall(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[self.sock.send(view) :]
            except (BlockingIOError, ssl.SSLWantWriteError):
                self.wait(write=True)
            except ssl.SSLWantReadError:
                self.wait(write=False)

    def makefile(self, mode: str = "rb", *args: object, **kwargs: object) -> io.BufferedReader:
        self._files += 1
        return io.BufferedReader(_Reader(self))

    def release(self) -> None:
        self._files -= 1
        if self._closed and self._files <= 0:
            self.sock.close()

    def close(self) -> None:
        self._closed = True
        if self._files <= 0:
            self.sock.close()


class _Reader(io.RawIOBase):
    def __init__(self, sock: _DeadlineSocket) -> None:
        super().__init__()
        self._sock = sock

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self._sock.recv_into(buffer)

    def close(self) -> None:
        if not self.closed:
            self._sock.release()
        super().close()


@dataclass(frozen=True)
class _Proxy:
    host: str
    port: int
    authorization: str | None  # "Basic …" from user:password in the proxy URL

    @property
    def name(self) -> str:
        return f"{self.host}:{self.port}"


class _Connection(http.client.HTTPConnection):
    """http.client formats the request and parses the answer (status, headers, chunked bodies, limits on
    header size and count); the socket under it is ours: connected, tunnelled and TLS-wrapped within the
    deadline."""

    def __init__(
        self,
        host: str,
        port: int,
        deadline: _Deadline,
        tls_host: str | None,
        tunnel: tuple[str, dict[str, str]] | None,
    ) -> None:
        super().__init__(host, port, timeout=deadline.seconds)
        self._deadline = deadline
        self._tls_host = tls_host
        self._tunnel_to = tunnel

    def connect(self) -> None:
        # An ASCII name goes to getaddrinfo as bytes: a str is encoded with the IDNA codec, whose import
        # (stringprep, unicodedata) stays resident (~0.5 MiB in `serve`) and changes no ASCII name.
        # (create_connection hands the name to getaddrinfo, which takes bytes; typeshed says str only.)
        host = self.host.encode("ascii") if self.host.isascii() else self.host
        raw = socket.create_connection((host, self.port), timeout=self._deadline.left())  # type: ignore[arg-type]
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock = _DeadlineSocket(raw, self._deadline)
        self.sock = sock
        if self._tunnel_to is not None:
            _open_tunnel(sock, *self._tunnel_to)
        if self._tls_host is not None:
            context = ssl.create_default_context()
            tls = context.wrap_socket(raw, server_hostname=self._tls_host, do_handshake_on_connect=False)
            sock = _DeadlineSocket(tls, self._deadline)
            self.sock = sock
            while True:
                try:
                    tls.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    sock.wait(write=False)
                except ssl.SSLWantWriteError:
                    sock.wait(write=True)


def _open_tunnel(sock: _DeadlineSocket, target: str, headers: dict[str, str]) -> None:
    lines = [f"CONNECT {target} HTTP/1.1", f"Host: {target}", *(f"{k}: {v}" for k, v in headers.items())]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    answer = http.client.HTTPResponse(sock, method="CONNECT")  # type: ignore[arg-type]
    answer.begin()
    if answer.status != 200:
        raise HttpError(f"the proxy refused the tunnel: HTTP {answer.status} {visible(answer.reason, 60)}")


# --- proxies, as curl reads them ----------------------------------------------------------------------------


def is_loopback(host: str) -> bool:
    """This machine: localhost, *.localhost, 127.0.0.0/8, ::1 (and the unspecified 0.0.0.0 / ::)."""
    host = host.strip("[]").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified


def _bypassed(host: str, no_proxy: str) -> bool:
    """curl's NO_PROXY: `*` alone matches all; otherwise a name matches itself and its subdomains (a leading
    dot is ignored), an address matches itself, and a CIDR block the addresses in it."""
    host = host.strip("[]").lower().rstrip(".")
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
    except ValueError:
        address = None
    for entry in re.split(r"[,\s]+", no_proxy.lower()):
        entry = entry.strip().strip("[]")
        if entry == "*":
            return True
        entry = entry.removeprefix("*").lstrip(".").rstrip(".")
        if not entry:
            continue
        if address is not None:
            try:
                if address in ipaddress.ip_network(entry, strict=False):
                    return True
            except ValueError:
                pass
            continue
        if host == entry or host.endswith("." + entry):
            return True
    return False


def _env(env: Mapping[str, str], *names: str) -> str:
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return value
    return ""


def _split(url: str) -> SplitResult | None:
    """The URL's parts; None for one urlsplit refuses (`http://[::1`, a bracketed name that is no address)."""
    try:
        return urlsplit(url)
    except ValueError:
        return None


def proxy_for(url: str, env: Mapping[str, str] | None = None) -> str | None:
    """The proxy URL curl would use for `url` under `env` (os.environ by default); None: go direct (or a
    URL that cannot be sent at all)."""
    env = os.environ if env is None else env
    parts = _split(url)
    if parts is None:
        return None
    host = parts.hostname or ""
    if not host or is_loopback(host) or _bypassed(host, _env(env, "no_proxy", "NO_PROXY")):
        return None
    # curl reads http_proxy in lower case only (an HTTP_PROXY header set by a CGI client must not steer it).
    scheme_var = ("http_proxy",) if parts.scheme == "http" else ("https_proxy", "HTTPS_PROXY")
    return _env(env, *scheme_var, "all_proxy", "ALL_PROXY") or None


def _parse_proxy(value: str) -> _Proxy:
    parts = _split(value if "://" in value else f"http://{value}")
    if parts is None:
        raise HttpError(f"proxy {visible(value, 80)}: not a URL (fix http_proxy, https_proxy or all_proxy)")
    if parts.scheme != "http":
        raise HttpError(
            f"proxy {visible(value, 80)}: only http:// proxies are supported (add the host to no_proxy)"
        )
    try:
        port = parts.port or DEFAULT_PROXY_PORT
    except ValueError as exc:
        raise HttpError(f"proxy {visible(value, 80)}: bad port") from exc
    if not parts.hostname:
        raise HttpError(f"proxy {visible(value, 80)}: no host")
    authorization = None
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        authorization = "Basic " + base64.b64encode(pair).decode("ascii")
    return _Proxy(parts.hostname, port, authorization)


# --- the request -------------------------------------------------------------------------------------------


def request(
    url: str,
    *,
    timeout: float,
    max_body: int,
    method: str = "GET",
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Reply:
    """The reply, whatever its status (redirects included, not followed); HttpError (one line) when none came
    complete within `timeout` seconds, or its body is over `max_body` bytes."""
    parts = _split(url)
    if parts is None:
        raise HttpError(f"bad address {visible(url, 80)}: not a URL")
    if parts.scheme not in ("http", "https"):
        raise HttpError(f"{visible(parts.scheme, 20) or 'no'} scheme: only http:// and https:// are spoken")
    host = parts.hostname
    if not host:
        raise HttpError("no host in the address")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise HttpError("bad port in the address") from exc
    deadline = _Deadline(timeout)
    proxy_value = proxy_for(url, env)
    proxy = _parse_proxy(proxy_value) if proxy_value else None
    sent = {"User-Agent": "sparktop", "Accept": "*/*", "Connection": "close", **(headers or {})}
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    tls_host = host if parts.scheme == "https" else None
    if proxy is None:
        connection = _Connection(host, port, deadline, tls_host, None)
    elif tls_host is not None:  # https through the proxy: a CONNECT tunnel, TLS end to end
        tunnel_headers = {"Proxy-Authorization": proxy.authorization} if proxy.authorization else {}
        connection = _Connection(proxy.host, proxy.port, deadline, tls_host, (netloc, tunnel_headers))
    else:  # http through the proxy: the absolute URL in the request line
        connection = _Connection(proxy.host, proxy.port, deadline, None, None)
        target = f"http://{netloc}{target}"
        if proxy.authorization:
            sent["Proxy-Authorization"] = proxy.authorization
    via = f"through the proxy {proxy.name}: " if proxy else ""
    response: http.client.HTTPResponse | None = None
    try:
        connection.request(method, target, body=body, headers=sent)
        response = connection.getresponse()
        length = response.getheader("Content-Length")
        if length and length.strip().isdigit() and int(length) > max_body:
            raise HttpError(f"answer larger than {_size(max_body)}", reachable=True)
        data = response.read(max_body + 1)
        if len(data) > max_body:
            raise HttpError(f"answer larger than {_size(max_body)}", reachable=True)
        return Reply(response.status, response.reason, response.msg, data)
    except HttpError:
        raise
    except (_Expired, TimeoutError) as exc:
        raise HttpError(f"{via}no complete answer within {timeout:g} s", timed_out=True) from exc
    except Exception as exc:
        raise HttpError(via + _reason(exc), reachable=_answered(exc)) from exc
    finally:
        if response is not None:
            response.close()
        connection.close()


def _size(n: int) -> str:
    return f"{n // MIB} MiB" if n >= MIB and n % MIB == 0 else f"{n // KIB} KiB" if n >= KIB else f"{n} bytes"


def _answered(exc: BaseException) -> bool:
    """Something spoke, but not HTTP as asked (a garbled status line, a body cut short)."""
    return isinstance(exc, http.client.HTTPException) and not isinstance(exc, http.client.RemoteDisconnected)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, http.client.RemoteDisconnected):
        return "the connection closed without an answer"
    if isinstance(exc, http.client.IncompleteRead):
        return "the answer was cut short"
    if isinstance(exc, http.client.LineTooLong):
        return "not an HTTP answer (a header line too long)"
    if isinstance(exc, http.client.HTTPException):
        return f"not an HTTP answer ({type(exc).__name__})"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS certificate not accepted ({exc.verify_message})"
    if isinstance(exc, ssl.SSLError):
        return f"TLS failed ({exc.reason or exc})"
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve the host name ({exc.strerror})"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ConnectionResetError):
        return "connection reset"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = visible(" ".join(str(exc).split()), 120)
    return text or type(exc).__name__
