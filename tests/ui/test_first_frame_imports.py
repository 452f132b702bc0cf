"""What the dashboard has imported when its first frame with data is on screen (issue 33: a btop-class start).

Each case starts `sparktop` the way the command line does (`sparktop.commands.main.main`) in a fresh
interpreter, headless at 120×36, and lists `sys.modules` at the moment the app calls its first-frame hook (the
one the CLI uses to turn the garbage collector back on). Deterministic: what is imported, never how long it
took. Whatever a frame does not need (the Docker SDK, HTTP clients, the catalog and planner, the exporter,
the cluster view, a replay's player, the add-on collectors) comes later, when first used.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fixtures.imports import printed_modules, run_probe, under

REPO = Path(__file__).resolve().parents[2]

# Run in the child: the app headless, its first-frame hook prints the modules and ends it.
PROBE = """
import json, sys

import sparktop.ui.terminal_check
sparktop.ui.terminal_check.dashboard_refusal = lambda env, size: None  # no terminal here: headless

import sparktop.commands.dashboard as dashboard
from sparktop.ui.app import SparktopApp

apps = []
real_init, real_run = SparktopApp.__init__, SparktopApp.run

def init(self, *args, **kwargs):
    real_init(self, *args, **kwargs)
    apps.append(self)

def run(self, **kwargs):
    return real_run(self, headless=True, size=(120, 36))

def first_frame():
    print("MODULES " + json.dumps(sorted(sys.modules)), flush=True)
    apps[0].exit()

SparktopApp.__init__, SparktopApp.run = init, run
dashboard._resume_gc = first_frame

from sparktop.commands.main import main
sys.exit(main(sys.argv[1:]))
"""

# Modules (and everything under them) a first frame must not wait for.
NOT_BEFORE_FIRST_FRAME = (
    # third-party and standard library: the Docker SDK and HTTP clients, Prometheus, the footprint store
    "docker",
    "requests",
    "urllib3",
    "http.client",
    "urllib.request",
    "prometheus_client",
    "sqlite3",
    "gzip",
    # sparktop: the planner and its catalog, the exporter, the cluster view, the browser view, the guard
    "sparktop.plan",
    "sparktop.settings.plan",
    "sparktop.settings.catalog",
    "sparktop.exporter",
    "sparktop.cluster",
    "sparktop.web",
    "sparktop.guard",
    "sparktop.core.http_client",
    "sparktop.ui.whatif",
    # a recording's reader and player, Docker and the add-on collectors (model servers, the footprint store;
    # the demo runs the slowdowns collector, without a store)
    "sparktop.sources.replay",
    "sparktop.session.playback",
    "sparktop.collect.docker",
    "sparktop.collect.servers",
    "sparktop.footprints.store",
)

# Not sparktop's dependencies any more, imported neither before nor after the first frame: the history chart
# (drawn, with data, by the first frame) makes its own braille cells (sparktop/ui/widgets/braille_plot.py).
NEVER_IMPORTED = ("plotext", "textual_plotext")


def modules_at_first_frame(*args: str) -> set[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(REPO)
    done = run_probe(PROBE, *args, cwd=REPO, env=env, timeout=300)
    return printed_modules(done, "first frame")


def too_early(modules: set[str]) -> list[str]:
    return under(modules, NOT_BEFORE_FIRST_FRAME)


@pytest.mark.parametrize("args", [("--demo",), ()], ids=["demo", "live"])
def test_first_frame_imports_only_what_it_draws(args: tuple[str, ...]) -> None:
    # An hour's interval: no second tick (Docker, the add-ons) can come before the first frame's hook.
    modules = modules_at_first_frame(*args, "--interval", "3600")
    assert "sparktop.ui.app" in modules and "textual.app" in modules  # the probe saw the real start
    assert too_early(modules) == []
    assert under(modules, NEVER_IMPORTED) == []
    assert "sparktop.ui.widgets.braille_plot" in modules  # the chart was drawn: the check saw its imports
