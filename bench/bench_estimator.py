"""The planner's training estimates against measured runs: every row of
tests/data/measured-h100-training.jsonl (17 runs of the Qwen3-0.6B architecture on one NVIDIA H100 80 GB,
driver 580.159.04), of tests/data/measured-h100-training-qwen3-1.7b.jsonl (10 runs on the same kind of H100,
9 of them Qwen3-1.7B) and of tests/data/measured-h200-training.jsonl (9 runs on an NVIDIA H200 of
Llama-3.2-1B, Qwen3-4B and Qwen2.5-1.5B; tests/data/README.md for all three), estimated through `sparktop
plan` as a user would write the run, and compared with the measured total (NVML per-process GPU memory +
the process's peak RSS).

    python bench/bench_estimator.py             # a text table
    python bench/bench_estimator.py --markdown  # the README's table

Exit status 1 when a row breaks the planner's promise (mid within 10 %, measured inside low..high).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sparktop.plan import Plan, evaluate  # noqa: E402
from sparktop.plan.catalog import load_catalog  # noqa: E402
from sparktop.plan.estimate import GB  # noqa: E402

DATA = [REPO / "tests" / "data" / name for name in (
    "measured-h100-training.jsonl", "measured-h100-training-qwen3-1.7b.jsonl", "measured-h200-training.jsonl"
)]  # fmt: skip
# The H100 tables predate the `gpu` field; every run was on one NVIDIA H100 80 GB, driver 580.159.04.
H100 = "NVIDIA H100 80GB HBM3"


def gpu(row: dict[str, Any]) -> str:
    return str(row.get("gpu", H100))


def describe(row: dict[str, Any]) -> str:
    method = {"sft": "SFT", "lora": "LoRA r16", "dpo": "DPO"}[row["method"]]
    what = [method, row["precision"]]
    if row["gc"]:
        what.append("+ checkpointing")
    if row["attn"] == "eager":
        what.append("eager attention")
    unit = " pairs" if row["method"] == "dpo" else ""
    return f"{row.get('arch', 'qwen3-0.6b')} {' '.join(what)} {row['batch']}{unit} × {row['seq']}"


def estimate(row: dict[str, Any], catalog: Any) -> tuple[float, float, float]:
    plan = Plan(catalog)
    plan.add(
        kind="training",
        model=row.get("arch", "qwen3-0.6b"),
        method=row["method"],
        batch=row["batch"],
        seq_len=row["seq"],
        precision=row["precision"],
        optimizer=row["optim"],
        gradient_checkpointing=row["gc"],
        efficient_attention=row["attn"] != "eager",
    )
    total = evaluate(plan).items[0].total
    return total.low / GB, total.mid / GB, total.high / GB


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    catalog = load_catalog(False, discover=False)  # the built-in presets only: a user override would skew it
    rows = [json.loads(line) for path in DATA for line in path.read_text().splitlines() if line.strip()]
    results = []
    for row in rows:
        measured = row["nvml_proc_gb"] + row["maxrss_gb"]
        low, mid, high = estimate(row, catalog)
        error = mid / measured - 1
        inside = low <= measured <= high
        results.append((describe(row), gpu(row), measured, low, mid, high, error, inside))
    bad = [r for r in results if abs(r[6]) > 0.10 or not r[7]]
    if args.markdown:
        print("| run | GPU | measured GB | estimate low / mid / high | error of mid | inside the range |")
        print("|---|---|---|---|---|---|")
        for name, card, measured, low, mid, high, error, inside in results:
            figures = f"{measured:.1f} | {low:.1f} / {mid:.1f} / {high:.1f} | {error:+.1%}"
            print(f"| {name} | {card.removeprefix('NVIDIA ')} | {figures} | {'yes' if inside else 'NO'} |")
    else:
        cards = ", ".join(sorted({card for _, card, *_ in results}))
        print(
            f"Measured on {cards} (driver 580.159.04); GB = 1e9 bytes; measured = NVML per-process + peak RSS"
        )
        print(f"{'run':<54}{'GPU':>22}{'measured':>9}{'low':>8}{'mid':>8}{'high':>8}{'error':>9}  inside")
        for name, card, measured, low, mid, high, error, inside in results:
            print(
                f"{name:<54}{card:>22}{measured:>9.1f}{low:>8.1f}{mid:>8.1f}{high:>8.1f}{error:>+9.1%}  "
                f"{'yes' if inside else 'NO'}"
            )
    worst = max(results, key=lambda r: abs(r[6]))
    print(
        f"\n{len(results)} runs; worst error of mid {worst[6]:+.1%} ({worst[0]}); "
        f"{len(results) - len(bad)} of {len(results)} within 10 % and inside low..high",
        file=sys.stderr,
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
