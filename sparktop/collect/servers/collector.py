"""The model-server collector: endpoints probed in a background thread; a tick copies the latest readings.

Network I/O never runs on the tick: `collect()` costs a lock and a few object copies however slow a server
is. Each endpoint is re-read every `interval` seconds while it answers; after a failure it waits
interval × 2, × 4 … up to `max_backoff`. Default ports with nothing listening stay silent (that is the
normal case); a server that answered once, or one named in the config, gets one error line when it fails.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sparktop.collect.servers.discovery import (
    Endpoint,
    config_endpoints,
    container_endpoints,
    default_endpoints,
    identify,
    reader,
)
from sparktop.collect.servers.probe import ServerError
from sparktop.collect.servers.reading import Reading
from sparktop.core.safe_text import error_line
from sparktop.core.server_kinds import SERVER_KINDS, kind_named
from sparktop.core.snapshot import ServiceReport, Snapshot, process_key

if TYPE_CHECKING:
    from sparktop.settings.config import Config

NAME = "servers"
KIND_NAMES = frozenset(kind.name for kind in SERVER_KINDS)
OWNER_REFRESH_S = 10.0


@dataclass
class _State:
    endpoint: Endpoint
    server: str | None
    reading: Reading | None = None
    version: str | None = None
    error: str | None = None
    failures: int = 0
    next_at: float = 0.0
    checked_at: float | None = None
    answered: bool = False  # a model server answered here at least once
    busy: bool = False
    rates: dict[str, float] = field(default_factory=dict)  # model → tokens/s
    counters: dict[str, tuple[float, float]] = field(default_factory=dict)  # model → (time, total)
    context: dict[str, int] = field(default_factory=dict)  # model → context, kept from start-up facts
    generation: int = 0  # bumped by every probe outcome: the tick rebuilds its report only then

    @property
    def shown(self) -> bool:
        # Default ports and OLLAMA_HOST (often set for a server not running now) are silent until they answer.
        # A configured one is shown once it answered or failed: nothing to say before its first probe.
        return self.answered or (self.endpoint.source == "config" and self.error is not None)


class ServersCollector:
    name = NAME

    def __init__(
        self,
        endpoints: Iterable[str | Mapping[str, str]] = (),
        env: Mapping[str, str] | None = None,
        interval: float = 2.0,
        timeout: float = 1.0,
        max_backoff: float = 60.0,
        workers: int = 8,
        defaults: bool | Iterable[Endpoint] = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval = interval
        self.timeout = timeout
        self.max_backoff = max_backoff
        self._clock = clock
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.workers = workers
        configured, self.config_errors = config_endpoints(endpoints)
        if defaults is True:
            defaults = default_endpoints(os.environ if env is None else env)
        fixed = [*configured, *(defaults or [])]
        self._fixed: dict[str, Endpoint] = {}
        for ep in fixed:
            self._fixed.setdefault(ep.base, ep)
        self._states: dict[str, _State] = {b: _State(ep, ep.server) for b, ep in self._fixed.items()}
        self.probes = 0  # HTTP probe rounds run, for tests and the bench
        self._built: dict[str, tuple[int, float, ServiceReport]] = {}  # base → (generation, at, report)

    # --- the tick -------------------------------------------------------------------------------------------

    def collect(self, snapshot: Snapshot) -> list[ServiceReport]:
        self._sync_containers(snapshot)
        self._start()
        now = self._clock()
        out: list[ServiceReport] = []
        with self._lock:
            for state in self._states.values():
                if not state.shown:
                    continue
                built = self._built.get(state.endpoint.base)
                # Rebuilt when a probe changed something, and every OWNER_REFRESH_S (the process running a
                # server may have restarted); otherwise the tick copies the report: a few µs per server.
                if built is None or built[0] != state.generation or now - built[1] >= OWNER_REFRESH_S:
                    report = self._report(state)
                    self._complete(report, snapshot)
                    built = (state.generation, now, report)
                    self._built[state.endpoint.base] = built
                out.append(built[2].model_copy())
            for base in [b for b in self._built if b not in self._states]:
                del self._built[base]
            if (
                any(state.generation == 0 for state in self._states.values())
                and "servers" not in snapshot.pending
            ):
                snapshot.pending.append("servers")  # an endpoint not probed once yet: the Models tab says "…"
        return out

    def settle(self, timeout: float) -> bool:
        """Wait (at most `timeout` s) until every endpoint known now has been probed once (base.Collector):
        `--once` would otherwise print before any server answered. True when one has something to show."""
        deadline = self._clock() + timeout
        self._start()
        self._wake.set()
        while True:
            with self._lock:
                probed = all(s.generation > 0 for s in self._states.values())
                if probed or self._clock() >= deadline:
                    return any(s.shown for s in self._states.values())
            time.sleep(0.02)

    def _sync_containers(self, snapshot: Snapshot) -> None:
        wanted = {ep.base: ep for ep in container_endpoints(snapshot.containers)}
        with self._lock:
            for base, ep in wanted.items():
                state = self._states.get(base)
                if state is None:
                    self._states[base] = _State(ep, ep.server)
                    self._wake.set()
                elif state.endpoint.owner is None:
                    # A default or configured port that turns out to be a container's: that container owns
                    # the memory (a configured one stays so: shown when it fails, back to it when it leaves).
                    source = "config" if state.endpoint.source == "config" else "container"
                    state.endpoint = Endpoint(base, state.endpoint.server, source, ep.owner, ep.label)
                    state.generation += 1
            owned = [b for b, s in self._states.items() if (s.endpoint.owner or "").startswith("container:")]
            for base in owned:
                if base not in wanted:
                    if base in self._fixed:
                        self._states[base].endpoint = self._fixed[base]
                        self._states[base].generation += 1
                    else:
                        del self._states[base]

    def _report(self, state: _State) -> ServiceReport:
        reading = state.reading
        models = []
        for model in reading.models if reading else []:
            copy = model.model_copy()
            copy.tokens_per_s = state.rates.get(model.name)
            if copy.context_length is None:
                copy.context_length = state.context.get(model.name)
            models.append(copy)
        error = state.error
        if error is None and reading is not None and reading.note:
            error = reading.note
        return ServiceReport(
            collector=NAME,
            endpoint=state.endpoint.base,
            error=error,
            server=state.server,
            version=state.version,
            models=models,
            more_models=reading.more_models if reading else 0,
            fields=list(reading.fields) if reading else [],
            owner=state.endpoint.owner,
            checked_at=state.checked_at,
        )

    @staticmethod
    def _complete(report: ServiceReport, snapshot: Snapshot) -> None:
        """What only the snapshot knows: the process that runs a host server, and vLLM's reservation."""
        hints = kind_named(report.server).process_names if report.server in KIND_NAMES else ()
        if report.owner is None and hints:
            for proc in sorted(snapshot.processes, key=lambda p: p.pid):
                if proc.container_id is None and (
                    proc.name in hints or any(f"{h} " in f"{proc.cmdline} " for h in hints if len(h) > 6)
                ):
                    report.owner = process_key(proc)
                    break
        # vLLM's fraction is of what CUDA calls total: the pool on a unified-memory machine, the device's
        # memory on a discrete GPU that reports it.
        device = snapshot.memory.total
        totals = [g.memory_total for g in snapshot.gpu.gpus if g.memory_total and not g.unified_memory]
        if totals:
            device = totals[0]
        for model in report.models:
            share = model.gpu_memory_utilization  # checked at the parse: 0 < share <= 1
            if share is not None and 0 < share <= 1 and device:
                model.reserved_bytes = int(share * device)

    # --- the background prober ------------------------------------------------------------------------------

    def _start(self) -> None:
        if self._thread is None and not self._stop.is_set():
            self._thread = threading.Thread(target=self._run, name="sparktop-servers", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        """Starts each due probe on a daemon thread of its own and never waits for one: a server that answers
        slowly delays only its own next reading (each request has a deadline, sparktop.core.http_client), and
        no probe in flight can hold up the program's exit, as an executor's workers (joined at exit) would."""
        while not self._stop.is_set():
            now = self._clock()
            with self._lock:
                in_flight = sum(1 for s in self._states.values() if s.busy)
                due = [s for s in self._states.values() if not s.busy and s.next_at <= now]
                due = due[: max(0, self.workers - in_flight)]
                for s in due:
                    s.busy = True
                upcoming = [s.next_at for s in self._states.values() if not s.busy]
            if due:
                self.probes += 1
            for state in due:
                threading.Thread(
                    target=self._probe, args=(state,), name="sparktop-servers-probe", daemon=True
                ).start()
            delay = min(upcoming, default=now + self.interval) - self._clock()
            self._wake.wait(timeout=max(0.05, min(self.interval, delay)))
            self._wake.clear()

    def _probe(self, state: _State) -> None:
        base = state.endpoint.base
        try:
            server = state.server or identify(base, self.timeout)
            reading: Reading = reader(kind_named(server)).read(
                base, self.timeout, want_version=state.version is None
            )
        except ServerError as exc:
            self._failed(state, str(exc))
            return
        except Exception as exc:  # a parser bug must not kill the prober
            self._failed(state, f"unexpected answer ({error_line(exc)})"[:160])
            return
        now_wall = time.time()
        with self._lock:
            state.server = server
            state.reading = reading
            state.version = reading.version or state.version
            state.error = None
            state.failures = 0
            state.answered = True
            state.checked_at = now_wall
            # Per-model memory is for the models listed now only: a server that changes its model names every
            # probe must not grow these maps without end.
            listed = {model.name for model in reading.models}
            state.context = {k: v for k, v in state.context.items() if k in listed}
            counters, rates = {}, {}
            for model in reading.models:
                if model.context_length:
                    state.context[model.name] = model.context_length
                total = model.generation_tokens_total
                if total is None:
                    continue
                previous = state.counters.get(model.name)
                counters[model.name] = (now_wall, total)
                if previous is not None and now_wall > previous[0]:
                    delta = total - previous[1]
                    # A counter that went back means the server restarted: no rate from that pair.
                    rates[model.name] = delta / (now_wall - previous[0]) if delta >= 0 else 0.0
                elif model.name in state.rates:
                    rates[model.name] = state.rates[model.name]
            state.counters, state.rates = counters, rates
            state.next_at = self._clock() + self.interval
            state.busy = False
            state.generation += 1

    def _failed(self, state: _State, reason: str) -> None:
        with self._lock:
            state.failures += 1
            backoff = min(self.max_backoff, self.interval * 2 ** (state.failures - 1))
            state.next_at = self._clock() + backoff
            name = state.server or "model server"
            state.error = f"{name} at {state.endpoint.base}: {reason} (retry in {backoff:.3g} s)"
            state.rates.clear()
            state.busy = False
            state.generation += 1

    def close(self) -> None:
        self._stop.set()
        self._wake.set()


def from_config(config: Config) -> ServersCollector:
    """The collector the registry runs: the servers found without configuration plus the config file's
    `[[servers]]` (already validated there: a bad entry was reported with its file and line, and left out)."""
    endpoints = [
        {"url": s.url, "server": kind_named(s.kind).name} if s.kind else {"url": s.url}
        for s in config.servers
    ]
    return ServersCollector(endpoints=endpoints)
