"""Where model servers may answer, without configuration: default ports, OLLAMA_HOST, the ports running
containers publish, and endpoints from the config file. An endpoint whose server is not known is
identified by what it answers (see `identify`)."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import ModuleType
from urllib.parse import urlsplit

from sparktop.collect.servers.probe import ServerError, get_json, get_text
from sparktop.core.server_kinds import OLLAMA, SERVER_KINDS, ServerKind, kind_named
from sparktop.core.snapshot import ContainerInfo

LOCAL = "127.0.0.1"


def reader(kind: ServerKind) -> ModuleType:
    """The module that speaks `kind`'s protocol (`read`, and `recognises` where it has a probe_path)."""
    return importlib.import_module(f"sparktop.collect.servers.{kind.module}")


@dataclass(frozen=True)
class Endpoint:
    base: str  # "http://127.0.0.1:11434", no trailing slash
    server: str | None = None  # the protocol to speak; None: find out
    source: str = "default"  # "default", "OLLAMA_HOST", "container", "config"
    owner: str | None = None  # consumer key of the container publishing it
    label: str | None = None  # container name, for the screen


def normalise(address: str, default_port: int | None = None) -> str:
    """`host`, `host:port`, `:port` or a URL → `http://host:port` (0.0.0.0 and :: mean this machine)."""
    text = address.strip()
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(text)
    host = parts.hostname or LOCAL
    if host in ("0.0.0.0", "::", "[::]"):
        host = LOCAL
    try:
        port = parts.port or default_port
    except ValueError as exc:
        raise ValueError(f"bad port in {address!r}") from exc
    if ":" in host:
        host = f"[{host}]"
    scheme = parts.scheme if parts.scheme in ("http", "https") else "http"
    path = parts.path.rstrip("/")
    return f"{scheme}://{host}{f':{port}' if port else ''}{path}"


def default_endpoints(env: Mapping[str, str]) -> list[Endpoint]:
    out = []
    ollama_host = env.get("OLLAMA_HOST", "").strip()
    if ollama_host:
        with contextlib.suppress(ValueError):
            out.append(Endpoint(normalise(ollama_host, OLLAMA.default_port), OLLAMA.name, "OLLAMA_HOST"))
    for kind in SERVER_KINDS:
        base = f"http://{LOCAL}:{kind.default_port}"
        if not any(e.base == base for e in out):
            # On a common port whoever answers is identified by what it says (an SGLang on 8000 is read as
            # SGLang, a web app is left alone); a kind that owns its port is taken at its word.
            out.append(Endpoint(base, kind.name if kind.owns_port else None, "default"))
    return out


def container_endpoints(containers: Iterable[ContainerInfo]) -> list[Endpoint]:
    return [
        Endpoint(f"http://{LOCAL}:{port}", None, "container", f"container:{c.id}", c.label)
        for c in containers
        for port in c.ports
    ]


def config_endpoints(entries: Iterable[str | Mapping[str, str]]) -> tuple[list[Endpoint], list[str]]:
    """Config entries: `"host:port"` or `{url = "...", server = "vllm"}`; bad ones become error lines."""
    out, errors = [], []
    for entry in entries:
        url = entry if isinstance(entry, str) else entry.get("url", "")
        server = None if isinstance(entry, str) else entry.get("server")
        if server is not None:
            try:
                server = kind_named(server).name
            except KeyError:
                names = ", ".join(kind.name for kind in SERVER_KINDS)
                errors.append(f"servers: unknown server {server!r} for {url!r} (one of {names})")
                continue
        try:
            out.append(Endpoint(normalise(url), server, "config"))
        except ValueError as exc:
            errors.append(f"servers: {exc}")
    return out, errors


def identify(base: str, timeout: float) -> str:
    """Which server answers at `base`: by the metric prefix of its /metrics, else by the answer at each kind's
    probe_path (Ollama's /api/ps, llama-server's /props)."""
    try:
        text = get_text(f"{base}/metrics", timeout)
    except ServerError as exc:
        if not exc.reachable:  # nothing listens, or it does not answer: no point asking twice more
            raise
        text = ""
    for kind in SERVER_KINDS:
        if kind.metric_prefix and kind.metric_prefix in text:
            return kind.name
    for kind in SERVER_KINDS:
        if kind.probe_path is None:
            continue
        try:
            if reader(kind).recognises(get_json(f"{base}{kind.probe_path}", timeout)):
                return kind.name
        except ServerError:
            pass
    raise ServerError("no model server answers here")
