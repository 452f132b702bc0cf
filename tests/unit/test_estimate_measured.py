"""The training estimate against 17 runs measured on real hardware (tests/data/README.md says where they come
from). Each run goes through the planner as a user would write it (the Qwen3-0.6B preset, the run's method,
batch, sequence, precision, checkpointing and attention), and the item's estimate must hold the measured total
(NVML per-process GPU memory + the process's peak RSS) honestly: mid within 10 %, the truth inside low..high,
and a range no wider than it needs to be."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sparktop.analysis.estimate import GB
from sparktop.catalog import load_catalog
from sparktop.plan import Plan, evaluate

DATA = Path(__file__).resolve().parents[1] / "data" / "measured-h100-training.jsonl"
ROWS = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]


def row_id(row: dict[str, Any]) -> str:
    extras = [row["precision"], row["attn"]] + (["gc"] if row["gc"] else [])
    return f"{row['method']}-{row['batch']}x{row['seq']}-{'-'.join(extras)}"


def plan_params(row: dict[str, Any]) -> dict[str, Any]:
    """The run as plan parameters."""
    return {
        "kind": "training",
        "model": "qwen3-0.6b",
        "method": row["method"],
        "batch": row["batch"],
        "seq_len": row["seq"],
        "precision": row["precision"],
        "optimizer": row["optim"],
        "gradient_checkpointing": row["gc"],
        "efficient_attention": row["attn"] != "eager",
    }


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(discover=False)


def test_the_table_is_the_reference_one():
    assert len(ROWS) == 17
    assert {r["method"] for r in ROWS} == {"sft", "lora", "dpo"}


@pytest.mark.parametrize("row", ROWS, ids=[row_id(r) for r in ROWS])
def test_estimate_holds_the_measured_total(row: dict[str, Any], catalog) -> None:
    plan = Plan(catalog)
    plan.add(**plan_params(row))
    total = evaluate(plan).items[0].total
    measured = (row["nvml_proc_gb"] + row["maxrss_gb"]) * GB
    low, mid, high = total.low, total.mid, total.high
    detail = f"measured {measured / GB:.1f} GB, estimate {low / GB:.1f} / {mid / GB:.1f} / {high / GB:.1f}"
    assert abs(mid / measured - 1) <= 0.10, f"mid off by more than 10 %: {detail}"
    assert low <= measured <= high, f"measured outside low..high: {detail}"
    assert low >= 0.7 * mid, f"range too wide below: {detail}"
    assert high <= 1.35 * mid, f"range too wide above: {detail}"
