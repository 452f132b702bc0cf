"""What the dashboard's history chart costs: CPU per draw, and the import time and RSS of its module.

1. draws: the dashboard headless at `--size` (120x36) on the demo after `--warmup` samples (600: a ten-minute
   axis), the chart drawn `--draws` times, alternating between the history at that tick and at the next (each
   draw moves the picture as a tick does), every row made as the compositor would ask for it. CPU ms per draw
   (`time.process_time`), median of `--runs` rounds.
2. imports: `sparktop.ui.widgets.history_chart` (alone, and after what it shares with the rest of the UI:
   what the chart's own drawing adds) and `sparktop.commands.dashboard`, each imported by a fresh interpreter
   (`--runs` times, interleaved): wall seconds of the import and VmRSS grown by it, median.

Only the chart's public API is used (`redraw`, `render_line`), so the same script measures any revision (the
plotext chart of before, too): run it with `PYTHONPATH=<that tree>` from outside the repository, e.g.
`git archive main | tar -x -C /tmp/before; cd /tmp && PYTHONPATH=/tmp/before python .../bench_chart.py`.

    python bench/bench_chart.py                  # 120x36, 600 samples, 40 draws, 5 runs
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

IMPORT_PROBE = """
import json, sys, time

def rss_kib():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))

for name in sys.argv[2:]:  # imported first: what is measured is the rest
    __import__(name)
before = rss_kib()
start = time.perf_counter()
__import__(sys.argv[1])
seconds = time.perf_counter() - start
print(json.dumps({"s": seconds, "rss_kib": rss_kib() - before, "plotext": "plotext" in sys.modules}))
"""
# (label, module, modules imported before it is timed)
MODULES = (
    ("history_chart", "sparktop.ui.widgets.history_chart", ()),
    # what the chart's own drawing adds to a Textual app that already has the rest of sparktop's UI
    (
        "history_chart after textual and its sparktop imports",
        "sparktop.ui.widgets.history_chart",
        ("textual.app", "textual.widget", "sparktop.analysis.history", "sparktop.ui.themes",
         "sparktop.ui.widgets.redraw", "sparktop.core.format"),
    ),
    ("commands.dashboard", "sparktop.commands.dashboard", ()),
)  # fmt: skip


async def draw_cpu_ms(width: int, height: int, warmup: int, draws: int, runs: int) -> tuple[list[float], str]:
    from sparktop.settings.config import Config
    from sparktop.sources.demo import DemoSource
    from sparktop.ui.app import SparktopApp
    from sparktop.ui.widgets.history_chart import HistoryChart

    app = SparktopApp(
        DemoSource(seed=0), Config(), auto_refresh=False, warmup=warmup, clock=lambda: 1_767_229_200.0,
        user_theme_dir=Path("/nonexistent/sparktop-themes"),
    )  # fmt: skip
    per_draw: list[float] = []
    async with app.run_test(size=(width, height)) as pilot:
        await pilot.pause()
        chart = app.query_one(HistoryChart)
        session = app.session
        histories = [copy.deepcopy(session.history)]
        await app.refresh_once()  # one tick more: the next picture
        await pilot.pause()
        histories.append(copy.deepcopy(session.history))
        assert session.latest is not None
        pool = session.latest.memory.total
        colors = {key: "#5fafff" for key in session.history.top_keys(4)}
        size = f"{chart.size.width}x{chart.size.height}"
        for _ in range(runs):
            start = time.process_time()
            for i in range(draws):
                chart.redraw(
                    histories[i % 2], session.safe_bytes, session.max_bytes, pool, top_n=4, colors=colors
                )
                for y in range(chart.size.height):
                    chart.render_line(y)
            per_draw.append((time.process_time() - start) * 1000 / draws)
    return per_draw, size


def import_costs(runs: int) -> dict[str, list[dict[str, float]]]:
    out: dict[str, list[dict[str, float]]] = {label: [] for label, _module, _first in MODULES}
    for _ in range(runs):
        for label, module, first in MODULES:  # interleaved: a load spike hits one run of each
            done = subprocess.run(
                [sys.executable, "-c", IMPORT_PROBE, module, *first],
                capture_output=True,
                text=True,
                check=True,
            )
            out[label].append(json.loads(done.stdout))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="120x36")
    parser.add_argument("--warmup", type=int, default=600)
    parser.add_argument("--draws", type=int, default=40)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-imports", action="store_true")
    args = parser.parse_args()
    width, height = (int(n) for n in args.size.split("x"))

    import sparktop

    print(f"sparktop from {Path(sparktop.__file__).parent}; load {os.getloadavg()[0]:.1f}")
    per_draw, chart_size = asyncio.run(draw_cpu_ms(width, height, args.warmup, args.draws, args.runs))
    print(
        f"chart draw ({args.size} terminal, chart {chart_size}, {args.warmup} demo samples): "
        f"{statistics.median(per_draw):.2f} ms CPU (runs {min(per_draw):.2f}-{max(per_draw):.2f})"
    )
    if args.skip_imports:
        return
    for label, results in import_costs(args.runs).items():
        seconds = [r["s"] for r in results]
        rss = [r["rss_kib"] / 1024 for r in results]
        print(
            f"import {label}: {statistics.median(seconds):.3f} s ({min(seconds):.3f}-{max(seconds):.3f}), "
            f"RSS +{statistics.median(rss):.1f} MiB; plotext imported: {results[0]['plotext']}"
        )


if __name__ == "__main__":
    main()
