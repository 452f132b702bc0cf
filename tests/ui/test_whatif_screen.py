"""The What-if tab as it reads on screen: verdict words never glued to their reason, and the pane built the
first time its tab opens (and filled despite a bad discovery key). (The catalog sorted and legible at
60×18, the find box let go by Esc and the footer holding the tab's keys are test_whatif's, on its shared
tab.)"""

from __future__ import annotations

import pytest
from textual.widgets import OptionList, Static

from sparktop.analysis.lines import LineChoice
from sparktop.plan import Baseline, Plan, evaluate
from sparktop.plan.catalog import load_catalog
from sparktop.settings.config import Config
from sparktop.settings.files import user_catalog_path
from sparktop.ui.whatif import WhatIfPane, verdict_text
from tests.fixtures.demo_session import demo_session
from tests.ui.demo_app import make_app, show_whatif, wait_for_catalog

# A private home (tests/conftest.py) for each test: the catalog is the built-in one.
pytestmark = [pytest.mark.usefixtures("private_home")]


@pytest.mark.parametrize("scenario", ["default", "critical"])
def test_verdict_words_are_never_glued_to_their_reason(scenario: str) -> None:
    """`FITS1.2 GB`, `OKnothing`: the space sat between two styled runs, where a reader of runs dropped it.
    With no app: the verdicts' own text function (the pane draws what it returns) over the demo's sample
    with the catalog's first workload planned (Enter on the catalog), as the tab shows them, read as the
    runs a terminal gets; on a calm machine and a critical one (other verdict words)."""
    snap = demo_session(scenario, 5).session.latest
    assert snap is not None
    catalog = load_catalog(discover=False)
    plan = Plan(catalog)
    plan.add(min(catalog.entries, key=str.lower))
    lines = LineChoice.of(Config())
    ev = evaluate(plan, Baseline.from_snapshot(snap), lines.safe, lines.aggressive)
    words = (ev.fit.verdict.upper(), ev.compute.verdict.upper())
    runs = [segment.text for segment in verdict_text(ev).render_segments() if segment.text]
    assert all(any(run.startswith(word) for run in runs) for word in words), (words, runs)
    for text in runs:
        if text in ("FITS", "TIGHT", "OOM RISK", "WON'T FIT", "OK", "CAREFUL", "NO"):
            pytest.fail(f"verdict run without its separator: {runs}")


@pytest.mark.asyncio
async def test_the_whatif_pane_is_built_the_first_time_its_tab_opens():
    """Its catalog, lists and bar were a fifth of the dashboard's start for a tab many sessions never open:
    the start builds none of it; `w` builds it once, on the latest sample, and the ticks keep it current.
    The user's catalog has a bad discovery key: the catalog fills all the same (it once stayed "loading"
    forever) and the problem is among the app's messages (what M shows: test_settings_ui)."""
    catalog_file = user_catalog_path()
    catalog_file.parent.mkdir(parents=True, exist_ok=True)
    catalog_file.write_text("[discovery]\nollama_models = 5\n", encoding="utf-8")
    app = make_app(warmup=1)  # a live baseline needs one sample
    async with app.run_test(size=(120, 36)) as pilot:
        assert not app.query(WhatIfPane)
        await app.refresh_once()
        pane = await show_whatif(app, pilot, wait=False)
        head = str(pane.query_one("#whatif-head", Static).render())
        assert head.startswith("Baseline live:"), head  # drawn at once, while the catalog still loads
        await wait_for_catalog(app, pilot, pane)
        assert pane.snapshot is app.session.latest and pane.catalog is not None
        options = pane.query_one("#whatif-catalog", OptionList)
        assert options.option_count > 10, "a bad discovery key: the catalog is filled all the same"
        problem = "discovery.ollama_models: must be a string"
        assert any(problem in text for _w, _t, text in app.messages), ("and says so", app.messages)
        assert app.focused is pane.query_one("#whatif-catalog", OptionList)  # the keys go to the catalog
        pane.add("llama3.1:8b")
        await pilot.press("1")
        await app.refresh_once()
        assert pane.snapshot is app.session.latest  # hidden, still current
        await show_whatif(app, pilot)
        assert list(app.query(WhatIfPane)) == [pane] and len(pane.plan or []) == 1  # the same pane, its plan
