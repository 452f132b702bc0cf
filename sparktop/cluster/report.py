"""`sparktop --cluster ... --once`: the nodes as plain text for a person (or a script's log), or as JSON.

The same facts as the cards of the cluster view: each node's state and why, its pool against its lines,
pressure, GPU, top consumers and creep alerts; a node without numbers says so, never zeros.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, replace
from typing import Any

from sparktop.cluster.node import CreepLine, NodeView
from sparktop.core.format import fmt_bytes, fmt_duration, fmt_est, fmt_gb, fmt_rate, fmt_size

REPORT_VERSION = 1  # of the JSON below; a field's meaning never changes within a version


def creep_reaches(alert: CreepLine) -> str:
    """As the report and the cluster card say it: the nearest line a creep has still to reach (`safe in
    ~40m`, `aggressive in ~2h`), else the last one it is over (`over safe`); "" with no estimate."""
    when = ""
    for label, eta in (("safe", alert.eta_safe_s), ("aggressive", alert.eta_aggressive_s)):
        if eta is not None:
            when = f"over {label}" if eta <= 0 else f"{label} in ~{fmt_duration(eta)}"
            if eta > 0:
                break
    return when


def nodes_text(nodes: list[NodeView], description: str, left_out: int = 0, units: str = "GiB") -> str:
    counts: dict[str, int] = {}
    for node in nodes:
        counts[node.status] = counts.get(node.status, 0) + 1
    head = f"sparktop cluster · {description} · {len(nodes)} nodes"
    if left_out:
        head += f" shown of {len(nodes) + left_out} (those that need a look first)"
    head += "".join(f" · {count} {status}" for status, count in counts.items() if status != "up")
    lines = [head]
    for node in nodes:
        lines.append("")
        name = node.name if not node.host or node.host == node.name else f"{node.host} ({node.name})"
        lines.append(f"{name}  {node.status.upper()}")
        if node.reason:
            lines.append(f"  {node.reason}")
        if not node.has_numbers:
            lines.append("  no data: its numbers are unknown, not zero")
            continue
        assert node.total is not None and node.used is not None
        pool = f"  pool   {fmt_size(node.used, units)} of {fmt_size(node.total, units)} used"
        if node.available is not None:
            pool += f", {fmt_size(node.available, units)} available"
        lines.append(pool)
        for label, line in (("safe", node.safe_bytes), ("aggressive", node.max_bytes)):
            if line:
                left = line - node.used
                room = f"{fmt_est(left)} left" if left > 0 else "over it"  # in the line's unit
                lines.append(f"  {label} {fmt_gb(line)}: {room}")
        lines.append(f"  pressure {(node.pressure or '?').upper()}")
        for gpu in node.gpus:
            parts = [
                f"util {gpu.utilization_pct:.0f} %" if gpu.utilization_pct is not None else "",
                f"{gpu.temperature_c:.0f} °C" if gpu.temperature_c is not None else "",
                f"{gpu.power_w:.0f} W" if gpu.power_w is not None else "",
            ]
            lines.append(f"  gpu    {gpu.name}: {', '.join(p for p in parts if p) or 'no readings'}")
        for consumer in node.consumers:
            lines.append(f"  {consumer.label[:40]:40} {fmt_bytes(consumer.total, units):>11}")
        for alert in node.creep:
            when = creep_reaches(alert)
            rate = fmt_rate(alert.rate_bytes_per_s * 60, units)
            lines.append(f"  creep  {alert.label} {rate}{f' {when}' if when else ''}")
    return "\n".join(lines)


def nodes_json(nodes: list[NodeView], description: str, left_out: int = 0) -> str:
    """Sizes in bytes, ages and times in seconds; a number a node cannot give is null."""
    document: dict[str, Any] = {
        "version": REPORT_VERSION,
        "source": description,
        "nodes_left_out": left_out,
        "nodes": [_node(node) for node in nodes],
    }
    return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False)


def _node(node: NodeView) -> dict[str, Any]:
    # The whole snapshot is the node's own /snapshot.json; this is what its card shows.
    fields: dict[str, Any] = _finite(asdict(replace(node, snapshot=None)))
    del fields["snapshot"]
    return fields


def _finite(value: Any) -> Any:
    """JSON has no NaN or infinity: such a number (an ETA that never comes) is null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value
