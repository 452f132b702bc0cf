"""A short HTTP GET for probing local model servers: bounded time, bounded size, one-line errors."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from typing import Any

MAX_BODY = 4 * 1024 * 1024  # a /metrics page with many histograms is ~100 kB; more is not a model server

# No proxy: an http_proxy set for the internet must not route 127.0.0.1:11434 through it.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ServerError(Exception):
    """One readable line saying why a server could not be read. `reachable`: something answered HTTP."""

    def __init__(self, message: str, reachable: bool = True) -> None:
        super().__init__(message)
        self.reachable = reachable


def _reason(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}".strip()
    inner = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(inner, TimeoutError | socket.timeout):
        return f"no answer within {timeout:g} s"
    if isinstance(inner, ConnectionRefusedError):
        return "connection refused"
    if isinstance(inner, ConnectionResetError):
        return "connection reset"
    if isinstance(inner, OSError) and inner.strerror:
        return inner.strerror
    text = " ".join(str(inner).split())
    return text[:120] or type(inner).__name__


def get(url: str, timeout: float) -> bytes:
    """The body of a 200 answer; anything else raises ServerError with one line."""
    request = urllib.request.Request(url, headers={"Accept": "*/*", "User-Agent": "sparktop"})
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            body = response.read(MAX_BODY + 1)
    except urllib.error.HTTPError as exc:
        raise ServerError(_reason(exc, timeout)) from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise ServerError(_reason(exc, timeout), reachable=False) from exc
    except Exception as exc:  # http.client.BadStatusLine and friends: not an HTTP server
        raise ServerError(f"not an HTTP answer ({type(exc).__name__})") from exc
    if len(body) > MAX_BODY:
        raise ServerError(f"answer larger than {MAX_BODY // 1024 // 1024} MiB")
    return body


def get_json(url: str, timeout: float) -> Any:
    body = get(url, timeout)
    try:
        return json.loads(body)
    except ValueError as exc:
        raise ServerError("answer is not JSON") from exc


def get_text(url: str, timeout: float) -> str:
    return get(url, timeout).decode("utf-8", errors="replace")
