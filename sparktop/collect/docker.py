"""Docker: names, images and compose labels for discovery, stop and kill for control.

Memory never comes from here. Containers are found and measured from their cgroup files on every tick
(DESIGN §5); the Docker API only supplies what cgroups cannot: names, images, compose project/service. One
`GET /containers/json` (`containers.list(sparse=True)`, no per-container inspect, never the stats API) every
few seconds is enough, with a short client timeout so a stuck engine cannot stall a tick for long.

Nothing here raises out of discovery: no socket, permission denied or an engine that went away become a
`DockerStatus` with one readable reason, and the last names are kept (marked stale) until the engine answers
again. Control raises `ControlError` / `StopTimeout` with one readable line.

Discovery on a unix socket (the default, and a Spark's) is one `GET /containers/json` with the standard
library's HTTP client: the Docker SDK (requests, urllib3: ~7 MiB of RSS and ~0.15 s of imports) is loaded only
for other endpoints (tcp, TLS) and for control, when a stop is asked for.
"""

from __future__ import annotations

import contextlib
import errno
import http.client
import json
import math
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from sparktop.collect.control import ControlError, StopTimeout
from sparktop.core.safe_text import one_line
from sparktop.core.snapshot import ContainerInfo, DockerStatus

DEFAULT_SOCKET = "/var/run/docker.sock"
GROUP_HINT = "add yourself to the docker group: sudo usermod -aG docker $USER"
COMPOSE_PROJECT = "com.docker.compose.project"
COMPOSE_SERVICE = "com.docker.compose.service"
BY_ID = "showing containers by ID"

ContainerNames = dict[str, dict[str, Any]]

if TYPE_CHECKING:
    import docker


# --- where the engine is ------------------------------------------------------------------------------------


def resolve_endpoint(base_url: str | None = None) -> tuple[str, dict[str, Any]]:
    """The engine URL and extra client arguments: `base_url`, else DOCKER_HOST (with DOCKER_TLS_VERIFY /
    DOCKER_CERT_PATH), else /var/run/docker.sock, else a rootless engine's $XDG_RUNTIME_DIR/docker.sock."""
    if base_url:
        return base_url, {}
    host = os.environ.get("DOCKER_HOST")
    if host and socket_path(host):  # TLS settings do not apply to a unix socket
        return host, {}
    if host:
        import docker.utils

        kwargs = docker.utils.kwargs_from_env()
        url = kwargs.pop("base_url", None) or os.environ["DOCKER_HOST"]
        return url, kwargs
    if not os.path.exists(DEFAULT_SOCKET):
        runtime_dir = os.environ.get("XDG_RUNTIME_DIR")
        if runtime_dir and os.path.exists(os.path.join(runtime_dir, "docker.sock")):
            return f"unix://{os.path.join(runtime_dir, 'docker.sock')}", {}
    return f"unix://{DEFAULT_SOCKET}", {}


def socket_path(url: str) -> str | None:
    for scheme in ("unix://", "http+unix://"):
        if url.startswith(scheme):
            return "/" + url[len(scheme) :].lstrip("/")
    return None


def _where(url: str) -> str:
    return socket_path(url) or url


# --- what went wrong ----------------------------------------------------------------------------------------


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception, its causes and the exceptions nested in args (requests wraps urllib3 wraps OSError)."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        cur = todo.pop(0)
        if id(cur) in seen or len(seen) > 20:
            continue
        seen.add(id(cur))
        yield cur
        todo.extend(arg for arg in getattr(cur, "args", ()) if isinstance(arg, BaseException))
        for nxt in (cur.__cause__, cur.__context__, getattr(cur, "reason", None)):
            if isinstance(nxt, BaseException):
                todo.append(nxt)


