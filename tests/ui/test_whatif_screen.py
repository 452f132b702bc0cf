"""The What-if tab as it reads on screen: the catalog sorted and legible at 60×18, the find box let go by Esc,
verdict words never glued to their reason, the footer holding the tab's keys."""

from __future__ import annotations

import pytest
from textual.widgets import Input, OptionList, Static

from sparktop.ui.whatif import WhatIfPane
from tests.ui.demo_app import make_app, shared_whatif, show_whatif, wait_for_catalog

# A private home (tests/conftest.py) for the test with an app of its own; the others share one What-if tab
# (`whatif`: reset for each test) in the module's event loop.
pytestmark = [pytest.mark.usefixtures("private_home"), pytest.mark.asyncio(loop_scope="module")]
whatif_app = shared_whatif()


def catalog_rows(pane: WhatIfPane) -> list[str]:
    options = pane.query_one("#whatif-catalog", OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


async def test_catalog_is_sorted_and_names_stay_legible_at_60x18(whatif) -> None:
    _app, pilot, pane = whatif
    await pilot.resize_terminal(60, 18)
    await pilot.pause()
    rows = catalog_rows(pane)
    names = [row[6:].split("  ")[0] for row in rows]
    assert names == sorted(names, key=str.lower)
    # What the list shows: the name right after the size (the kind after it, cut first).
    catalog = pane.query_one("#whatif-catalog", OptionList)
    width = catalog.scrollable_content_region.width - 1  # the option's own padding
    llamas = [row[:width] for row in rows if "llama" in row]
    assert len(llamas) > 3 and len(set(llamas)) == len(llamas), llamas  # each row tells its model apart


async def test_esc_lets_go_of_the_find_box(whatif) -> None:
    app, pilot, pane = whatif
    await pilot.press("slash", "l", "l", "a")
    box = pane.query_one("#whatif-filter", Input)
    assert app.focused is box and box.value == "lla"
    await pilot.press("escape")
    await pilot.pause()
    assert app.focused is pane.query_one("#whatif-catalog", OptionList) and box.value == ""
    await pilot.press("slash", "escape")  # empty: Esc leaves it all the same
    await pilot.pause()
    assert app.focused is pane.query_one("#whatif-catalog", OptionList)
    await pilot.press("b")  # the keys work again (not typed into the box): b goes to the clean baseline
    await pilot.pause()
    assert pane.baseline_mode == "clean" and box.value == ""


async def test_verdict_words_are_never_glued_to_their_reason(whatif) -> None:
    """`FITS1.2 GB`, `OKnothing`: the space sat between two styled runs, where a reader of runs dropped it."""
    app, pilot, _pane = whatif
    await pilot.press("enter")
    await pilot.pause()
    box = app.query_one("#whatif-verdicts", Static)
    lines = box.render_lines(box.region.reset_offset)
    for strip in lines[:2]:
        runs = [seg.text for seg in strip if seg.text]
        for text in runs:
            if text in ("FITS", "TIGHT", "OOM RISK", "WON'T FIT", "OK", "CAREFUL", "NO"):
                pytest.fail(f"verdict run without its separator: {runs}")


async def test_the_footer_holds_the_whatif_keys_at_100_columns(whatif) -> None:
    """The footer's entries, written as it writes them, fit 100 columns (counted: no resize needed)."""
    app, pilot, _pane = whatif
    shown = {k: a.binding for k, a in app.screen.active_bindings.items() if a.binding.show}
    assert "o" not in shown and "slash" not in shown  # the tables' keys are off this tab
    # As the footer writes them: one entry per binding, its keys' display and description.
    entries = {(b.action, b.description): f"{app.get_key_display(b)} {b.description}" for b in shown.values()}
    text = "  ".join(entries.values())
    assert len(text) + 14 <= 100, text  # fits beside "^p palette"
    await pilot.press("2")
    await pilot.pause()
    shown = {k for k, a in app.screen.active_bindings.items() if a.binding.show}
    assert "o" in shown and "slash" in shown


async def test_the_whatif_pane_is_built_the_first_time_its_tab_opens():
    """Its catalog, lists and bar were a fifth of the dashboard's start for a tab many sessions never open:
    the start builds none of it; `w` builds it once, on the latest sample, and the ticks keep it current."""
    app = make_app(warmup=1)  # a live baseline needs one sample
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert not app.query(WhatIfPane)
        await app.refresh_once()
        pane = await show_whatif(app, pilot, wait=False)
        head = str(pane.query_one("#whatif-head", Static).render())
        assert head.startswith("Baseline live:"), head  # drawn at once, while the catalog still loads
        await wait_for_catalog(app, pilot, pane)
        assert pane.snapshot is app.session.latest and pane.catalog is not None
        assert app.focused is pane.query_one("#whatif-catalog", OptionList)  # the keys go to the catalog
        pane.add("llama3.1:8b")
        await pilot.press("1")
        await app.refresh_once()
        assert pane.snapshot is app.session.latest  # hidden, still current
        await show_whatif(app, pilot)
        assert list(app.query(WhatIfPane)) == [pane] and len(pane.plan or []) == 1  # the same pane, its plan


async def test_the_key_of_the_tab_on_show_leaves_the_keys_where_they_are(whatif) -> None:
    """`w` on the What-if tab took the focus off its catalog (the tab "left" was the tab shown), and the
    arrows then moved nothing; `2` on the Containers tab likewise."""
    from sparktop.ui.screens.dashboard import ContainersTable

    app, pilot, pane = whatif
    catalog = pane.query_one("#whatif-catalog", OptionList)
    assert app.focused is catalog
    await pilot.press("w")
    assert app.focused is catalog
    await pilot.press("2")
    await pilot.pause()
    table = app.query_one(ContainersTable)
    assert app.focused is table
    await pilot.press("2")
    assert app.focused is table
