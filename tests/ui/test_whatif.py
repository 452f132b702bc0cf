"""The What-if tab, driven like a user: drag workloads in and out with the mouse, the same with keys, edit a
parameter in the form, switch the baseline, save and load plan files. The catalog is the built-in one
(no user catalog, no discovery) so the figures do not depend on this machine."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.content import Content
from textual.pilot import Pilot
from textual.widgets import Input, Label, OptionList, Select, Static, Switch, TabbedContent

from sparktop.analysis.lines import LineChoice
from sparktop.plan import Baseline, Plan, dumps_plan, estimate_workload, evaluate
from sparktop.plan.catalog import Catalog, load_catalog
from sparktop.plan.verdict import FITS, TIGHT
from sparktop.settings.config import Config
from sparktop.settings.files import user_catalog_path
from sparktop.ui.app import SparktopApp
from sparktop.ui.screens.plan_edit import PlanEditScreen
from sparktop.ui.screens.plan_file import PlanFileScreen
from sparktop.ui.whatif import WhatIfPane, baseline_head
from sparktop.ui.widgets.budget_bar import BudgetBar
from tests.fixtures.demo_session import demo_session
from tests.fixtures.snapshots import snapshot, spark_gpu
from tests.ui.demo_app import edit_selected, footer_keys, make_app, shared_whatif

# The tests share one What-if tab (`whatif`: reset for each test) in the module's event loop; each has a
# private home of its own (tests/conftest.py) for what it runs besides (`sparktop plan`).
pytestmark = [pytest.mark.usefixtures("private_home"), pytest.mark.asyncio(loop_scope="module")]

USER_CATALOG = '[[workload]]\nname = "my-tts"\nkind = "speech"\nmemory_gb = 12\n'


def app_with_a_user_catalog(_folder: Path) -> SparktopApp:
    """open_whatif()'s dashboard, its module's private home holding a user catalog of one entry (which
    test_user_catalog_entry_arrives_through_the_worker looks for; no other test's filter finds it)."""
    user = user_catalog_path()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(USER_CATALOG)
    return make_app(warmup=5)


whatif_app = shared_whatif(app_with_a_user_catalog)


def row_offset(option_list: OptionList, index: int) -> tuple[int, int]:
    """Where option `index` is drawn, relative to the list's top-left corner (for pilot mouse calls)."""
    line = option_list._index_to_line[index]
    return option_list.gutter.left + 2, option_list.gutter.top + line - option_list.scroll_offset.y


async def filter_catalog(pilot: Pilot, pane: WhatIfPane, text: str) -> OptionList:
    box = pane.query_one("#whatif-filter", Input)
    box.value = text
    await pilot.pause()
    return pane.query_one("#whatif-catalog", OptionList)


def planned_names(pane: WhatIfPane) -> list[str]:
    assert pane.evaluation is not None
    return [r.name for r in pane.evaluation.items]


def verdict_text(pane: WhatIfPane) -> str:
    return str(pane.query_one("#whatif-verdicts", Static).render())


async def drag(pilot: Pilot, source: OptionList, index: int, target: str, target_offset=(2, 1)) -> None:
    await pilot.mouse_down(source, offset=row_offset(source, index))
    await pilot.hover(target, offset=target_offset)
    await pilot.mouse_up(target, offset=target_offset)
    await pilot.pause()


async def test_drag_from_catalog_into_plan_updates_bar_and_verdicts(whatif) -> None:
    _app, pilot, pane = whatif
    catalog_list = await filter_catalog(pilot, pane, "llama3.1:70b")
    index = next(i for i, o in enumerate(catalog_list.options) if o.id == "llama3.1:70b")
    before_used = pane.query_one("#whatif-bar", BudgetBar).planned_bytes
    assert before_used == 0
    assert planned_names(pane) == []

    await drag(pilot, catalog_list, index, "#whatif-plan")

    assert planned_names(pane) == ["llama3.1:70b"]
    bar = pane.query_one("#whatif-bar", BudgetBar)
    planned = [s for s in bar.segments if s.key.startswith("plan:")]
    assert [s.label for s in planned] == ["+llama3.1:70b"]
    assert bar.planned_bytes == planned[0].nbytes > 30e9  # a 70B model at Q4 is tens of GB
    # The demo holds ~79 GB: with 45 more the verdict is past the aggressive line, and it says so.
    ev = pane.evaluation
    assert ev is not None and ev.fit.verdict not in (FITS, TIGHT)
    assert ev.fit.verdict.upper() in verdict_text(pane)
    assert "llama3.1:70b" in verdict_text(pane)


async def test_in_the_plan_a_click_highlights_a_drag_within_moves_and_a_drag_out_removes(whatif) -> None:
    """The plan's three mouse gestures on one plan (they were two tests, a reset and a plan each)."""
    _app, pilot, pane = whatif
    for name in ("qwen3:8b", "f5-tts", "xtts-v2"):
        pane.add(name)
    await pilot.pause()
    plan_list = pane.query_one("#whatif-plan", OptionList)
    await pilot.click(plan_list, offset=row_offset(plan_list, 0))  # a click only highlights
    assert planned_names(pane) == ["qwen3:8b", "f5-tts", "xtts-v2"], "a click only highlights"
    assert plan_list.highlighted == 0

    x, y = row_offset(plan_list, 0)
    await drag(pilot, plan_list, 2, "#whatif-plan", (x, y))
    assert planned_names(pane) == ["xtts-v2", "qwen3:8b", "f5-tts"], "a drag within the plan moves"

    await drag(pilot, plan_list, 0, "#whatif-catalog", (4, 3))
    assert planned_names(pane) == ["qwen3:8b", "f5-tts"], "a drag out of the plan removes"
    bar = pane.query_one("#whatif-bar", BudgetBar)
    assert [s.label for s in bar.segments if s.key.startswith("plan:")] == ["+qwen3:8b", "+f5-tts"]


async def test_keyboard_add_and_delete(whatif) -> None:
    _app, pilot, pane = whatif
    catalog_list = await filter_catalog(pilot, pane, "whisper")
    catalog_list.focus()
    catalog_list.highlighted = 0
    first = catalog_list.options[0].id
    await pilot.press("enter")
    await pilot.press("space")
    assert planned_names(pane) == [first, f"{first} #2"]

    plan_list = pane.query_one("#whatif-plan", OptionList)
    plan_list.focus()
    plan_list.highlighted = 1
    await pilot.press("delete")
    assert planned_names(pane) == [first]
    await pilot.press("delete")
    assert planned_names(pane) == []
    assert pane.query_one("#whatif-bar", BudgetBar).planned_bytes == 0


# Each bad number typed into the editor, the reason shown on one line, then the field put back (the reason
# goes, so the next one is not read from a stale line).
REFUSED_NUMBERS = [
    ("#field-parallel", "0", "must be at least 1"),
    ("#field-memory_gb", "inf", "must be finite"),  # int(inf) in the What-if bar ended the app
    ("#field-memory_gb", "1e400", "must be finite"),
    ("#field-context", "-4", "must be at least 1"),  # was "expected an integer"
    ("#field-parallel", "nan", "expected an integer"),
]


async def test_model_editor_rows_tab_order_dropdown_refusals_and_enter_applying_each_kind(whatif) -> None:
    """One editor on a model (~0.4 s of CPU to compose one; they were two), as the user sees and drives it:
    - the form, whatever containers lay it out (issue 33 moved its rows into one grid to open it sooner):
      each row's label, field and unit on one line, in the plan's order, the fields in one column, a switch's
      word right beside it; Tab goes from the first field to the next, and the focus chain Tab walks is the
      fields in that order, then Save and Cancel;
    - the model's dropdown lists every model of the catalog, shows the one chosen and picks another;
    - each refused value is refused by its field's check with the reason (the non-finite numbers of issue 13
      among them); on screen, Enter on one keeps the editor open with one line starting with the field's
      label, and the line goes once the field is put back;
    - each kind of field (a number typed in, a choice, a switch toggled with space) is applied together by
      Enter in a field, and nothing refused was kept; the verdict, its text and the bar follow.
    (ctrl+s: the training run's test; Esc: test_edit_escape_cancels_a_valid_change.)"""
    app, pilot, pane = whatif
    pane.baseline_mode = "clean"  # a clean machine (`b`: test_baseline_toggle_...): 70B at 4k and Q4 fits
    uid = pane.add("llama3.1:70b")
    assert pane.baseline().source == "clean"
    assert pane.evaluation is not None and pane.evaluation.fit.verdict == FITS
    assert "FITS" in verdict_text(pane)
    before = pane.evaluation.items[0].total.mid
    assert pane.plan is not None and pane.catalog is not None

    screen = await edit_selected(app, pilot, pane)
    fields = screen.query_one("#fields")
    params = list(screen.params.values())
    assert [p.key for p in params][:3] == ["label", "kind", "gpu_use"] and len(params) >= 10

    widths = set()
    for p in params:
        field = screen.query_one(f"#field-{p.key}")
        unit = screen.query_one(f"#unit-{p.key}", Label)
        label = next(w for w in fields.query(Label) if str(w.render()).startswith(p.label))
        assert label.region.x == fields.content_region.x, p.key
        assert label.region.y == field.region.y == unit.region.y, (p.key, label.region, field.region)
        assert label.region.right <= field.region.x, p.key
        if isinstance(field, Switch):
            assert unit.region.x == field.region.right, ("the word right beside the switch", p.key)
        else:
            assert field.region.x == label.region.right and unit.region.x == field.region.right, p.key
            assert unit.region.right == fields.content_region.right, p.key
            widths.add(field.region.width)
    assert len(widths) == 1, f"the fields share one column: {widths}"

    order = [f"field-{p.key}" for p in params] + ["save", "cancel"]
    assert app.focused is not None and app.focused.id == order[0], "the editor opens on its first field"
    await pilot.press("tab")
    assert app.focused is not None and app.focused.id == order[1], "Tab goes to the next field"
    chain = [w.id for w in screen.focus_chain]  # what Tab walks, round: from the first field on
    walked = (chain[chain.index(order[0]) :] + chain)[: len(order)]
    assert walked == order, ("Tab visits the fields in the form's order, then Save and Cancel", chain)

    model = screen.query_one("#field-model", Select)
    model.focus()
    await pilot.press("enter")  # the dropdown opens
    overlay = model.query_one(OptionList)
    assert overlay.display and app.focused is overlay, "Enter opens the model's dropdown"
    shown = [str(overlay.get_option_at_index(i).prompt) for i in range(overlay.option_count)]
    assert shown == list(pane.catalog.model_names()), "every model of the catalog, in its order"
    assert shown[overlay.highlighted or 0] == model.value == "llama-3.1-70b", "the dropdown shows the model"
    target = "qwen3-0.6b"
    for _ in range(shown.index(target) - shown.index("llama-3.1-70b")):
        await pilot.press("down")
    await pilot.press("enter")
    assert not overlay.display and model.value == target and app.focused is model, "the dropdown picks one"
    model.value = "llama-3.1-70b"  # back: the figures below are the 70B's (the choice applied: quant)

    for field_id, typed, words in REFUSED_NUMBERS:  # each field's own check, the one Enter and typing run
        result = screen.query_one(field_id, Input).validate(typed)
        assert result is not None and not result.is_valid, (field_id, typed)
        assert words in result.failure_descriptions[0], (field_id, typed, result.failure_descriptions)
    error = screen.query_one("#error", Static)
    for field_id, typed, words in REFUSED_NUMBERS[1::3]:  # on screen: a non-finite number, a non-integer
        field = screen.query_one(field_id, Input)
        field.focus()
        kept = field.value
        field.value = typed  # as typed (Input.Changed checks it the same), a key press a character less
        await pilot.press("enter")
        assert app.is_running and app.screen is screen, (field_id, typed)  # still open, with the reason
        message = str(error.render())
        label = screen.params[field_id.removeprefix("#field-")].label
        assert message.startswith(f"{label}: ") and words in message, (field_id, typed, message)
        assert "\n" not in message, (field_id, message)
        field.value = kept  # its Changed clears the line before the next value's sets it
    await pilot.pause()
    assert str(error.render()) == "", ("the line goes once the field is put back", str(error.render()))

    screen.query_one("#field-quant", Select).value = "Q8_0"
    switch = screen.query_one("#field-flash_attention", Switch)
    assert switch.value is True
    switch.focus()
    await pilot.press("space")  # a Switch toggles with space
    field = screen.query_one("#field-context", Input)
    field.focus()
    field.value = "131072"
    await pilot.press("enter")

    assert not isinstance(app.screen, PlanEditScreen), "Enter in a field saves and closes the editor"
    values = pane.plan.resolve(uid).values
    assert values["context"] == 131072, f"the number typed: {values}"
    assert values["quant"] == "Q8_0", f"the choice: {values}"
    assert values["flash_attention"] is False, f"the switch: {values}"
    overrides = pane.plan.item(uid).overrides
    assert set(overrides) == {"context", "quant", "flash_attention"}, f"nothing refused was kept: {overrides}"
    assert values["parallel"] == 1 and values["model"] == "llama-3.1-70b"
    ev = pane.evaluation
    assert ev is not None
    # the KV cache of 128k tokens, and 8.5 bits a weight instead of ~4.8
    assert ev.items[0].total.mid > max(before + 30e9, before * 1.5), (before, ev.items[0].total.mid)
    assert ev.fit.verdict != FITS
    assert ev.fit.verdict.upper() in verdict_text(pane) and "FITS" not in verdict_text(pane)
    bar = pane.query_one("#whatif-bar", BudgetBar)
    assert bar.planned_bytes == int(ev.items[0].total.mid), "the bar shows the edited plan"


class EditorHost(App[None]):
    """Nothing but the screen an editor opens over: the editor's own keys and fields, on a plan of the test's
    (`e` opening it on the tab and the tab following what it saved: test_model_editor_rows_...)."""

    def compose(self) -> ComposeResult:
        yield Static("host")


async def open_editor(app: App[None], pilot: Pilot, plan: Plan, uid: int) -> PlanEditScreen:
    """The editor of `uid`, once its fields are composed."""
    screen = PlanEditScreen(plan, uid)
    await app.push_screen(screen)
    await pilot.pause()
    return screen


async def test_edit_escape_cancels_a_valid_change() -> None:
    """Esc closes the editor and the plan is as it was, even with a valid change typed in (on a workload of
    few fields: its editor is a third of a model's to compose)."""
    plan = Plan(load_catalog(discover=False))
    uid = plan.add("thing", memory_gb=17, gpu_use="none").uid
    before = dumps_plan(plan)
    app = EditorHost()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_editor(app, pilot, plan, uid)
        field = screen.query_one("#field-memory_gb", Input)
        field.focus()
        field.value = "20"
        await pilot.pause()
        assert str(screen.query_one("#error", Static).render()) == ""  # a value it would take
        await pilot.press("escape")
        assert not isinstance(app.screen, PlanEditScreen), "Esc closes the editor"
    assert dumps_plan(plan) == before, "the change typed in is not kept"


async def test_baseline_toggle_and_follows_the_samples(whatif) -> None:
    """b: live → this machine empty → an empty DGX Spark → live; the live baseline follows each new sample
    (the pane's refresh_baseline, fed here the demo's next samples as the dashboard's tick feeds it: that the
    tick does is test_whatif_screen's test_the_whatif_pane_is_built_the_first_time_its_tab_opens)."""
    app, pilot, pane = whatif
    pane.add("qwen3:8b")
    live = pane.evaluation
    assert live is not None and live.baseline.source == "live"
    assert "already counted" in str(pane.query_one("#whatif-hint", Static).render())
    bar = pane.query_one("#whatif-bar", BudgetBar)
    assert any(s.key.startswith("container:") for s in bar.segments)

    await pilot.press("b")
    clean = pane.evaluation
    assert clean is not None and clean.baseline.source == "clean"
    assert clean.total.mid < live.total.mid
    assert [s.key for s in bar.segments if not s.key.startswith("plan:")] == ["host-other", "free"]
    host = app.session.latest.hostname if app.session.latest else None
    assert f"clean {host}" in str(pane.query_one("#whatif-head", Static).render())  # this machine, empty

    await pilot.press("b")  # then an empty DGX Spark (`plan --machine spark`)
    assert "clean DGX Spark" in str(pane.query_one("#whatif-head", Static).render())
    await pilot.press("b")
    assert pane.evaluation is not None and pane.evaluation.baseline.source == "live"
    # Each new sample moves the live baseline: the shared app's own session is left as it is.
    run = demo_session("default", 5)
    for _ in range(3):
        snap = run.sample()
        pane.refresh_baseline(snap)
        assert pane.evaluation is not None
        assert pane.evaluation.baseline.used.mid == float(snap.memory.used)
        assert bar.planned_bytes == int(pane.evaluation.items[0].total.mid)
    # The dashboard's own bar shows what is, never the plan.
    dashboard_bar = app.query_one("#bar", BudgetBar)
    assert dashboard_bar.planned_bytes == 0
    assert not any(s.key.startswith("plan:") for s in dashboard_bar.segments)


async def test_user_catalog_entry_arrives_through_the_worker(whatif) -> None:
    """The shared tab's catalog was loaded by its worker from the module's home (app_with_a_user_catalog)."""
    _app, pilot, pane = whatif
    catalog_list = await filter_catalog(pilot, pane, "my-tts")
    assert [o.id for o in catalog_list.options] == ["my-tts"]
    pane.add("my-tts")  # as a drag or Enter adds it (test_drag_from_catalog_..., test_keyboard_add_...)
    assert planned_names(pane) == ["my-tts"]
    assert pane.evaluation is not None
    parts = pane.evaluation.items[0].estimate.parts
    assert parts[0].bytes.mid == 12e9  # the user's figure (plus the CUDA context the planner adds)


async def test_catalog_loads_in_a_worker_and_filters(whatif) -> None:
    """The shared tab's catalog came in through its worker (shared_whatif waits for it); the filter."""
    _app, pilot, pane = whatif
    catalog_list = await filter_catalog(pilot, pane, "kind:training")
    ids = [o.id for o in catalog_list.options]
    assert ids and pane.catalog is not None
    assert all(pane.catalog.entries[i].kind == "training" for i in ids)
    await filter_catalog(pilot, pane, "no-such-workload-xyz")
    assert [o.id for o in catalog_list.options] == [None]


async def test_save_confirms_overwrite_and_load_reports_line(tmp_path: Path, whatif) -> None:
    """In a terminal session (files allowed, the default) the footer offers `s Save` and `l Load` and both
    open their dialog (a read-only browser session offers and opens neither: test_web_session_files)."""
    app, pilot, pane = whatif
    footer = footer_keys(app)
    assert footer.get("s") == "Save" and footer.get("l") == "Load", (
        "the footer offers the file keys",
        footer,
    )
    pane.add("qwen3:8b")
    target = tmp_path / "plan.toml"
    target.write_text("# keep me\n")
    pane.plan_path = target
    await pilot.press("s")
    assert isinstance(app.screen, PlanFileScreen)
    await pilot.press("enter")
    assert isinstance(app.screen, PlanFileScreen)  # asks first
    assert target.read_text() == "# keep me\n"
    assert "exists" in str(app.screen.query_one("#message", Static).render())
    await pilot.press("enter")  # confirmed
    assert not isinstance(app.screen, PlanFileScreen)
    assert 'name = "qwen3:8b"' in target.read_text()

    bad = tmp_path / "bad.toml"
    bad.write_text('[[workload]]\nname = "qwen3:8b"\ncontext = "lots"\n')
    await pilot.press("l")
    screen = app.screen
    assert isinstance(screen, PlanFileScreen)
    path_box = screen.query_one("#path", Input)
    path_box.value = str(bad)
    await pilot.press("enter")
    message = str(screen.query_one("#message", Static).render())
    assert message.startswith(f"{bad}:3: context:") and "\n" not in message
    path_box.value = str(target)
    await pilot.press("enter")
    assert not isinstance(app.screen, PlanFileScreen)
    assert planned_names(pane) == ["qwen3:8b"]
    assert isinstance(pane.plan, Plan)


async def test_esc_lets_go_of_the_find_box(whatif) -> None:
    """`/` then letters that are the tab's keys (l: load, e: edit) go into the find box; Esc clears it and
    gives the keys back to the catalog, and leaves an empty box all the same."""
    app, pilot, pane = whatif
    await pilot.press("slash", "l", "e")
    box = pane.query_one("#whatif-filter", Input)
    assert app.focused is box and box.value == "le", "the letters right after / are the box's"
    await pilot.press("escape")
    catalog = pane.query_one("#whatif-catalog", OptionList)
    assert app.focused is catalog and box.value == "", "Esc clears the box and leaves it"
    await pilot.press("slash", "escape")  # empty: Esc leaves it all the same
    assert app.focused is catalog and box.value == "", "Esc leaves an empty box"


async def test_whatif_plans_with_the_measured_peak_and_m_switches_back(whatif) -> None:
    """A peak measured on this machine (in the footprint store) is what a live baseline plans with; m plans
    with the estimate instead. (Was test_models_tab's, an app of its own on a live-looking demo.)"""
    from sparktop.core.snapshot import GB
    from sparktop.footprints.store import shared_store

    store = shared_store()  # this test's own XDG_STATE_HOME (tests/conftest.py)
    store.record("model", "ollama:llama3.1:70b", int(46.8 * GB))
    store.flush()
    _app, pilot, pane = whatif
    assert pane.snapshot is not None
    pane.refresh_baseline(pane.snapshot.model_copy(update={"source": "live"}))
    pane.add("llama3.1:70b")
    assert pane.evaluation is not None
    item = pane.evaluation.items[0]
    assert item.total.mid == 46.8 * GB, "the measured peak, not the estimate"
    assert any("measured here: peak 46.8 GB" in w for w in item.warnings), item.warnings
    await pilot.press("m")
    assert pane.evaluation.items[0].total.mid != 46.8 * GB, "m: the estimate alone"


async def test_edit_a_training_run_switch_words_loss_kernel_and_workers_and_ctrl_s_saves() -> None:
    """Flash attention and checkpointing showed their state by colour only: the word beside a switch says on
    or off, both ways. Then the loss kernel and the dataloader workers of a training run, saved with ctrl+s:
    the run's memory and host side follow, and the plan file says it."""
    catalog = load_catalog(discover=False)
    plan = Plan(catalog)
    uid = plan.add(kind="training", model="qwen3-0.6b", batch=8, seq_len=1024).uid
    before = estimate_workload(plan.resolve(uid), catalog)
    app = EditorHost()
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await open_editor(app, pilot, plan, uid)
        switch = screen.query_one("#field-efficient_attention", Switch)
        row = switch.parent
        assert row is not None
        assert screen.query_one("#field-gradient_checkpointing", Switch).parent is not None

        def row_text() -> str:
            return " ".join(str(w.render()) for w in row.query(Label))

        first = switch.value
        assert row_text().split()[-1] == ("on" if first else "off"), row_text()
        for value in (not first, first):  # toggled, then back: the word follows each way
            switch.focus()
            await pilot.press("space")
            assert row_text().split()[-1] == ("on" if value else "off"), ("the switch's word", row_text())

        loss = screen.query_one("#field-loss", Select)
        assert loss.value == "hf"
        loss.value = "fused"
        workers = screen.query_one("#field-dataloader_workers", Input)
        workers.focus()
        workers.value = ""
        await pilot.press("4", "ctrl+s")
        assert not isinstance(app.screen, PlanEditScreen), "ctrl+s saves and closes the editor"
    values = plan.resolve(uid).values
    assert values["loss"] == "fused" and values["dataloader_workers"] == 4, values
    assert values["efficient_attention"] is first, "a switch toggled twice is left as it was"
    after = estimate_workload(plan.resolve(uid), catalog)
    assert after.total.mid < before.total.mid - 14e9  # no full logits kept
    assert after.side_total("host").mid > before.side_total("host").mid
    assert 'loss = "fused"' in dumps_plan(plan)


def small_machine(used_gb: float = 3.0, total_gb: float = 25.3):
    """A 25 GB machine with a GPU, as a live sample."""
    return snapshot(
        total=int(total_gb * 1e9), used=int(used_gb * 1e9), free=0, gpus=[spark_gpu()], hostname="small"
    )


async def test_the_tab_and_sparktop_plan_agree_on_a_small_machine(capsys, whatif) -> None:
    import json

    from sparktop.commands.plan import main as plan_main

    snap = small_machine()
    _app, _pilot, pane = whatif
    pane.refresh_baseline(snap)
    assert pane.plan is not None
    pane.plan.add("thing", memory_gb=17, gpu_use="none")
    pane.set_plan(pane.plan)
    ev = pane.evaluation
    assert ev is not None and ev.baseline.source == "live"
    # 20 GB on a 25.3 GB machine: over its scaled aggressive line (100/128 of the pool), not "under 80 GB"
    assert ev.lines.scaled and ev.lines.safe == pytest.approx(25.3e9 * 80 / 128)
    assert ev.fit.verdict == "OOM risk"
    text = verdict_text(pane)
    assert "OOM RISK" in text and "under the 80 GB safe line" not in text
    bar = pane.query_one("#whatif-bar", BudgetBar)
    assert bar.state == "over-aggressive"  # the bar draws the verdict's lines, not 80/100 GB
    shown = str(bar.render())  # the bar's lines at its width, as drawn
    assert "safe 15.8 GB" in shown and "15.81" not in shown  # a scaled line, at the figures it has
    tab_reason = ev.fit.reason

    code = plan_main(
        ["--json", "--no-discover", "thing,memory_gb=17,gpu_use=none"], baseline_provider=lambda: snap
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 2 and data["fit"] == "OOM risk"
    assert data["fit_detail"]["reason"] == tab_reason
    assert data["lines_gb"]["safe"] == pytest.approx(25.3 * 80 / 128, abs=0.01)


async def test_the_tab_plans_gpu_memory_against_a_discrete_gpu(whatif) -> None:
    import time

    from sparktop.core.snapshot import GpuProcess, GpuReport, GpuState, HostMemory, Snapshot

    gpu = GpuState(
        index=0,
        name="NVIDIA H100 80GB HBM3",
        sm_count=132,
        unified_memory=False,
        utilization_pct=100.0,
        memory_total=int(79.6e9),
        memory_used=int(10.78e9),
        processes=[GpuProcess(pid=9, used_bytes=int(10.78e9))],
    )
    total = int(64e9)
    snap = Snapshot(
        timestamp=time.time(),
        memory=HostMemory(total=total, available=total - int(6e9), free=0),
        gpu=GpuReport(available=True, gpus=[gpu]),
        hostname="h100-box",
    )
    _app, _pilot, pane = whatif
    pane.refresh_baseline(snap)
    assert pane.plan is not None
    pane.plan.add(kind="training", model="qwen3-0.6b", batch=16, seq_len=1024)
    pane.set_plan(pane.plan)
    ev = pane.evaluation
    assert ev is not None and ev.gpu_fit is not None
    assert ev.gpu_fit.verdict == "won't fit" and ev.fit.verdict == "fits"
    text = verdict_text(pane)
    assert "GPU mem  WON'T FIT" in text and "Memory   FITS" in text
    # the GPU at 100 % is running work that joins the compute verdict, with the device's own SM count
    assert "running now (pid 9) and sft qwen3-0.6b share the 132 SMs" in text


async def test_the_baseline_head_is_styled_in_both_modes_and_quotes_a_host_plainly() -> None:
    """The head is built from a markup template with the values put in as text: a host named like markup
    is shown as it is, and neither mode shows a markup tag. With no app: the head's own text function (the
    pane draws what it returns: test_baseline_toggle_and_follows_the_samples reads the pane's head in each
    mode). (Async only as the module's tests are.)"""
    latest = demo_session("default", 5).session.latest
    assert latest is not None
    snap = latest.model_copy(update={"hostname": "[/b]evil[red]"})
    live, _hint = baseline_head(Baseline.from_snapshot(snap), snap, "live", "GiB", 118)
    assert "[/b]evil[red]" in live.plain and "[dim]" not in live.plain, live.plain
    clean, _hint = baseline_head(Baseline.clean_of(snap), snap, "clean", "GiB", 118)
    assert "clean [/b]evil[red]" in clean.plain and "[b]" not in clean.plain and "[dim]" not in clean.plain
    assert isinstance(clean, Content)
    assert any(clean.plain[span.start : span.end] == "clean [/b]evil[red]" for span in clean.spans), "bold"


async def test_the_catalog_and_plan_borders_show_in_a_browser_too(whatif_app) -> None:
    """The plan's border was OptionList's `tall` one in `$border-blurry`: eighth-block glyphs that the browser
    view (xterm.js) draws as a hairline, in a colour close to the background: nearly invisible. (Styles
    only: the shared tab as it is, not reset.)"""
    app, _pilot, pane = whatif_app
    for list_id in ("#whatif-plan", "#whatif-catalog"):
        box = pane.query_one(list_id, OptionList)
        edges = (box.styles.border_top, box.styles.border_right, box.styles.border_bottom,
                 box.styles.border_left)  # fmt: skip
        for kind, color in edges:
            assert kind == "round", (list_id, kind)
            background = app.screen.styles.background
            assert color.a >= 0.5 and abs(color.brightness - background.brightness) > 0.2, (
                list_id,
                color,
            )


def pool_figures(pane: WhatIfPane) -> tuple[str, str, str]:
    """The pool as the head, the verdict and the bar's title give it (an empty plan: the verdict names the
    pool, "FITS 79.0 GB of 130.7 GB")."""
    head = str(pane.query_one("#whatif-head", Static).render())
    assert pane.evaluation is not None
    verdict = pane.evaluation.fit.reason
    title = str(pane.query_one("#whatif-bar", BudgetBar).render_line(0).text)
    (in_head,) = re.findall(r"\(pool (\d+(?:\.\d+)?) GB", head)
    (in_verdict,) = re.findall(r"GB of (\d+(?:\.\d+)?) GB", verdict)
    assert in_head == in_verdict, (head, verdict)
    return in_head, verdict, title


async def test_the_head_gives_the_pool_as_the_verdict_and_the_bar_do(whatif) -> None:
    """ "pool 131 GB" in the head beside "of 130.7 GB" in the verdict and on the bar read as two pools
    (issue 32, Rough): one figure for the pool on the screen. In GiB (the shared tab's units); in GB below."""
    _app, _pilot, pane = whatif
    pool_figures(pane)


async def test_the_head_gives_the_pool_as_the_verdict_and_the_bar_do_in_gb(whatif) -> None:
    """The same, with the config's units in GB: the shared tab drawn again in them (the pane reads the
    app's config on each redraw), then put back."""
    app, pilot, pane = whatif
    units = app.config.units
    app.config.units = "GB"
    try:
        assert pane.plan is not None
        pane.set_plan(pane.plan)
        await pilot.pause()
        in_head, _verdict, title = pool_figures(pane)
    finally:
        app.config.units = units
    assert f"of {in_head} GB" in title, title


def catalog_rows(pane: WhatIfPane) -> list[str]:
    options = pane.query_one("#whatif-catalog", OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


async def test_at_60x18_the_plan_shows_its_rows_the_head_is_one_line_and_rows_keep_their_size(whatif) -> None:
    """Issue 32, Rough, at 60x18 (one resize for the four, ~0.2 s each way):
    - the catalog is sorted by name and each row tells its model apart (the name right after the size, the
      kind after it, cut first);
    - the plan list got 45 % of what was left: its borders and no row. A short pane drops the hint and folds
      the legend to one line, and the plan keeps three rows;
    - the head wrapped between "pool 130.7" and its "GB": it drops what does not fit, in each baseline;
    - a plan row was cut at "4.5 GB…": a row's name gives way to its size."""
    _app, pilot, pane = whatif
    await pilot.resize_terminal(60, 18)
    rows = catalog_rows(pane)
    names = [row[6:].split("  ")[0] for row in rows]
    assert names == sorted(names, key=str.lower), ("the catalog is sorted by name", names)
    catalog = pane.query_one("#whatif-catalog", OptionList)
    width = catalog.scrollable_content_region.width - 1  # the option's own padding
    llamas = [row[:width] for row in rows if "llama" in row]
    assert len(llamas) > 3 and len(set(llamas)) == len(llamas), ("each row tells its model apart", llamas)

    for name in ("llama3.1:8b", "gemma2:27b", "chatterbox-tts"):
        pane.add(name)
    await pilot.pause()
    plan_list = pane.query_one("#whatif-plan", OptionList)
    assert plan_list.scrollable_content_region.height >= 3, ("the plan keeps three rows", plan_list.size)
    drawn = plan_list.render_lines(plan_list.region.reset_offset)  # the list as it is drawn, borders in
    text = "\n".join(strip.text for strip in drawn)
    assert "llama3.1:8b" in text and "gemma2:27b" in text and "chatterbox" in text, text
    assert not pane.query_one("#whatif-hint", Static).display, "a short pane drops the hint"
    rows = [str(option.prompt) for option in plan_list.options]
    assert len(rows) == 3 and all(re.search(r"\d+\.\d GB", row) for row in rows), (
        "rows keep their size",
        rows,
    )
    width = 60 // 2 - 4  # the plan list's half of the screen, less its border and padding
    assert all(len(row) <= width for row in rows), ("rows fit their half", rows)
    head = pane.query_one("#whatif-head", Static)
    heads = [(head.size.height, str(head.render()))]
    for _ in range(2):  # live, then clean, then Spark
        await pilot.press("b")
        await pilot.pause()
        heads.append((head.size.height, str(head.render())))
    assert all(height == 1 for height, _ in heads), ("the head is one line", heads)
    assert all(re.search(r"\(pool \d+\.\d GB\)", text) for _, text in heads), heads
    # Back in a tall terminal the hint is there again.
    await pilot.resize_terminal(120, 36)
    await pilot.pause()
    assert pane.query_one("#whatif-hint", Static).display, "the hint is back in a tall terminal"


async def test_the_head_gives_what_is_in_use_as_the_verdict_does_and_fits_80_columns() -> None:
    """ "127 GB in use" in the head beside "OOM RISK 126.5 GB" in the verdict (issue 32, Rough); with the
    pool to one decimal the head wrapped at 80 columns: it leaves out the pool in GiB there instead. With no
    app: the head's own text function at 80 columns (less the head's padding) over the critical demo's
    session, as make_app(scenario="critical", warmup=5) shows it; the test above checks the pane's width at
    60 columns. (Async only as the module's tests are.)"""
    snap = demo_session("critical", 5).session.latest
    assert snap is not None
    config = Config()
    baseline = Baseline.from_snapshot(snap)
    lines = LineChoice.of(config)
    verdict = evaluate(Plan(Catalog()), baseline, lines.safe, lines.aggressive).fit.reason
    head, _hint = baseline_head(baseline, snap, "live", config.units, 80 - 2)
    text = head.plain
    assert head.cell_length <= 80 - 2, text
    (in_head,) = re.findall(r"live: (\d+(?:\.\d+)?) GB in use", text)
    assert re.match(rf"{re.escape(in_head)} GB: over", verdict), (text, verdict)
    assert "pool 130.7 GB" in text, text


async def test_the_tab_keys_its_footer_and_number_keys_leave_from_either_list(whatif) -> None:
    """One walk through the tabs (each switch redraws a tab: ~0.1 s; they were three tests). Last in the
    module: it leaves the Dashboard tab shown, and the next test's reset would switch back.
    - the footer's entries on this tab, written as it writes them, fit 100 columns (counted: no resize),
      and the tables' keys are off it (on again on the Containers tab);
    - `w` on the What-if tab took the focus off its catalog (the tab "left" was the tab shown), and the
      arrows then moved nothing; `2` on the Containers tab likewise;
    - a number key leaves the What-if tab while either of its lists has the focus."""
    from sparktop.ui.screens.dashboard import ContainersTable

    app, pilot, pane = whatif
    shown = {k: a.binding for k, a in app.screen.active_bindings.items() if a.binding.show}
    assert "o" not in shown and "slash" not in shown, "the tables' keys are off this tab"
    # As the footer writes them: one entry per binding, its keys' display and description.
    entries = {(b.action, b.description): f"{app.get_key_display(b)} {b.description}" for b in shown.values()}
    text = "  ".join(entries.values())
    assert len(text) + 14 <= 100, text  # fits beside "^p palette"

    catalog = pane.query_one("#whatif-catalog", OptionList)
    assert app.focused is catalog
    await pilot.press("w")
    assert app.focused is catalog, "w on the What-if tab leaves the keys on its catalog"
    await pilot.press("2")
    assert app.query_one(TabbedContent).active == "containers", "2 leaves the tab from its catalog"
    table = app.query_one(ContainersTable)
    assert app.focused is table
    keys = {k for k, a in app.screen.active_bindings.items() if a.binding.show}
    assert "o" in keys and "slash" in keys, "the tables' keys are back on the Containers tab"
    await pilot.press("2")
    assert app.focused is table, "2 on the Containers tab leaves the keys on its table"
    await pilot.press("w", "tab")
    assert app.focused is pane.query_one("#whatif-plan", OptionList)
    await pilot.press("1")
    assert app.query_one(TabbedContent).active == "dashboard", "1 leaves the tab from its plan"
