"""What the tables' content-keyed render cache saves (sparktop/ui/widgets/datatable_cache.py).

Headless (`App.run_test`, 120×36 by default): a processes table of `--rows` demo rows (30) and the default
columns. Each tick feeds the next demo snapshot's rows (`set_rows`: only cells whose text changed are
updated) and then renders every line of the table as the compositor does after the refresh that follows
(`render_lines` over the whole widget). CPU time per tick (`time.process_time`), median and mean over
`--ticks` (300) after 20 warm-up ticks, for the table as shipped (content cache) and for the same table
drawn by DataTable's own render path (cells and lines keyed by its update counter).

Run from the repository root: `python bench/bench_table_cache.py [--ticks N] [--rows N] [--size WxH]`.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widgets import DataTable

from sparktop.core.columns import PROCESS_COLUMN_SPECS
from sparktop.core.snapshot import ProcessInfo, Snapshot
from sparktop.session.rows import Row, process_rows
from sparktop.session.session import Session
from sparktop.settings.config import Config
from sparktop.sources.demo import DemoSource
from sparktop.ui.widgets.tables import ConsumerTable

WARM_UP = 20


class Uncached(ConsumerTable[ProcessInfo]):
    """The same table, drawn by DataTable's own cell and line caches."""

    _render_cell = DataTable._render_cell
    _render_line = DataTable._render_line
    _clear_caches = DataTable._clear_caches


class Bench(App[None]):
    def __init__(self, table: ConsumerTable[ProcessInfo]) -> None:
        super().__init__()
        self.table = table

    def compose(self) -> ComposeResult:
        yield self.table


def ticks(n: int, rows: int) -> list[list[Row[ProcessInfo]]]:
    source, session = DemoSource(scenario="default", seed=0), Session()
    out = []
    for _ in range(n):
        snapshot: Snapshot = session.ingest(source.sample())
        made = process_rows(snapshot, session.process_rate_per_min)
        made.sort(key=lambda r: r.values["total"] or 0, reverse=True)
        out.append(made[:rows])
    return out


async def run(
    kind: type[ConsumerTable[ProcessInfo]], feed: list[list[Row[ProcessInfo]]], size: tuple[int, int]
) -> list[float]:
    table = kind(PROCESS_COLUMN_SPECS, Config().process_columns, "total")
    app = Bench(table)
    costs = []
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        for i, rows in enumerate(feed):
            start = time.process_time()
            table.set_rows(rows, "GiB")
            table.render_lines(Region(0, 0, *table.size))
            spent = time.process_time() - start
            if i >= WARM_UP:
                costs.append(spent)
            await pilot.pause()  # let the table's idle work (dimensions) run, as between ticks
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ticks", type=int, default=300)
    parser.add_argument("--rows", type=int, default=30)
    parser.add_argument("--size", default="120x36")
    args = parser.parse_args()
    width, height = (int(x) for x in args.size.split("x"))
    size = (width, height)
    feed = ticks(args.ticks + WARM_UP, args.rows)
    print(f"{args.rows} rows, {size[0]}×{size[1]}, {args.ticks} ticks: CPU ms per tick (set_rows + render)")
    for label, kind in (("content cache (shipped)", ConsumerTable), ("DataTable's own caches", Uncached)):
        costs = asyncio.run(run(kind, feed, size))
        median, mean = statistics.median(costs) * 1000, statistics.fmean(costs) * 1000
        print(f"  {label:26} median {median:6.2f}   mean {mean:6.2f}")


if __name__ == "__main__":
    main()