def classify(exc: BaseException) -> str:
    """One of: notfound (container), missing (socket), denied, refused, timeout, disconnected, api, other."""
    # The SDK's and requests' exception types only if they were loaded: none of theirs can be at hand if not.
    sdk_errors = sys.modules.get("docker.errors")
    requests_errors = sys.modules.get("requests.exceptions")
    if sdk_errors is not None and isinstance(exc, sdk_errors.NotFound):
        return "notfound"
    chain = list(_chain(exc))
    for cur in chain:
        if isinstance(cur, PermissionError) or (
            isinstance(cur, OSError) and cur.errno in (errno.EACCES, errno.EPERM)
        ):
            return "denied"
        if isinstance(cur, FileNotFoundError) or (isinstance(cur, OSError) and cur.errno == errno.ENOENT):
            return "missing"
        if isinstance(cur, ConnectionRefusedError) or (
            isinstance(cur, OSError) and cur.errno == errno.ECONNREFUSED
        ):
            return "refused"
    timeouts: tuple[type[BaseException], ...] = (socket.timeout, TimeoutError)
    lost: tuple[type[BaseException], ...] = (http.client.HTTPException, ConnectionError, BrokenPipeError)
    if requests_errors is not None:
        timeouts += (requests_errors.Timeout,)
        lost += (requests_errors.ConnectionError,)
    for cur in chain:
        if isinstance(cur, timeouts):
            return "timeout"
    for cur in chain:
        if isinstance(cur, lost):
            return "disconnected"
    if sdk_errors is not None and isinstance(exc, sdk_errors.APIError):
        return "api"
    return "other"


MESSAGE_LIMIT = 160  # characters of an engine's error message kept in a status line


def _api_explanation(exc: BaseException) -> str:
    sdk_errors = sys.modules.get("docker.errors")
    if sdk_errors is not None and isinstance(exc, sdk_errors.APIError):
        return one_line(exc.explanation or exc, MESSAGE_LIMIT)
    return one_line(exc, MESSAGE_LIMIT)


# --- the engine on a unix socket, without the SDK ----------------------------------------------------------


class EngineError(Exception):
    """The engine answered a request with an error: its own message."""


