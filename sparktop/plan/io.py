"""Plan files: TOML, one [[workload]] table per item, the same file the What-if tab saves.

    baseline = "clean"         # optional: live (what runs now), clean (this machine empty) or spark

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

import contextlib
import json
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from sparktop.core.private_files import make_dirs
from sparktop.plan.catalog.lookup import Catalog
from sparktop.plan.catalog.params import PARAMS
from sparktop.plan.items import Plan, PlanError
from sparktop.settings.files import SettingsError, read_text
from sparktop.settings.plan import read_plan_file

HEADER = "# sparktop what-if plan: `sparktop plan --file THIS.toml` evaluates it; sizes in GB (1e9 bytes)\n"


def loads_plan(text: str, catalog: Catalog, source: str = "<plan>") -> Plan:
    """A plan from TOML text. PlanError (`FILE:LINE: key: message`) when anything is wrong: the first
    problem, with every problem in the file in its `problems`, in line order (a user fixes them all at once,
    not one run each)."""
    try:
        shape, lines = read_plan_file(text, source)
    except SettingsError as exc:
        raise PlanError(exc.message, field=exc.key, line=exc.line, source=source) from None
    tables = [(lines.line(("workload", i)), table) for i, table in enumerate(shape.workload)]
    plan = Plan(catalog)
    plan.baseline = shape.baseline
    problems: list[PlanError] = []
    for i, (start, raw) in enumerate(tables):
        params = dict(raw)
        name = params.pop("name", None)
        if name is not None and not isinstance(name, str):
            problems.append(PlanError(
                f"expected a string, not {name!r}", field="name", line=lines.line(("workload", i, "name")),
                source=source,
            ))  # fmt: skip
            continue
        try:
            plan.add(name, **params).line = start
        except PlanError as exc:
            # A problem with no key is the workload's own (an unknown name): its `name` line, if it has one.
            key = exc.field or ("name" if name is not None else None)
            line = (lines.line(("workload", i, key)) if key else None) or start
            problems.append(exc.located(source, line))
    if problems:
        first = problems[0]
        first.problems = problems
        raise first
    return plan


def load_plan(path: str | Path, catalog: Catalog) -> Plan:
    """A plan file; PlanError for anything wrong with it: unreadable, not UTF-8 (with the line), not TOML."""
    path = Path(path)
    try:
        text = read_text(path)
    except SettingsError as exc:
        raise PlanError(exc.message, line=exc.line, source=str(path)) from None
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
    if plan.baseline is not None:  # judged against the same baseline when read again (`plan --file`)
        out.append(f"baseline = {_toml_value(plan.baseline)}\n")
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
    make_dirs(path.parent)
    # A fresh name, made with O_EXCL and 0600 (a fixed `x.toml.tmp` could be a planted symlink), then renamed
    # over the target: a symlink at `path` is replaced, never written through.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(dumps_plan(plan))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


__all__ = ["dumps_plan", "load_plan", "loads_plan", "save_plan"]
