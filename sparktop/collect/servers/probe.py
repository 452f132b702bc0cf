"""A short HTTP GET for probing local model servers, on sparktop's one HTTP client
(sparktop.core.http_client): a deadline for the whole answer, a bounded body, no redirects, one-line
errors."""

from __future__ import annotations

from typing import Any

from sparktop.collect.servers.server_text import visible
from sparktop.core.http_client import MIB, HttpError, request

MAX_BODY = 4 * MIB  # a /metrics page with many histograms is ~100 kB; more is not a model server
# A JSON answer (/api/ps, /props, /slots, /v1/models) is a few kB per model. Parsed, a megabyte of `{},` is
# ~20 MB of Python objects for a moment; four megabytes would be ~90 MB, which the allocator keeps.
MAX_JSON = 1 * MIB


class ServerError(Exception):
    """One readable line saying why a server could not be read. `reachable`: something answered HTTP."""

    def __init__(self, message: str, reachable: bool = True) -> None:
        super().__init__(message)
        self.reachable = reachable


def get(url: str, timeout: float, max_body: int = MAX_BODY) -> bytes:
    """The body of a 2xx answer within `timeout` seconds (the whole answer, not each read); anything else
    raises ServerError with one line."""
    try:
        return request(url, timeout=timeout, max_body=max_body).ok_body()
    except HttpError as exc:
        raise ServerError(str(exc), reachable=exc.reachable) from exc


def get_json(url: str, timeout: float) -> Any:
    try:
        reply = request(url, timeout=timeout, max_body=MAX_JSON)
        reply.ok_body()
        return reply.json()
    except HttpError as exc:
        raise ServerError(str(exc), reachable=exc.reachable) from exc


def get_text(url: str, timeout: float) -> str:
    return get(url, timeout).decode("utf-8", errors="replace")


def get_version(url: str, timeout: float) -> str | None:
    """The `version` string of the JSON object at `url` (Ollama's /api/version, vLLM's /version, SGLang's
    /get_server_info), made visible; None where there is none (very old servers have no such endpoint): the
    models still count."""
    try:
        answer = get_json(url, timeout)
    except ServerError:
        return None
    if isinstance(answer, dict) and isinstance(answer.get("version"), str):
        return visible(answer["version"], 40)
    return None
