"""What opening the What-if tab's plan editor (`e` on a plan item) costs: CPU per open, from the key to the
editor composed and painted, then Esc, on the demo dashboard (120×36, headless, as tests/ui/demo_app.py
builds it), for three items: a model (the most fields, a dropdown of every catalog model), a training run and
a workload of few fields.

    python bench/bench_plan_editor.py                     # 20 opens of each item
    python bench/bench_plan_editor.py --before main       # the same, then with that revision's editor module
    python bench/bench_plan_editor.py --profile 20        # cProfile of 20 opens of the model's editor

`--before REV` loads sparktop/ui/screens/plan_edit.py as it is at REV (git show) beside the tree's, in the
same process and on the same dashboard, the two taking turns open by open, so both sets of figures come from
one run under the same load (the rest of the app is the tree's). CPU is `time.process_time()` of this
process; the machine's load average is printed with it.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import importlib.util
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sparktop.plan import Plan  # noqa: E402
from sparktop.ui.screens import plan_edit  # noqa: E402
from tests.ui.demo_app import make_app, show_whatif  # noqa: E402

ITEMS = {
    "model llama3.1:70b": lambda plan: plan.add("llama3.1:70b"),
    "training qwen3-0.6b": lambda plan: plan.add(kind="training", model="qwen3-0.6b", batch=8, seq_len=1024),
    "fixed 17 GB": lambda plan: plan.add("thing", memory_gb=17, gpu_use="none"),
}


def load_editor(rev: str) -> type:
    """PlanEditScreen as sparktop/ui/screens/plan_edit.py has it at `rev`."""
    source = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{rev}:sparktop/ui/screens/plan_edit.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    folder = Path(tempfile.mkdtemp(prefix="bench-plan-edit-"))
    path = folder / "plan_edit_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("plan_edit_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["plan_edit_before"] = module
    spec.loader.exec_module(module)
    return module.PlanEditScreen


async def measure(
    editors: dict[str, type], opens: int, profile: cProfile.Profile | None = None
) -> dict[str, dict[str, list[float]]]:
    """CPU seconds of each open (`e` to the editor composed and painted) and close (Esc to the plan painted
    again), per editor and item. The editors take turns on one dashboard, open by open, so a burst of load
    on this shared machine hits each alike."""
    out: dict[str, dict[str, list[float]]] = {name: {} for name in editors}
    app = make_app(warmup=5)
    async with app.run_test(size=(120, 36)) as pilot:
        pane = await show_whatif(app, pilot)
        assert pane.catalog is not None
        for item, add in ITEMS.items():
            plan = Plan(pane.catalog)
            add(plan)
            pane.set_plan(plan)
            await pilot.pause()
            for number in range(opens + 1):  # the first open of each warms caches: not counted
                for name, editor in editors.items():
                    plan_edit.PlanEditScreen = editor  # the pane imports it at each `e`
                    pane.query_one("#whatif-plan").focus()
                    await pilot.pause()
                    if profile is not None and number:
                        profile.enable()
                    start = time.process_time()
                    await pilot.press("e")
                    await pilot.pause()
                    opened = time.process_time()
                    if profile is not None:
                        profile.disable()
                    assert isinstance(app.screen, editor), app.screen
                    await pilot.press("escape")
                    await pilot.pause()
                    closed = time.process_time()
                    assert not isinstance(app.screen, editor)
                    if number:
                        out[name].setdefault(f"{item}: open", []).append(opened - start)
                        out[name].setdefault(f"{item}: close", []).append(closed - opened)
            if profile is not None:
                break  # the model's editor only
    return out


def report(results: dict[str, dict[str, list[float]]]) -> None:
    names = list(results)
    print(f"CPU per open and close, median (best) of each, load average {os.getloadavg()[0]:.1f}")
    print(f"  {'':31}" + "".join(f"{name:>22}" for name in names))
    for row in results[names[0]]:
        cells = "".join(
            f"{statistics.median(times) * 1000:>12.0f} ms ({min(times) * 1000:>3.0f})"
            for times in (results[name][row] for name in names)
        )
        print(f"  {row:31}{cells}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--opens", type=int, default=20)
    parser.add_argument("--before", metavar="REV", help="also measure the editor module of this revision")
    parser.add_argument("--profile", type=int, metavar="N", help="cProfile N opens of the model's editor")
    parser.add_argument("--profile-out", metavar="FILE", help="also write the profile there (pstats)")
    parser.add_argument("--sort", default="cumulative")
    args = parser.parse_args()
    tree = plan_edit.PlanEditScreen
    if args.profile:
        profile = cProfile.Profile()
        asyncio.run(measure({"tree": tree}, args.profile, profile))
        if args.profile_out:
            profile.dump_stats(args.profile_out)
        pstats.Stats(profile).sort_stats(args.sort).print_stats(45)
        return
    editors = {f"before ({args.before})": load_editor(args.before)} if args.before else {}
    editors["after (tree)"] = tree
    report(asyncio.run(measure(editors, args.opens)))


if __name__ == "__main__":
    main()
