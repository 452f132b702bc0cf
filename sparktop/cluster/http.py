"""GET with a timeout, every failure turned into one line a person can read."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

TIMEOUT_S = 3.0
MAX_BODY = 64 * 1024 * 1024  # a snapshot of a busy machine is a few MB; anything far larger is not ours


class FetchError(Exception):
    """str() is one line: what was asked and why it failed."""


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError as exc:
            raise FetchError(f"not JSON ({exc})") from exc


def fetch(url: str, timeout: float = TIMEOUT_S) -> Reply:
    """The reply, whatever its status; FetchError when there is no reply at all."""
    request = urllib.request.Request(url, headers={"Accept": "application/json, text/plain"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return Reply(reply.status, dict(reply.headers), reply.read(MAX_BODY))
    except urllib.error.HTTPError as exc:
        return Reply(exc.code, dict(exc.headers or {}), exc.read(MAX_BODY))
    except urllib.error.URLError as exc:
        reason = exc.reason
        text = reason.strerror if isinstance(reason, OSError) and reason.strerror else str(reason)
        raise FetchError(text.lower() if text else "unreachable") from exc
    except TimeoutError as exc:
        raise FetchError(f"no answer within {timeout:g} s") from exc
    except (OSError, ValueError) as exc:  # connection reset mid-reply, a malformed URL
        raise FetchError(str(exc) or type(exc).__name__) from exc


def base_url(address: str) -> str:
    """'host:port' or a URL → 'http://host:port' without a trailing slash."""
    address = address.strip().rstrip("/")
    return address if "://" in address else f"http://{address}"
