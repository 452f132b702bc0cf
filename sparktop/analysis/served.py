"""Model servers as named consumers: split a server's consumer into one slice per loaded model, and the rows
of the Models panel. Pure functions over a snapshot."""

from __future__ import annotations

from dataclasses import dataclass

from sparktop.model import Accounting, Consumer, ServedModel, ServiceReport, Snapshot


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


NEVER_S = 10 * 365 * 86400.0  # keep_alive -1 shows as a date centuries away


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
