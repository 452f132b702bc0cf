#!/usr/bin/env python3
"""Regenerate screenshots/*.svg from the deterministic demo (fixed seed, simulated clock, no timers).

    python scripts/screenshots.py            # all pictures into screenshots/
    python scripts/screenshots.py --out DIR

The pictures are the real app drawn by Textual at a fixed terminal size; README.md shows them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

os.environ["TZ"] = "UTC"  # the status line shows the snapshot's time of day
time.tzset()

from sparktop.settings.config import Config  # noqa: E402
from sparktop.sources.demo import DemoSource  # noqa: E402
from sparktop.sources.recording import Recorder  # noqa: E402
from sparktop.sources.replay import ReplaySource  # noqa: E402
from sparktop.ui.app import SparktopApp  # noqa: E402

START = 1_767_225_600.0


@dataclass(frozen=True)
class Shot:
    name: str
    title: str
    size: tuple[int, int]
    scenario: str = "default"
    theme: str = "sparktop-dark"
    keys: tuple[str, ...] = ()
    warmup: int = 420
    config: dict = field(default_factory=dict)
    plan: tuple[str, ...] = ()  # catalog names put in the What-if plan after the keys
    # A replay instead: `warmup` demo snapshots recorded, played at `replay_speed` for `replay_ticks` ticks
    replay_ticks: int = 0
    replay_speed: int = 1


SHOTS = (
    Shot("dashboard-dark", "sparktop: dashboard (dark)", (120, 36)),
    Shot("dashboard-light", "sparktop: dashboard (light)", (120, 36), theme="sparktop-light"),
    Shot("dashboard-80x24", "sparktop: 80×24", (80, 24)),
    Shot("dashboard-200x60", "sparktop: 200×60", (200, 60), theme="sparktop-nvidia"),
    Shot("containers", "sparktop: containers", (120, 36), keys=("2",)),
    Shot("processes", "sparktop: processes", (120, 36), keys=("3",)),
    Shot("critical", "sparktop: critical memory pressure", (120, 36), scenario="critical", warmup=120),
    Shot(
        "high-contrast",
        "sparktop: high contrast",
        (120, 36),
        scenario="everything",
        theme="sparktop-high-contrast",
    ),
    Shot("help", "sparktop: help", (100, 36), keys=("question_mark",)),
    Shot(
        "whatif",
        "sparktop: what-if planner",
        (120, 36),
        scenario="audio",
        keys=("w",),
        plan=("llama3.1:70b", "qwen2.5-coder:32b", "ssd-tetris"),
    ),
    Shot("stop-dialog", "sparktop: stop a container", (120, 36), keys=("2", "s")),
    Shot("models", "sparktop: model servers", (120, 36), scenario="servers", keys=("5",), warmup=26),
    Shot(
        "dashboard-servers",
        "sparktop: one segment per served model",
        (120, 36),
        scenario="servers",
        warmup=26,
    ),
    # A recording of the critical scenario played back at 30x: position, length and speed in the header.
    Shot(
        "replay",
        "sparktop: replaying a recording at 30x",
        (120, 36),
        scenario="critical",
        warmup=300,
        replay_ticks=4,
        replay_speed=30,
    ),
    Shot("dashboard-discrete", "sparktop: a discrete GPU's own memory", (120, 36), scenario="discrete"),
    # A training run starts beside a vLLM server at 60 s: its tokens/s drops, the GPU clocks down, the
    # processes' sm % shows who holds the SMs.
    Shot(
        "contention",
        "sparktop: contention and why the GPU is slow",
        (120, 36),
        scenario="contention",
        warmup=150,
    ),
    Shot(
        "contention-models",
        "sparktop: a measured slowdown",
        (120, 36),
        scenario="contention",
        keys=("5",),
        warmup=150,
    ),
    Shot(
        "contention-processes",
        "sparktop: sm % per process",
        (120, 36),
        scenario="contention",
        keys=("3",),
        warmup=150,
    ),
)


def recorded(shot: Shot, demo: DemoSource, directory: Path) -> ReplaySource:
    """`shot.warmup` snapshots of `demo` in a recording, opened for playback."""
    path = directory / f"{shot.name}.jsonl"
    with Recorder(path, mode="overwrite", fsync=False) as recorder:
        for _ in range(shot.warmup):
            recorder.write(demo.sample())
    return ReplaySource(path)


async def take(shot: Shot, out: Path) -> Path:
    config = Config(theme=shot.theme, **shot.config)
    with tempfile.TemporaryDirectory() as directory:
        replay = shot.replay_ticks > 0
        demo = DemoSource(scenario=shot.scenario, seed=0, start=START)
        app = SparktopApp(
            recorded(shot, demo, Path(directory)) if replay else demo,
            config,
            clock=lambda: START + shot.warmup,
            auto_refresh=False,
            warmup=0 if replay else shot.warmup,
            user_theme_dir=Path("/nonexistent"),
            replay_speed=shot.replay_speed,
        )
        return await _draw(app, shot, out)


async def _draw(app: SparktopApp, shot: Shot, out: Path) -> Path:
    app.animation_level = "none"
    async with app.run_test(size=shot.size) as pilot:
        await pilot.pause()
        for _ in range(shot.replay_ticks):
            await app.refresh_once()
        await pilot.pause()
        for key in shot.keys:
            await pilot.press(key)
        if shot.plan:
            from sparktop.ui.whatif import WhatIfPane

            pane = app.query_one(WhatIfPane)  # built when its tab opened; the catalog loads in a worker
            while pane.catalog is None:
                await app.workers.wait_for_complete()
                await pilot.pause(0.05)
            for name in shot.plan:
                pane.add(name)
        await pilot.pause()
        path = out / f"{shot.name}.svg"
        path.write_text(app.export_screenshot(title=shot.title), encoding="utf-8")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "screenshots")
    parser.add_argument("names", nargs="*", help="only these pictures (default: all)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    shots = [s for s in SHOTS if not args.names or s.name in args.names]
    for shot in shots:
        print(
            asyncio.run(take(shot, args.out)).relative_to(ROOT)
            if args.out.is_relative_to(ROOT)
            else shot.name
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
