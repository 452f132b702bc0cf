"""What one plan evaluation costs with what this machine knows: a 20-item plan on the demo's live baseline
(two Ollama models and a vLLM model running, three containers), beside a footprint store holding measured
peaks (plausible, below the estimate with the weights resident, implausible, seen long, seen briefly) and
measured slowdowns, as the What-if tab and `sparktop plan` evaluate it.

    python bench/bench_plan_walk.py               # 200 evaluations
    python bench/bench_plan_walk.py --repeat 1000

It prints, for one evaluation, how many times the walk calls an estimator of plan/estimate.py
(estimate_inference, estimate_training, estimate_fixed), reads the store (footprints, slowdowns), builds the
snapshot's accounting and works out a workload's names; then the median and best time of one evaluation.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sparktop.analysis import accounting  # noqa: E402
from sparktop.core.snapshot import GB  # noqa: E402
from sparktop.footprints.store import Footprint, MeasuredSlowdown  # noqa: E402
from sparktop.plan import (  # noqa: E402
    Baseline,
    Plan,
    estimate,
    evaluate,
)
from sparktop.plan import measured as plan_measured  # noqa: E402
from sparktop.plan.catalog import load_catalog  # noqa: E402
from sparktop.plan.measured import LiveFacts  # noqa: E402
from sparktop.sources.demo import DemoSource  # noqa: E402

AT = time.mktime((2026, 11, 20, 15, 0, 0, 0, 0, -1))
ITEMS = (
    ("llama3.1:70b", {}),
    ("llama3.1:70b", {"context": 32768}),
    ("llama3.1:70b-instruct-fp16", {}),
    ("qwen3:32b", {}),
    ("gemma3:12b", {}),
    ("qwen3-8b", {"engine": "vllm"}),
    ("faster-whisper-large-v3", {}),
    ("f5-tts", {}),
    ("xtts-v2", {}),
    ("ssd-tetris", {}),
    ("mistral:7b", {}),
    ("qwen3:8b", {"context": 8192}),
    ("gemma3:27b", {}),
    ("gpt-oss:20b", {}),
    ("qwen2.5-coder:7b", {"parallel": 2}),
    ("chatterbox-tts", {}),
    ("ssd-tetris-small-batch", {}),
    ("mixtral:8x7b", {}),
    ("qwen3:0.6b", {}),
    ("devstral:24b", {}),
)


def footprint(kind: str, name: str, gb: float, owner: str | None = None, seen_s: float = 0.0) -> Footprint:
    return Footprint(kind, name, int(gb * GB), AT, AT, owner, AT - seen_s if owner else None)


PEAKS = [
    footprint("model", "ollama:llama3.1:70b", 46.8, "ollama (pid 812)"),
    footprint("model", "ollama:llama3.1:70b-instruct-fp16", 1.0),
    footprint("model", "ollama:qwen3:32b", 30.0, "ollama (pid 812)"),
    footprint("model", "ollama:gemma3:12b", 2.0, "ollama"),
    footprint("model", "vllm:Qwen/Qwen3-8B", 60.0, "vllm"),
    footprint("container", "faster-whisper-large-v3", 1.0, "container whisper", seen_s=3600),
    footprint("container", "f5-tts", 0.5, "container f5", seen_s=30),
    footprint("container", "xtts-v2", 9.0, "container xtts", seen_s=30),
    footprint("model", "ollama:mistral:7b", 4.0),
]
SLOWDOWNS = [
    MeasuredSlowdown("vllm:Qwen/Qwen3-8B", "training", 1000.0, 1.5, "ssd-tetris-train-1", 9.0, 5.6, AT),
    MeasuredSlowdown("vllm:Qwen/Qwen3-8B", "training", 5000.0, 1.7, "ssd-tetris-train-1", 9.0, 5.6, AT),
    MeasuredSlowdown("ollama:qwen3:32b", "decoder", 100.0, 1.3, "gemma3:12b", 9.0, 5.6, AT),
]

COUNTED = {
    estimate.estimate_inference.__code__: "estimator calls (analysis/estimate)",
    estimate.estimate_training.__code__: "estimator calls (analysis/estimate)",
    estimate.estimate_fixed.__code__: "estimator calls (analysis/estimate)",
    accounting.fill_accounting.__code__: "accounting passes over the snapshot",
    plan_measured._names.__code__: "name look-ups of a workload",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=200, help="evaluations timed (default 200)")
    args = parser.parse_args()

    catalog = load_catalog(user_file=False, discover=False)
    plan = Plan(catalog)
    for name, params in ITEMS:
        plan.add(name, **params)
    source = DemoSource("servers")
    for _ in range(5):  # the servers' models are reported after a few ticks
        snap = source.sample()
    baseline = Baseline.from_snapshot(snap)
    reads = Counter[str]()

    def peaks() -> list[Footprint]:
        reads["footprint store reads"] += 1
        return list(PEAKS)

    def slowdowns() -> list[MeasuredSlowdown]:
        reads["slowdown store reads"] += 1
        return list(SLOWDOWNS)

    def facts() -> LiveFacts:
        return LiveFacts(footprints=peaks, snapshot=snap, slowdowns=slowdowns)

    calls = Counter[str]()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in COUNTED:
            calls[COUNTED[frame.f_code]] += 1

    sys.setprofile(profile)
    try:
        ev = evaluate(plan, baseline, facts=facts())
    finally:
        sys.setprofile(None)
    print(f"one evaluation of {len(ev.items)} items (verdict {ev.verdict}, compute {ev.compute.verdict}):")
    for what, count in sorted((calls + reads).items()):
        print(f"  {what:<40}{count:>6}")

    times = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        evaluate(plan, baseline, facts=facts())
        times.append(time.perf_counter() - start)
    print(
        f"time of one evaluation over {args.repeat}: median {statistics.median(times) * 1e3:.2f} ms, "
        f"best {min(times) * 1e3:.2f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
