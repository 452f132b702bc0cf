"""Nodes read from a Prometheus server that scrapes `sparktop serve` (`sparktop --cluster --prometheus URL`).

Standard PromQL over the HTTP API (`/api/v1/query`), so a user's existing Prometheus works unchanged:
- the nodes are the `instance`s that served `sparktop_build_info` in the last hour (one that stops answering
  is still listed, and shown down instead of vanishing);
- `up` says whether Prometheus can scrape each of them now (the target's last error, from
  `/api/v1/targets`, says why not);
- one selector fetches every current sparktop series; a killed exporter's series go stale in Prometheus and
  drop out of it, so a down node has no numbers rather than old ones or zeros.

An exporter from before the series were renamed (a `host` label on every series, GPU names on each GPU series,
`sparktop_gpu_multiprocessors`, `sparktop_creep_seconds_to_line`) is read too, so nodes can be upgraded one
by one.
"""

from __future__ import annotations

import math
import re
import urllib.parse
from collections import defaultdict
from typing import Any, TypeGuard

from sparktop.cluster.fetch import FetchError, base_url, fetch
from sparktop.cluster.node import MAX_NODES, ClusterError, ConsumerLine, CreepLine, GpuLine, NodeView
from sparktop.core.snapshot import (
    SNAPSHOT_VERSION,
    Accounting,
    Consumer,
    ConsumerKind,
    DockerStatus,
    GpuReport,
    GpuState,
    HostMemory,
    Snapshot,
)
from sparktop.exporter.state import stale_after_s

KNOWN_WINDOW = "1h"
CURRENT = (
    '{__name__=~"sparktop_(host|pool|line|headroom|consumer|unattributed|pressure|gpu|creep|snapshot|sample)'
    '_.*"}'
)
# the name, then the one before it
CREEP_ETA = ("sparktop_creep_line_eta_seconds", "sparktop_creep_seconds_to_line")
TOP_CONSUMERS = 5
LEVELS = {0: "ok", 1: "warn", 2: "critical"}

Series = list[tuple[dict[str, str], float]]


class PrometheusCluster:
    def __init__(self, url: str, timeout: float = 3.0) -> None:
        self.url = base_url(url)
        self.timeout = timeout
        self.description = f"Prometheus {self.url}"
        self.left_out = 0  # instances known but not shown (beyond MAX_NODES), at the last fetch

    def query(self, promql: str) -> Series:
        """An instant query's vector as (labels, value) pairs; ClusterError with one line otherwise."""
        url = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
        try:
            reply = fetch(url, self.timeout)
        except FetchError as exc:
            raise ClusterError(f"cannot reach Prometheus at {self.url}: {exc}") from exc
        try:
            data = reply.json()
        except FetchError as exc:
            raise ClusterError(f"{self.url} is not a Prometheus API (HTTP {reply.status}, {exc})") from exc
        if not isinstance(data, dict) or data.get("status") != "success":
            error = data.get("error") if isinstance(data, dict) else None
            raise ClusterError(f"Prometheus at {self.url}: {error or f'HTTP {reply.status}'}")
        result = data.get("data", {}).get("result", [])
        out: Series = []
        for item in result:
            try:
                out.append((dict(item["metric"]), float(item["value"][1])))
            except (KeyError, IndexError, TypeError, ValueError):
                continue
        return out

    def _target_errors(self) -> dict[tuple[str, str], str]:
        """(instance, job) → the last scrape error Prometheus saw; empty when the API does not say."""
        try:
            data = fetch(f"{self.url}/api/v1/targets?state=active", self.timeout).json()
            targets = data["data"]["activeTargets"]
        except (FetchError, KeyError, TypeError):
            return {}
        return {
            (t["labels"]["instance"], t["labels"].get("job", "")): t.get("lastError") or ""
            for t in targets
            if isinstance(t, dict) and "instance" in t.get("labels", {})
        }

    def fetch(self) -> list[NodeView]:
        """At most MAX_NODES views, those that need a look first (down, older schema, under pressure), then
        by name; `left_out` counts the rest. Only their series are fetched, so the work of a refresh is
        bounded whatever the number of instances Prometheus knows."""
        known = self.query(f"max_over_time(sparktop_build_info[{KNOWN_WINDOW}])")
        if not known:
            raise ClusterError(
                f"Prometheus at {self.url} has no sparktop metrics (no sparktop_build_info in the last "
                f"{KNOWN_WINDOW}): is it scraping `sparktop serve`?"
            )
        schema: dict[str, str] = {}
        jobs: dict[str, set[str]] = defaultdict(set)
        for labels, _ in known:
            instance = labels.get("instance", "?")
            # The newest schema an instance served wins (an upgrade within the hour).
            schema[instance] = max(schema.get(instance, ""), labels.get("schema", ""))
            jobs[instance].add(labels.get("job", ""))
        # `up` of the sparktop job only: another exporter on the same host may share the `instance` label
        # (relabelled to the hostname), and its `up` says nothing about sparktop's. NaN: not up.
        up_of = {(lab.get("instance", "?"), lab.get("job", "")): v >= 1 for lab, v in self.query("up")}
        up = {i: any(up_of.get((i, job), False) for job in jobs[i]) for i in schema}
        levels = self.query("sparktop_pressure_level")
        level = {labels.get("instance", "?"): value for labels, value in levels}

        def first_look(instance: str) -> tuple[bool, float, str]:
            fine = schema[instance] == str(SNAPSHOT_VERSION) and up.get(instance, False)
            pressure = level.get(instance, 0.0)
            return (fine, -pressure if math.isfinite(pressure) else 0.0, instance)

        shown = sorted(sorted(schema, key=first_look)[:MAX_NODES])
        self.left_out = len(schema) - len(shown)
        readable = [i for i in shown if schema[i] == str(SNAPSHOT_VERSION) and up.get(i, False)]
        by_instance: dict[str, dict[str, Series]] = defaultdict(lambda: defaultdict(list))
        bad: dict[str, dict[str, float]] = defaultdict(dict)
        for labels, value in self.query(_of_instances(CURRENT, readable)) if readable else []:
            name = labels.pop("__name__", "")
            instance = labels.get("instance", "?")
            if math.isfinite(value):
                by_instance[instance][name].append((labels, value))
            else:  # +Inf or NaN: that value is unknown; the rest of the node, and every other node, stand
                bad[instance].setdefault(name, value)
        errors: dict[tuple[str, str], str] | None = None
        views: list[NodeView] = []
        for instance in shown:
            if schema[instance] != str(SNAPSHOT_VERSION):
                views.append(
                    NodeView(
                        instance,
                        "incompatible",
                        f"{instance} speaks snapshot schema {schema[instance]!r}; this sparktop "
                        f"reads {SNAPSHOT_VERSION}",
                    )
                )
                continue
            if not up.get(instance, False):
                if errors is None:
                    errors = self._target_errors()
                said = (errors.get((instance, job)) for job in sorted(jobs[instance]))
                why = next((e for e in said if e), None) or "Prometheus cannot scrape it (up == 0)"
                views.append(NodeView(instance, "down", f"{instance}: {why}"))
                continue
            views.append(_node_view(instance, by_instance.get(instance, {}), bad.get(instance, {})))
        return views


