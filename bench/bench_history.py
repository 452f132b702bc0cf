"""What the consumer history costs under process churn: its size (`History.nbytes`) and the CPU time of one
`History.add` per tick, after 15 minutes and after an hour of ticks at 1 Hz.

Each tick: `--steady` (5) consumers present throughout, plus `--churn` (20) new process keys that live 1 to 3
ticks each (the key count reaches `max_keys`, 256, within seconds). The snapshots are built before the clock
starts, so only `add` is timed (`time.process_time`, the ticks of each segment summed). Only History's public
API is used, so the same script measures any revision: from outside the repository,
`git archive main | tar -x -C /tmp/before; cd /tmp && PYTHONPATH=/tmp/before python .../bench_history.py`.

    python bench/bench_history.py                  # 3,600 ticks, figures at 900 and 3,600
"""

from __future__ import annotations

import argparse
import random
import time

from sparktop.analysis.history import History
from sparktop.core.snapshot import GIB, Accounting, Consumer, GpuReport, HostMemory, Snapshot


def churn(ticks: int, steady: int, new_per_tick: int, seed: int) -> list[Snapshot]:
    """One snapshot per second: the steady consumers and the short-lived process keys alive at each tick."""
    rng = random.Random(seed)
    alive: list[tuple[int, str]] = []  # (last tick, key)
    snapshots = []
    for tick in range(ticks):
        alive = [(last, key) for last, key in alive if last >= tick]
        alive += [(tick + rng.randint(0, 2), f"process:{tick}:{j}") for j in range(new_per_tick)]
        consumers = [
            Consumer(key=f"container:{i}", label=f"c{i}", kind="container", cpu_bytes=(i + 1) * GIB)
            for i in range(steady)
        ]
        consumers += [Consumer(key=key, label="p", kind="process", cpu_bytes=GIB // 4) for _, key in alive]
        used = sum(c.total for c in consumers)
        snapshots.append(
            Snapshot(
                timestamp=float(tick),
                memory=HostMemory(total=128 * GIB, available=128 * GIB - used, free=128 * GIB - used),
                gpu=GpuReport(available=False, reason="bench"),
                accounting=Accounting(used=used, consumers=consumers),
            )
        )
    return snapshots


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=3600)
    parser.add_argument("--steady", type=int, default=5)
    parser.add_argument("--churn", type=int, default=20, help="new short-lived keys per tick")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    marks = sorted({min(900, args.ticks), args.ticks})
    snapshots = churn(args.ticks, args.steady, args.churn, args.seed)
    history = History()
    print(f"{'ticks':>6} {'keys':>5} {'points':>6} {'nbytes':>10} {'add() µs/tick (since the last row)':>36}")
    done = 0
    for mark in marks:
        start = time.process_time()
        for snap in snapshots[done:mark]:
            history.add(snap)
        per_tick_us = (time.process_time() - start) / (mark - done) * 1e6
        done = mark
        keys, points = len(history.known_keys()), len(history)
        print(f"{mark:>6} {keys:>5} {points:>6} {history.nbytes():>10,} {per_tick_us:>36.1f}")


if __name__ == "__main__":
    main()
