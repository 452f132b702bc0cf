"""Long sessions: does the dashboard's memory stay flat? (issue 13 item 12)

The real app runs headless (Textual `run_test`, 120×36) in this interpreter, sampling on its own timer:

1. warm-up: every tab drawn, `--warmup` seconds of ticks at `--interval` (default 0.2 s, the fastest the
   keys offer is 0.25: 0.2 is harsher), then RSS (VmRSS after a full garbage collection) is the baseline;
2. `--switches` tab switches (default 2,000; 1 → 2 → 3 → 4 → 1 …, each waited for), ticks going on; RSS;
3. `--minutes` at `--interval` (default 30 min); RSS every minute.

Each figure is compared with the baseline; the goal is within 10 %. Prints a table (and `--json` a document).
Run: `python bench/bench_soak.py` (demo source; `--live` for this machine). A shorter run:
`--switches 300 --minutes 3`. Not part of the test suite: a Pilot test (tests/ui/test_retention.py) counts
the widgets a tab switch leaves behind instead.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

GOAL_PCT = 10.0


def rss_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def settled_rss() -> float:
    gc.collect()
    return rss_mib()


async def soak(args: argparse.Namespace) -> dict[str, object]:
    from sparktop.settings.config import Config
    from sparktop.sources.factory import open_source
    from sparktop.ui.app import SparktopApp

    source = open_source(demo=None if args.live else "default", replay=None, seed=0)
    app = SparktopApp(source, Config(interval=args.interval), user_theme_dir=Path("/nonexistent"))
    rows: list[tuple[str, float]] = []
    async with app.run_test(size=(120, 36)) as pilot:
        for key in "12341":
            await pilot.press(key)
        await asyncio.sleep(args.warmup)
        base = settled_rss()
        rows.append(("after warm-up", base))
        t0 = time.monotonic()
        for i in range(args.switches):
            await pilot.press("2341"[i % 4])
        await pilot.pause()
        switch_s = time.monotonic() - t0
        rows.append((f"after {args.switches:,} tab switches ({switch_s:.0f} s)", settled_rss()))
        for minute in range(1, int(args.minutes) + 1):
            await asyncio.sleep(60)
            rss = settled_rss()
            if args.verbose:
                print(f"  {minute} min: {rss:.1f} MiB", flush=True)
        if args.minutes:
            rows.append((f"after {args.minutes:g} min at {args.interval:g} s", settled_rss()))
    source.close()
    return {"source": "live" if args.live else "demo", "baseline_mib": base, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--switches", type=int, default=2000)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--interval", type=float, default=0.2)
    parser.add_argument("--warmup", type=float, default=30.0, help="seconds of ticks before the baseline")
    parser.add_argument("--live", action="store_true", help="this machine instead of the demo")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="RSS every minute of the soak")
    args = parser.parse_args(argv)
    result = asyncio.run(soak(args))
    base = float(result["baseline_mib"])  # type: ignore[arg-type]
    worst = 0.0
    print(f"sparktop dashboard RSS, {result['source']} source, 120×36 headless")
    for label, rss in result["rows"]:  # type: ignore[union-attr]
        growth = 100.0 * (rss - base) / base
        worst = max(worst, growth)
        print(f"  {label:<44} {rss:7.1f} MiB  {growth:+6.1f} %")
    ok = worst <= GOAL_PCT
    print(f"goal: within {GOAL_PCT:g} % of the RSS after warm-up: {'met' if ok else 'NOT met'}")
    if args.json:
        print(json.dumps(result))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