def _of_instances(selector: str, instances: list[str]) -> str:
    """`selector` (`{...}`) narrowed to these instances: an RE2 alternation, quoted for a PromQL string."""
    alternation = "|".join(re.escape(i) for i in instances)
    quoted = alternation.replace("\\", "\\\\").replace('"', '\\"')
    return selector[:-1] + f', instance=~"{quoted}"}}'


def _value(series: dict[str, Series], name: str, **labels: str) -> float | None:
    for got, value in series.get(name, []):
        if all(got.get(k) == v for k, v in labels.items()):
            return value
    return None


def _int(value: float | None) -> int | None:
    """A size in bytes: None unless finite, ≥ 0 and within 64 bits (a negative or absurd one is unknown)."""
    return int(value) if value is not None and math.isfinite(value) and 0 <= value < 2**63 else None


def _spelled(value: float) -> str:
    return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")


def _node_view(instance: str, series: dict[str, Series], bad: dict[str, float] | None = None) -> NodeView:
    total = _int(_value(series, "sparktop_pool_total_bytes"))
    used = _int(_value(series, "sparktop_pool_used_bytes"))
    if total is None or used is None:
        wrong = [f"{n} is {_spelled(v)}" for n, v in (bad or {}).items() if n.startswith("sparktop_pool_")]
        if wrong:
            return NodeView(instance, "incompatible", f"{instance}: {', '.join(wrong)}, not a size")
        return NodeView(instance, "stale", f"{instance}: up, but no snapshot yet")
    available = _int(_value(series, "sparktop_pool_available_bytes"))
    level = _value(series, "sparktop_pressure_level")
    host = next((labels.get("hostname") for labels, _ in series.get("sparktop_host_info", [])), None)
    if host is None:  # an exporter from before sparktop_host_info: a `host` label on every series
        host = next((labels.get("host") for labels, _ in series.get("sparktop_pool_total_bytes", [])), None)
    cpu: dict[tuple[str, str], float] = {}
    gpu_side: dict[tuple[str, str], float] = {}
    for labels, value in series.get("sparktop_consumer_cpu_bytes", []):
        cpu[(labels.get("consumer", "?"), labels.get("kind", "?"))] = value
    for labels, value in series.get("sparktop_consumer_gpu_bytes", []):
        gpu_side[(labels.get("consumer", "?"), labels.get("kind", "?"))] = value
    consumers = [
        ConsumerLine(label, kind, _int(cpu.get((label, kind))) or 0, _int(gpu_side.get((label, kind))) or 0)
        for label, kind in set(cpu) | set(gpu_side)
    ]
    consumers.sort(key=lambda c: c.total, reverse=True)
    gpus = _gpus(series)
    eta_name = next((name for name in CREEP_ETA if name in series), CREEP_ETA[0])
    creep = [
        CreepLine(
            labels.get("consumer", "?"),
            rate,
            _value(series, eta_name, consumer=labels.get("consumer", "?"), line="safe"),
            _value(series, eta_name, consumer=labels.get("consumer", "?"), line="aggressive"),
        )
        for labels, rate in series.get("sparktop_creep_rate_bytes_per_second", [])
    ]
    creep.sort(key=lambda c: c.rate_bytes_per_s, reverse=True)
    unattributed = _int(_value(series, "sparktop_unattributed_bytes"))
    view = NodeView(
        name=instance,
        status="up",
        host=host,
        total=total,
        used=used,
        available=available,
        safe_bytes=_int(_value(series, "sparktop_line_bytes", line="safe")),
        max_bytes=_int(_value(series, "sparktop_line_bytes", line="aggressive")),
        pressure=LEVELS.get(int(level)) if level is not None else None,
        unattributed=unattributed,
        consumers=consumers[:TOP_CONSUMERS],
        gpus=[g for g, _ in gpus],
        creep=creep,
        age_s=_value(series, "sparktop_snapshot_age_seconds"),
    )
    view.snapshot = _snapshot(view, series, consumers, gpus)
    interval = _value(series, "sparktop_sample_interval_seconds")
    if view.age_s is not None and view.age_s > stale_after_s(interval):
        view.status = "stale"
        view.reason = f"{instance}: its latest sample is {view.age_s:.0f} s old"
    return view


