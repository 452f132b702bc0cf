"""Model servers as named consumers: split a server's consumer into one slice per loaded model, and the rows
of the Models panel. Pure functions over a snapshot."""

from __future__ import annotations

from dataclasses import dataclass

from sparktop.core.format import fmt_duration
from sparktop.core.snapshot import Accounting, Consumer, ServedModel, ServiceReport, Snapshot

NEVER_S = 10 * 365 * 86400.0  # keep_alive -1 shows as a date centuries away


def model_key(report: ServiceReport, model: ServedModel) -> str:
    return f"model:{report.endpoint}:{model.name}"


def _owner_keys(report: ServiceReport, accounting: Accounting, snapshot: Snapshot) -> list[str]:
    """The consumers whose memory holds the server's models: its container, or its host process and the
    children it started (Ollama loads each model in an `ollama runner` child)."""
    if report.owner is None:
        return []
    if report.owner.startswith("container:"):
        return [report.owner]
    try:
        pid = int(report.owner.split(":")[1])
    except (IndexError, ValueError):
        return [report.owner]
    children = {p.pid for p in snapshot.processes if p.ppid == pid and p.container_id is None}
    keys = [report.owner]
    for consumer in accounting.consumers:
        if consumer.kind == "process" and consumer.key != report.owner:
            try:
                if int(consumer.key.split(":")[1]) in children:
                    keys.append(consumer.key)
            except (IndexError, ValueError):
                continue
    return keys


def split_models(snapshot: Snapshot) -> Accounting | None:
    """The accounting with each model server's consumer split into one consumer per loaded model (labelled
    `model (server)`) plus the remainder, the server's own. Parts still add up to `used`: a model never takes
    more than its owner holds (what the server says it loaded is capped by what was measured)."""
    accounting = snapshot.accounting
    if accounting is None or not snapshot.services:
        return accounting
    consumers = [c.model_copy() for c in accounting.consumers]
    by_key = {c.key: c for c in consumers}
    extra: list[Consumer] = []
    for report in snapshot.services:
        owners = [by_key[k] for k in _owner_keys(report, accounting, snapshot) if k in by_key]
        if not owners:
            continue
        for model in report.models:
            want_gpu = model.gpu_bytes if model.gpu_bytes is not None else model.reserved_bytes or 0
            want_cpu = model.cpu_bytes or 0
            got_gpu = got_cpu = 0
            for owner in owners:  # take from the owners in order until the model is paid for
                take = min(owner.gpu_bytes, want_gpu - got_gpu)
                owner.gpu_bytes -= take
                got_gpu += take
                take = min(owner.cpu_bytes, want_cpu - got_cpu)
                owner.cpu_bytes -= take
                got_cpu += take
            if got_gpu or got_cpu:
                extra.append(
                    Consumer(
                        key=model_key(report, model),
                        label=f"{model.name} ({report.server or 'server'})",
                        kind="process",
                        cpu_bytes=got_cpu,
                        gpu_bytes=got_gpu,
                        parent=owners[0].key,
                    )
                )
    if not extra:
        return accounting
    return accounting.model_copy(update={"consumers": [*consumers, *extra]})


@dataclass(frozen=True)
class ModelPart:
    """A served model as a part of its server's row in the containers or processes table: the slice
    `split_models` gave it. Not a process or a container: nothing can be stopped or signalled through it."""

    key: str  # its consumer key (model:<endpoint>:<name>), the row's key
    name: str
    server: str  # "ollama", "vllm", ...
    owner: str  # the consumer key of the server's container or process: the row it is drawn under
    cpu_bytes: int
    gpu_bytes: int
    unload_in_s: float | None  # None: not known, or it stays loaded (see `stays_loaded`)
    stays_loaded: bool = False  # Ollama keep_alive -1
    reserved: bool = False  # its slice is what the server reserved at start-up (vLLM), not what it reports

    @property
    def label(self) -> str:
        return self.name

    @property
    def total(self) -> int:
        return self.cpu_bytes + self.gpu_bytes

    @property
    def note(self) -> str:
        """`unloads in 4 min`, `unloading`, `stays loaded`, `reserved at start`; "" when the server does
        not say."""
        if self.stays_loaded:
            return "stays loaded"
        if self.unload_in_s is None:
            return "reserved at start" if self.reserved else ""
        return f"unloads in {fmt_duration(self.unload_in_s)}" if self.unload_in_s >= 1 else "unloading"