class _UnixConnection(http.client.HTTPConnection):
    """HTTP over a unix socket (the engine's API)."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.socket_path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


def list_running(path: str, timeout: float) -> list[dict[str, Any]]:
    """`GET /containers/json` (the running containers, as the SDK's `containers.list(sparse=True)` asks) on
    the engine's unix socket `path`: one entry per container."""
    conn = _UnixConnection(path, timeout)
    try:
        conn.request("GET", "/containers/json", headers={"Accept": "application/json"})
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if response.status != 200:
        message = data.get("message") if isinstance(data, dict) else None
        raise EngineError(
            f"{response.status} {response.reason}: {message or body[:200].decode(errors='replace')}"
        )
    if not isinstance(data, list):
        raise EngineError("the engine's container list is not a list")
    return [entry for entry in data if isinstance(entry, dict)]


# --- discovery ----------------------------------------------------------------------------------------------


def _name(attrs: dict[str, Any]) -> str | None:
    names = [n for n in attrs.get("Names") or [] if isinstance(n, str)]
    # Legacy links add "/other/alias" entries: the container's own name has a single leading slash.
    own = [n for n in names if n.count("/") <= 1]
    candidates = own or names
    pick = candidates[0] if candidates else None
    return pick.lstrip("/") if pick else None


def _image(attrs: dict[str, Any]) -> str | None:
    image = attrs.get("Image")
    if isinstance(image, str) and image.startswith("sha256:"):
        return image[7:19]
    return image or None


def published_ports(attrs: dict[str, Any]) -> list[int]:
    """Host TCP ports in a `GET /containers/json` entry: `Ports: [{"PublicPort": 8000, "Type": "tcp"}]`."""
    ports: set[int] = set()
    for entry in attrs.get("Ports") or []:
        if not isinstance(entry, dict) or entry.get("Type", "tcp") != "tcp":
            continue
        public = entry.get("PublicPort")
        if isinstance(public, int) and 0 < public < 65536:
            ports.add(public)
    return sorted(ports)


def describe(attrs: dict[str, Any]) -> dict[str, Any]:
    """What discovery keeps of one `GET /containers/json` entry (a sparse Container's attrs)."""
    labels = attrs.get("Labels") or {}
    state = attrs.get("State")
    if isinstance(state, dict):  # a full inspect result
        state = state.get("Status")
    return {
        "name": _name(attrs) if "Names" in attrs else (attrs.get("Name") or "").lstrip("/") or None,
        "image": _image(attrs) if "Names" in attrs else (attrs.get("Config") or {}).get("Image"),
        "status": state,
        "compose_project": labels.get(COMPOSE_PROJECT),
        "compose_service": labels.get(COMPOSE_SERVICE),
        "ports": published_ports(attrs),
    }


def _stale_reason(detail: str, age: float) -> str:
    return f"Docker engine stopped answering ({detail}) — names from {max(0.0, age):.0f} s ago, retrying"


class DockerDiscovery:
    """Container names, images and compose labels, fetched at most every `refresh_s` seconds.

    `containers()` is cheap between refreshes (a dict copy). A refresh is one sparse list call with an
    `api_timeout` second client timeout. After a failure the next try waits refresh_s, 2×, 4× … up to
    `max_retry_s`; `invalidate()` asks for a refresh on the next call (after a stop, say).
    """

    def __init__(
        self,
        base_url: str | None = None,
        refresh_s: float = 3.0,
        clock: Callable[[], float] = time.monotonic,
        api_timeout: float = 2.0,
        max_retry_s: float = 30.0,
    ) -> None:
        self._base_url = base_url
        self.refresh_s = refresh_s
        self.api_timeout = api_timeout
        self.max_retry_s = max_retry_s
        self._clock = clock
        self._lock = threading.Lock()
        self._client: docker.DockerClient | None = None  # other endpoints than a unix socket only
        self._names: ContainerNames = {}
        self._status = DockerStatus(available=False, reason="not probed")
        self._next_at: float | None = None
        self._fetched_at: float | None = None  # clock time of the last successful fetch
        self._failures = 0
        self._stale_detail: str | None = None  # why the kept names are stale (None: they are not)
        self.url: str | None = None
        self.last_fetch_s: float | None = None  # how long the last refresh took (success or not)
        self.fetches = 0  # refresh attempts, for tests and the debug view

    @property
    def base_url(self) -> str | None:
        """The endpoint it was built with (None: DOCKER_HOST or the default socket)."""
        return self._base_url

    # -- public

    def containers(self) -> tuple[ContainerNames, DockerStatus]:
        """full container id -> {name, image, status, compose_project, compose_service}, and the status."""
        with self._lock:
            now = self._clock()
            if self._next_at is None or now >= self._next_at:
                self._refresh(now)
            status = self._status
            if self._stale_detail is not None and self._fetched_at is not None:
                # The age of the kept names as of now, not frozen at the failure ("names from 3 s ago" for
                # half a minute).
                reason = _stale_reason(self._stale_detail, now - self._fetched_at)
                status = DockerStatus(available=False, reason=reason)
            return {cid: dict(info) for cid, info in self._names.items()}, status

    def invalidate(self) -> None:
        """Refresh on the next `containers()` call, whatever the schedule."""
        with self._lock:
            self._next_at = None

    @property
    def stale(self) -> bool:
        """The names are from an earlier fetch: the engine did not answer the last one."""
        return bool(self._names) and not self._status.available

    def close(self) -> None:
        with self._lock:
            self._drop_client()

    # -- internals

    def _drop_client(self) -> None:
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()
        self._client = None

    def _connect(self) -> docker.DockerClient:
        if self._client is None:
            import docker

            assert self.url is not None  # _list resolved it
            _url, kwargs = resolve_endpoint(self._base_url)
            # version="auto" asks the engine for its API version (one short request).
            self._client = docker.DockerClient(
                base_url=self.url, version="auto", timeout=self.api_timeout, **kwargs
            )
        return self._client

    def _list(self) -> list[dict[str, Any]]:
        """The running containers' `GET /containers/json` entries: on a unix socket directly, elsewhere
        through the SDK."""
        if self._client is None:  # where the engine is, again after a failure (a rootless one may start)
            self.url = resolve_endpoint(self._base_url)[0]
        assert self.url is not None
        path = socket_path(self.url)
        if path is not None:
            return list_running(path, self.api_timeout)
        return [c.attrs for c in self._connect().containers.list(sparse=True)]

    def _refresh(self, now: float) -> None:
        self.fetches += 1
        t0 = time.monotonic()
        try:
            listed = self._list()
            names = {attrs["Id"]: describe(attrs) for attrs in listed if attrs.get("Id")}
        except Exception as exc:  # never raise out of discovery
            self.last_fetch_s = time.monotonic() - t0
            self._failed(now, exc)
            return
        self.last_fetch_s = time.monotonic() - t0
        self._names = names
        self._fetched_at = now
        self._failures = 0
        self._stale_detail = None
        self._next_at = now + self.refresh_s
        self._status = DockerStatus(available=True, reason=None)

    def _failed(self, now: float, exc: BaseException) -> None:
        self._drop_client()
        self._failures += 1
        kind = classify(exc)
        delay = min(self.max_retry_s, self.refresh_s * 2 ** (self._failures - 1))
        if kind in ("missing", "refused"):
            # Failing costs a millisecond (no socket, nobody listening): ask again every refresh_s, so names
            # are fresh, and the stale notice gone, within refresh_s of the engine coming back.
            delay = self.refresh_s
        self._next_at = now + max(delay, self.refresh_s)
        self._stale_detail = None
        if self.url is None:
            with contextlib.suppress(Exception):
                self.url = resolve_endpoint(self._base_url)[0]
        where = _where(self.url or self._base_url or DEFAULT_SOCKET)
        if kind == "denied":
            reason = f"permission denied on {where} — {GROUP_HINT}"
        elif self._names and self._fetched_at is not None:
            age = max(0.0, now - self._fetched_at)
            detail = {
                "missing": "socket gone",
                "refused": "connection refused",
                "timeout": f"no answer within {self.api_timeout:g} s",
                "disconnected": "connection lost",
            }.get(kind, _api_explanation(exc))
            self._stale_detail = detail
            reason = _stale_reason(detail, age)
        elif kind == "missing":
            reason = f"Docker socket {where} not found — {BY_ID}"
        elif kind == "refused":
            reason = f"Docker engine not answering on {where} (connection refused) — {BY_ID}"
        elif kind == "timeout":
            reason = f"Docker engine on {where} did not answer within {self.api_timeout:g} s — {BY_ID}"
        elif kind == "disconnected":
            reason = f"Docker engine on {where} closed the connection — {BY_ID}"
        else:
            reason = f"Docker unavailable: {_api_explanation(exc)} — {BY_ID}"
        self._status = DockerStatus(available=False, reason=reason)


# --- control ------------------------------------------------------------------------------------------------


class DockerController:
    """Stop and kill containers through the engine (`ContainerController`).

    `stop()` is `docker stop -t N`: SIGTERM (or the image's stop signal), the engine's SIGKILL after N s.
    docker-py sets the HTTP timeout of that call to `api_timeout + N`, so a stop the engine cannot finish
    (a hung runtime, a process SIGKILL cannot reach) ends on our side as StopTimeout instead of hanging.
    """

    def __init__(self, base_url: str | None = None, api_timeout: float = 5.0) -> None:
        self._base_url = base_url
        self.api_timeout = api_timeout
        self._client: docker.DockerClient | None = None
        self._lock = threading.Lock()
        self.url: str | None = None

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                with contextlib.suppress(Exception):
                    self._client.close()
            self._client = None

    def _connect(self) -> docker.DockerClient:
        with self._lock:
            if self._client is None:
                try:
                    import docker  # the SDK for control: loaded at the first stop, not at start

                    url, kwargs = resolve_endpoint(self._base_url)
                    self.url = url
                    self._client = docker.DockerClient(
                        base_url=url, version="auto", timeout=self.api_timeout, **kwargs
                    )
                except Exception as exc:
                    raise self._error(exc) from exc
            return self._client

    def _error(self, exc: BaseException, container: str | None = None) -> ControlError:
        """One readable line for anything the engine or the connection did."""
        kind = classify(exc)
        where = _where(self.url or self._base_url or DEFAULT_SOCKET)
        if kind != "api" and kind != "notfound":
            self.close_client_quietly()
        if kind == "notfound":
            return ControlError(f"container {container or '?'} is already gone")
        if kind == "denied":
            return ControlError(f"permission denied on {where} — {GROUP_HINT}")
        if kind == "missing":
            return ControlError(f"Docker socket {where} not found — is the Docker engine running?")
        if kind == "refused":
            return ControlError(f"Docker engine stopped answering: connection refused on {where}")
        if kind == "timeout":
            return ControlError(f"Docker engine stopped answering: no reply within {self.api_timeout:g} s")
        if kind == "disconnected":
            return ControlError(f"Docker engine stopped answering: {one_line(_root_cause(exc), 120)}")
        if kind == "api":
            return ControlError(f"Docker refused: {_api_explanation(exc)}")
        return ControlError(f"Docker error: {one_line(exc, MESSAGE_LIMIT)}")

    def close_client_quietly(self) -> None:
        # Called with or without the lock held by the caller's thread; the client is rebuilt on next use.
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()

    def _get(self, container_id: str) -> Any:
        client = self._connect()
        try:
            return client.containers.get(container_id)
        except Exception as exc:
            raise self._error(exc, container_id[:12]) from exc

    @staticmethod
    def _label(container: Any) -> str:
        name = (container.attrs.get("Name") or "").lstrip("/")
        return f"{name} ({container.id[:12]})" if name else container.id[:12]

    def stop(self, container_id: str, timeout: float = 10.0) -> None:
        container = self._get(container_id)
        label = self._label(container)
        seconds = max(0, math.ceil(timeout))  # the API takes whole seconds
        timed_out = False
        try:
            container.stop(timeout=seconds)  # HTTP timeout: api_timeout + seconds
        except Exception as exc:
            if classify(exc) != "timeout":
                raise self._error(exc, label) from exc
            timed_out = True
        try:
            container.reload()
        except Exception as exc:
            kind = classify(exc)
            if kind == "notfound":
                return  # stopped and removed (--rm): done
            if timed_out:
                raise StopTimeout(
                    f"container {label} did not stop within {seconds} s (the engine is still busy with it)"
                ) from exc
            if kind in ("timeout", "disconnected", "refused", "missing"):
                return  # the engine answered the stop itself; only the check failed
            raise self._error(exc, label) from exc
        state = container.attrs.get("State") or {}
        if state.get("Running") or state.get("Restarting"):
            raise StopTimeout(f"container {label} did not stop within {seconds} s")

    def kill(self, container_id: str) -> None:
        container = self._get(container_id)
        label = self._label(container)
        import docker.errors

        try:
            container.kill()
        except docker.errors.APIError as exc:
            if exc.status_code == 409 and "not running" in str(exc.explanation or exc).lower():
                return  # it exited meanwhile: the goal is met
            raise self._error(exc, label) from exc
        except Exception as exc:
            raise self._error(exc, label) from exc

    def project_containers(self, project: str) -> list[ContainerInfo]:
        """The running containers of a compose project, by service then name."""
        client = self._connect()
        try:
            listed = client.containers.list(sparse=True, filters={"label": f"{COMPOSE_PROJECT}={project}"})
        except Exception as exc:
            raise self._error(exc) from exc
        out = []
        for c in listed:
            info = describe(c.attrs)
            out.append(ContainerInfo(id=c.attrs["Id"], runtime="docker", **info))
        out.sort(key=lambda c: (c.compose_service or "", c.name or "", c.id))
        return out


def _root_cause(exc: BaseException) -> str:
    """The most specific message in the chain ("Connection aborted: RemoteDisconnected(...)")."""
    last = exc
    for cur in _chain(exc):
        if isinstance(cur, OSError | http.client.HTTPException):
            last = cur
    text = str(last) or type(last).__name__
    if isinstance(last, http.client.RemoteDisconnected):
        return "the engine closed the connection mid-request (restarted?)"
    return text