def _gpus(series: dict[str, Series]) -> list[tuple[GpuLine, dict[str, Any]]]:
    found: dict[str, dict[str, Any]] = {}
    for labels, _ in series.get("sparktop_gpu_info", []):
        entry = found.setdefault(labels.get("gpu", "0"), {})
        entry["name"] = labels.get("name") or "GPU"
        if labels.get("sm_count", "").isdigit():
            entry["sms"] = float(labels["sm_count"])
    for name, key, scale in (
        ("sparktop_gpu_utilization_ratio", "util", 100.0),
        ("sparktop_gpu_temperature_celsius", "temp", 1.0),
        ("sparktop_gpu_power_watts", "power", 1.0),
        ("sparktop_gpu_sm_clock_hertz", "clock", 1e-6),
        ("sparktop_gpu_multiprocessors", "sms", 1.0),  # an exporter from before sparktop_gpu_info
    ):
        for labels, value in series.get(name, []):
            entry = found.setdefault(labels.get("gpu", "0"), {})
            entry.setdefault("name", labels.get("name", "GPU"))  # older exporters label each series
            entry[key] = value * scale
    return [
        (GpuLine(e.get("name", "GPU"), e.get("util"), e.get("temp"), e.get("power"), e.get("clock")), e)
        for _, e in sorted(found.items())
    ]


_PART_KINDS: tuple[ConsumerKind, ...] = ("container", "process", "host-other", "gpu-unexplained")


def _is_part_kind(kind: str) -> TypeGuard[ConsumerKind]:
    """A kind the node's bar draws as a part (the rest is `unattributed`); the labels come off the wire."""
    return kind in _PART_KINDS


def _snapshot(
    view: NodeView, series: dict[str, Series], consumers: list[ConsumerLine], gpus: list[tuple[GpuLine, dict]]
) -> Snapshot:
    """The node's pool and consumers as a Snapshot, for the detail view's bar and the What-if baseline."""
    assert view.total is not None and view.used is not None
    available = view.available if view.available is not None else view.total - view.used
    parts = [
        Consumer(
            key=f"{c.kind}:{c.label}",
            label=c.label,
            kind=c.kind,
            cpu_bytes=c.cpu_bytes,
            gpu_bytes=c.gpu_bytes,
        )
        for c in consumers
        if _is_part_kind(c.kind)
    ]
    unattributed = (
        view.unattributed if view.unattributed is not None else view.used - sum(c.total for c in parts)
    )
    stamp = _value(series, "sparktop_snapshot_timestamp_seconds") or 0.0
    return Snapshot(
        timestamp=stamp,
        source="live",
        hostname=view.host or view.name,
        memory=HostMemory(total=view.total, available=available, free=available),
        gpu=GpuReport(
            available=bool(gpus),
            gpus=[
                GpuState(
                    index=i,
                    name=line.name,
                    utilization_pct=line.utilization_pct,
                    temperature_c=line.temperature_c,
                    power_w=line.power_w,
                    sm_count=_int(extra.get("sms")),
                    unified_memory=True,
                )
                for i, (line, extra) in enumerate(gpus)
            ],
        ),
        docker=DockerStatus(available=False, reason="read from Prometheus"),
        accounting=Accounting(used=view.used, consumers=parts, unattributed=unattributed),
    )
