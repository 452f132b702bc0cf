"""The dashboard's data without the dashboard: a Session fed the demo's warm-up as SparktopApp's warm-up
feeds it (make_app in demo_app.py), for tests that check what one widget shows of it through the widget's own
show(...) and render(), with no App, no Pilot and no frame.

The demo's snapshots are sampled once per (scenario, warm-up) in each pytest worker (420 samples are ~0.5 s
of CPU) and kept as JSON; every call gets a new Session over new snapshot objects, so a test may change what
it was given without touching another test's.
"""

from __future__ import annotations

from functools import lru_cache

from sparktop.core.snapshot import Snapshot
from sparktop.session.session import Session
from sparktop.settings.config import Config
from sparktop.sources.demo import DemoSource
from sparktop.ui.themes import DEFAULT_THEME, Palette, load_themes
from tests.ui.demo_app import FIXED_NOW, WARMUP


@lru_cache(maxsize=16)
def _warmup_json(scenario: str, warmup: int) -> tuple[str, ...]:
    source = DemoSource(scenario=scenario, seed=0)  # make_app's source
    return tuple(source.sample().model_dump_json() for _ in range(warmup))


def demo_session(scenario: str = "default", warmup: int = WARMUP, config: Config | None = None) -> Session:
    """What the dashboard's session holds after make_app(scenario, warmup) has warmed up: every sample
    ingested without analysis, then analysed once (SparktopApp.dashboard_ready)."""
    session = Session.for_config(config or Config(), clock=lambda: FIXED_NOW)
    for line in _warmup_json(scenario, warmup):
        session.ingest(Snapshot.model_validate_json(line), analyse=False)
    session.analyse()
    return session


@lru_cache(maxsize=1)
def default_palette() -> Palette:
    """The colours of the default theme, as the dashboard draws with them."""
    themes, _errors = load_themes(None)
    return themes[DEFAULT_THEME].palette
