"""The cluster view's GET (exporters' /snapshot.json, Prometheus's API) on sparktop's one HTTP client
(sparktop.core.http_client): a deadline for the whole answer, a bounded body, no redirects, proxies as curl
takes them with loopback never proxied, and every failure one line a person can read."""

from __future__ import annotations

from sparktop.core.http_client import MIB, HttpError, Reply, request

TIMEOUT_S = 3.0
MAX_BODY = 64 * MIB  # a snapshot of a busy machine is a few MB; anything far larger is not ours

FetchError = HttpError  # str() is one line: why no reply came
__all__ = ["MAX_BODY", "TIMEOUT_S", "FetchError", "Reply", "base_url", "fetch"]


def fetch(url: str, timeout: float = TIMEOUT_S, token: str | None = None) -> Reply:
    """The reply, whatever its status (a redirect is returned, not followed); FetchError when no complete
    reply came within `timeout` seconds, or it is larger than MAX_BODY. `Reply.json()` raises FetchError.
    `token`: sent as `Authorization: Bearer` (`sparktop web`'s private feed)."""
    headers = {"Accept": "application/json, text/plain"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return request(url, timeout=timeout, max_body=MAX_BODY, headers=headers)


def base_url(address: str) -> str:
    """'host:port' or a URL → 'http://host:port' without a trailing slash."""
    address = address.strip().rstrip("/")
    return address if "://" in address else f"http://{address}"
