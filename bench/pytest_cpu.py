"""The suite's CPU per test and per file: on a 2-core machine the suite's wall time is bound by the CPU its
tests burn, which `--durations` (wall time, inflated by whatever else runs) does not show.

As a pytest plugin it writes one line per test (node id, CPU of the worker, CPU of the children it reaped,
wall), one file per xdist worker; run as a script it sums them (issue 34):

    rm -rf /tmp/sparktop-test-cpu
    PYTHONPATH=bench .venv/bin/python -m pytest -q -n 6 --dist worksteal -p pytest_cpu
    .venv/bin/python bench/pytest_cpu.py [--tests 40] [--files 40]

Not counted: what no test reaps (the private dockerd, tmux servers, the browser), collection (~3 s of CPU
in each worker here) and pytest's own start.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from collections import defaultdict
from pathlib import Path
from typing import IO, Any

import pytest

FOLDER = Path(os.environ.get("SPARKTOP_TEST_CPU", "/tmp/sparktop-test-cpu"))
_out: IO[str] | None = None


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    global _out
    if _out is None:
        FOLDER.mkdir(parents=True, exist_ok=True)
        _out = open(FOLDER / f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.tsv", "a")  # noqa: SIM115
    own, children, started = *_cpu(), time.monotonic()
    yield
    own_after, children_after = _cpu()
    figures = (own_after - own, children_after - children, time.monotonic() - started)
    _out.write("\t".join([item.nodeid, *(f"{x:.3f}" for x in figures)]) + "\n")
    _out.flush()


def summary(folder: Path, tests: int, files: int) -> str:
    rows = []
    for path in sorted(folder.glob("*.tsv")):
        for line in path.read_text().splitlines():
            node, own, children, wall = line.split("\t")
            rows.append((node, float(own), float(children), float(wall)))
    by_file: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for node, own, children, _ in rows:
        entry = by_file[node.split("::")[0]]
        entry[0] += 1
        entry[1] += own
        entry[2] += children
    lines = [
        f"{len(rows)} tests; CPU {sum(r[1] for r in rows):.1f} s in the workers, "
        f"{sum(r[2] for r in rows):.1f} s in the children they reaped",
        "",
        "| CPU s | workers | children | tests | file |",
        "|---|---|---|---|---|",
    ]
    ranked = sorted(by_file.items(), key=lambda item: -(item[1][1] + item[1][2]))
    for name, (count, own, children) in ranked[:files]:
        lines.append(f"| {own + children:.1f} | {own:.1f} | {children:.1f} | {int(count)} | {name} |")
    lines += ["", "| CPU s | test |", "|---|---|"]
    for node, own, children, _ in sorted(rows, key=lambda r: -(r[1] + r[2]))[:tests]:
        lines.append(f"| {own + children:.2f} | {node} |")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Sum the per-test CPU the plugin wrote.")
    parser.add_argument("--folder", type=Path, default=FOLDER)
    parser.add_argument("--tests", type=int, default=40)
    parser.add_argument("--files", type=int, default=40)
    args = parser.parse_args()
    print(summary(args.folder, args.tests, args.files))
