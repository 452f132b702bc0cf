"""Plan files: TOML, one [[workload]] table per item, the same file the What-if tab saves.

    [[workload]]
    name = "llama3.1:70b"      # a catalog entry; keys below override its parameters
    context = 32768

    [[workload]]
    kind = "training"
    model = "Qwen/Qwen3-0.6B"  # a preset or a local HF snapshot
    method = "sft"
    batch = 8

Writing needs no TOML library: the structure is flat (strings, numbers, booleans, short number lists).
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from pathlib import Path
from typing import Any

from sparktop.catalog.loader import Catalog, header_lines, key_line, toml_error
from sparktop.catalog.params import PARAMS
from sparktop.plan.model import Plan, PlanError

HEADER = "# sparktop what-if plan: `sparktop plan --file THIS.toml` evaluates it; sizes in GB (1e9 bytes)\n"


def loads_plan(text: str, catalog: Catalog, source: str = "<plan>") -> Plan:
    """A plan from TOML text; PlanError ("FILE:LINE: field 'x': message") on the first problem."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line, message = toml_error(exc, text)
        raise PlanError(f"invalid TOML: {message}", line=line, source=source) from None
    for key in data:
        if key != "workload":
            raise PlanError("unknown table (a plan holds [[workload]] tables)", field=key, source=source)
    items = data.get("workload", [])
    if not isinstance(items, list):
        raise PlanError("expected [[workload]] tables", field="workload", source=source)
    headers = header_lines(text, "workload")
    plan = Plan(catalog)
    for i, raw in enumerate(items):
        start = headers[i] if i < len(headers) else None
        params = dict(raw)
        name = params.pop("name", None)
        if name is not None and not isinstance(name, str):
            raise PlanError(
                "expected a string", field="name", line=key_line(text, start, "name"), source=source
            )
        try:
            plan.add(name, **params).line = start
        except PlanError as exc:
            line = key_line(text, start, exc.field) if exc.field else start
            raise exc.located(source, line) from None
    return plan


def load_plan(path: str | Path, catalog: Catalog) -> Plan:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PlanError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None
    return loads_plan(text, catalog, str(path))


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("TOML plan values must be finite")
        return repr(round(value, 6))
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string: JSON's escapes are TOML's
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to a plan file")


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def _memory_value(t: tuple[float, float, float]) -> Any:
    lo, mid, hi = t
    if lo == mid == hi:
        return lo
    if math.isclose(mid, (lo + hi) / 2):
        return [lo, hi]
    return [lo, mid, hi]


def dumps_plan(plan: Plan) -> str:
    order = [p.key for p in PARAMS]
    out = [HEADER]
    for item in plan.items:
        out.append("\n[[workload]]\n")
        if item.entry:
            out.append(f"name = {_toml_value(item.entry)}\n")
        for key in sorted(item.overrides, key=lambda k: order.index(k) if k in order else len(order)):
            value = item.overrides[key]
            if key == "memory_gb":
                value = _memory_value(value)
            out.append(f"{_toml_key(key)} = {_toml_value(value)}\n")
    return "".join(out)


def save_plan(plan: Plan, path: str | Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(dumps_plan(plan), encoding="utf-8")
    tmp.replace(path)


__all__ = ["dumps_plan", "load_plan", "loads_plan", "save_plan"]