@dataclass(frozen=True)
class ServedSplit:
    """What the tables need from `split_models`: the model parts under each owner's row, and how much
    (CPU side, GPU side) the models took from each consumer (its row shows the rest, the server's own)."""

    parts: dict[str, list[ModelPart]]
    taken: dict[str, tuple[int, int]]


NO_SPLIT = ServedSplit({}, {})


def served_split(snapshot: Snapshot, split: Accounting | None) -> ServedSplit:
    """The parts and what they took, from `split = split_models(snapshot)` (computed once a tick, for the
    budget bar): a row and its parts add up to what the row showed before, as segments do in the bar."""
    original = snapshot.accounting
    if split is None or original is None or split is original:
        return NO_SPLIT  # nothing was split: no model server, or none whose owner holds memory
    models = {model_key(r, m): (r, m) for r in snapshot.services for m in r.models}
    parts: dict[str, list[ModelPart]] = {}
    for c in split.consumers:
        if c.parent is None or c.key not in models:
            continue
        report, model = models[c.key]
        left = None if model.expires_at is None else model.expires_at - snapshot.timestamp
        part = ModelPart(
            key=c.key,
            name=model.name,
            server=report.server or "server",
            owner=c.parent,
            cpu_bytes=c.cpu_bytes,
            gpu_bytes=c.gpu_bytes,
            unload_in_s=None if left is None or left > NEVER_S else max(0.0, left),
            stays_loaded=left is not None and left > NEVER_S,
            reserved=model.gpu_bytes is None and bool(model.reserved_bytes),  # as split_models took it
        )
        parts.setdefault(c.parent, []).append(part)
    before = {c.key: c for c in original.consumers}
    taken: dict[str, tuple[int, int]] = {}
    for c in split.consumers:
        was = before.get(c.key)
        if was is not None and (was.cpu_bytes != c.cpu_bytes or was.gpu_bytes != c.gpu_bytes):
            taken[c.key] = (was.cpu_bytes - c.cpu_bytes, was.gpu_bytes - c.gpu_bytes)
    return ServedSplit(parts, taken)


@dataclass(frozen=True)
class ModelRow:
    server: str  # "ollama 0.12.6"
    endpoint: str
    model: str
    cpu_bytes: int | None
    gpu_bytes: int | None
    reserved_bytes: int | None
    context: int | None
    kv_usage: float | None
    running: int | None
    waiting: int | None
    tokens_per_s: float | None
    unload_in_s: float | None  # None: not known or never


def model_rows(snapshot: Snapshot) -> tuple[list[ModelRow], list[str], list[str]]:
    """One row per served model; one line per server that could not be read (or that wants a word); and
    one line per server saying which of its metrics/fields gave the figures (names change by version)."""
    rows: list[ModelRow] = []
    problems: list[str] = []
    sources: list[str] = []
    for report in snapshot.services:
        if report.error:
            problems.append(report.error)
        name = " ".join(x for x in (report.server or report.collector, report.version) if x)
        if report.more_models:
            problems.append(
                f"{name} at {report.endpoint}: + {report.more_models:,} more models "
                f"(the first {len(report.models)} are listed)"
            )
        if report.fields:
            sources.append(f"{name} at {report.endpoint}: {', '.join(report.fields)}")
        for model in report.models:
            unload = None
            if model.expires_at is not None:
                left = model.expires_at - snapshot.timestamp
                unload = None if left > NEVER_S else max(0.0, left)
            rows.append(
                ModelRow(
                    server=name,
                    endpoint=report.endpoint,
                    model=model.name,
                    cpu_bytes=model.cpu_bytes,
                    gpu_bytes=model.gpu_bytes,
                    reserved_bytes=model.reserved_bytes,
                    context=model.context_length,
                    kv_usage=model.kv_cache_usage,
                    running=model.requests_running,
                    waiting=model.requests_waiting,
                    tokens_per_s=model.tokens_per_s,
                    unload_in_s=unload,
                )
            )
    return rows, problems, sources
