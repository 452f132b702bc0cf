"""The What-if tab: pick workloads from the catalog into a plan and see, as the plan changes, the projected
budget bar (what is in use now plus each planned workload as its own segment, same thresholds as the
dashboard) and the planner's verdicts (fit, compute, decode speeds, slowdowns).

The pane owns the plan; the lists (plan_board.py) only ask for changes. The dashboard calls
`refresh_baseline(snapshot)` on each new sample; `b` goes from that live baseline to this machine empty (as
`plan --clean`) and to an empty DGX Spark (`plan --machine spark`).
The catalog may read local model files, so unless one is given it loads in a thread worker.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Input, Static
from textual.widgets.option_list import Option

from sparktop.analysis.lines import LineChoice
from sparktop.core.snapshot import Accounting, Consumer, Snapshot
from sparktop.plan.catalog.params import kind_label
from sparktop.ui.themes import Palette
from sparktop.ui.widgets.budget_bar import BudgetBar, Segment
from sparktop.ui.widgets.plan_board import CatalogList, PlanList, set_options_keeping

# The catalog and the planner (~0.1 s of imports) are imported where they are used, mostly in the catalog
# worker: the dashboard's first frame does not wait for a tab that is not shown yet.
if TYPE_CHECKING:
    from sparktop.plan import Baseline, Evaluation, Plan
    from sparktop.plan.catalog import Catalog
    from sparktop.plan.measured import LiveFacts

DEFAULT_PLAN_FILE = "plan.toml"


@dataclass(frozen=True)
class WhatIfContext:
    """What the pane needs from the dashboard each time it redraws."""

    snapshot: Snapshot | None
    lines: LineChoice  # the user's lines (analysis/lines.py), placed on the baseline's pool by `evaluate`
    units: str
    palette: Palette


def entry_sizes(catalog: Catalog) -> dict[str, float]:
    """Each entry's estimate alone (mid, bytes), for the catalog list; entries that cannot resolve are left
    out."""
    from sparktop.plan import Plan, PlanError, estimate_workload

    sizes: dict[str, float] = {}
    scratch = Plan(catalog)
    for entry in catalog.entries.values():
        try:
            item = scratch.add(entry.name)
            sizes[entry.name] = estimate_workload(scratch.resolve(item), catalog).total.mid
        except PlanError:
            continue
    return sizes


class WhatIfPane(Vertical):
    """The whole What-if tab. `catalog`: a Catalog, or a function that loads one (run in a thread), or None
    for `load_catalog()`. `context`: returns the latest snapshot, thresholds, units and palette."""

    DEFAULT_CSS = """
    WhatIfPane { height: 1fr; }
    WhatIfPane #whatif-head { height: auto; padding: 0 1; }
    WhatIfPane #whatif-hint { height: auto; padding: 0 1; color: $text-muted; }
    WhatIfPane #whatif-bar { padding: 0 1; }
    WhatIfPane #whatif-body { height: 1fr; }
    WhatIfPane #whatif-catalog-side { width: 1fr; min-width: 30; }
    WhatIfPane #whatif-plan-side { width: 1fr; }
    WhatIfPane #whatif-filter { height: 1; border: none; padding: 0 1; margin: 0 1; background: $boost; }
    WhatIfPane #whatif-filter:focus { background: $primary 20%; }
    WhatIfPane #whatif-catalog { height: 1fr; }
    WhatIfPane #whatif-plan { height: auto; min-height: 5; max-height: 45%; }
    WhatIfPane #whatif-verdicts-box { height: 1fr; padding: 0 1; }
    WhatIfPane #whatif-verdicts { height: auto; }
    /* A short terminal (60x18): no hint, a one-line legend, and the plan keeps three rows (45 % of what was
       left gave it its borders alone). */
    WhatIfPane.-cramped #whatif-hint { display: none; }
    WhatIfPane.-cramped #whatif-plan { max-height: 5; }
    """

    CRAMPED_ROWS = 18  # a pane shorter than this is drawn -cramped

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("b", "toggle_baseline", "Baseline"),
        Binding("m", "toggle_measured", "Measured/estimate", show=False),
        Binding("e", "edit", "Edit"),
        Binding("s", "save", "Save"),
        Binding("l", "load", "Load"),
        # A read-only browser session offers neither (check_action hides them); the keys still say why.
        Binding("s,l", "refuse_files", "Save / Load", show=False),
        # Priority, as the tables' `/`: the letters typed right after it must reach the find box.
        Binding("slash", "focus_filter", "Find", show=False, priority=True),
    ]

    def __init__(
        self,
        catalog: Catalog | Callable[[], Catalog] | None = None,
        *,
        context: Callable[[], WhatIfContext],
        plan_path: Path | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self._catalog_source = catalog
        self.context = context
        self.catalog: Catalog | None = None
        self.plan: Plan | None = None
        self.sizes: dict[str, float] = {}
        self.baseline_mode = "live"  # "live" | "clean"
        self.use_measured = True  # plan with peaks measured on this machine where there are some (m)
        self.snapshot: Snapshot | None = None
        self.evaluation: Evaluation | None = None
        self.plan_path = plan_path or Path.cwd() / DEFAULT_PLAN_FILE
        self._stale = False

    def compose(self) -> ComposeResult:
        yield Static("", id="whatif-head", markup=False)  # updated with Content only: styled, never parsed
        yield Static("", id="whatif-hint", markup=False)
        yield BudgetBar(id="whatif-bar")
        with Horizontal(id="whatif-body"):
            with Vertical(id="whatif-catalog-side"):
                yield FindBox(placeholder="find: words, kind:training, source:local", id="whatif-filter")
                yield CatalogList(id="whatif-catalog")
            with Vertical(id="whatif-plan-side"):
                yield PlanList(id="whatif-plan")
                with VerticalScroll(id="whatif-verdicts-box"):
                    yield Static("", id="whatif-verdicts", markup=False)

    def on_resize(self) -> None:
        cramped = 0 < self.size.height < self.CRAMPED_ROWS
        if cramped != self.has_class("-cramped"):
            self.set_class(cramped, "-cramped")
            self.query_one("#whatif-bar", BudgetBar).legend_lines = 1 if cramped else 2
        if self.evaluation is not None or self.plan is not None:
            self._update()  # the head's wording and the legend follow the size

    def on_mount(self) -> None:
        bar = self.query_one("#whatif-bar", BudgetBar)
        bar.legend_lines = 2
        bar.show_scale = False
        catalog_list = self.query_one("#whatif-catalog", CatalogList)
        catalog_list.border_title = "Catalog"
        catalog_list.border_subtitle = "GB · name · kind"
        plan_list = self.query_one("#whatif-plan", PlanList)
        plan_list.border_title = "Plan"
        plan_list.border_subtitle = "drag in/out · Del removes · e edits"
        source = self._catalog_source
        self.snapshot = self.context().snapshot
        if source is not None and not callable(source):  # a Catalog, given ready
            self._catalog_ready(source, entry_sizes(source))
            return
        self.query_one("#whatif-catalog", CatalogList).set_options(
            [Option("loading the catalog…", disabled=True)]
        )
        plan_list.set_options([Option(Content.styled("loading…", "dim"), disabled=True)])
        if self.snapshot is not None:  # opened on a running dashboard: its baseline and bar at once
            self._update()
        # Loaded after the first frame is painted, so the thread's imports do not compete with it; the pane
        # is drawn when the catalog (or its error) comes back.
        self.call_after_refresh(self._load_catalog, source)

    # -- catalog ---------------------------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="whatif-catalog", exit_on_error=False)
    def _load_catalog(self, loader: Callable[[], Catalog] | None) -> None:
        try:
            if loader is None:
                from sparktop.plan.catalog import load_catalog

                loader = load_catalog
            catalog = loader()
            sizes = entry_sizes(catalog)
        except Exception as exc:  # a broken catalog must not take the dashboard down
            self.app.call_from_thread(self._catalog_failed, f"cannot load the catalog: {exc}")
            return
        self.app.call_from_thread(self._catalog_ready, catalog, sizes)

    def _catalog_failed(self, message: str) -> None:
        self.query_one("#whatif-catalog", CatalogList).set_options([Option(message, disabled=True)])
        self._update()

    def _catalog_ready(self, catalog: Catalog, sizes: dict[str, float]) -> None:
        from sparktop.plan import Plan

        self.catalog, self.sizes = catalog, sizes
        if self.plan is None or self.plan.catalog is not catalog:
            self.plan = Plan(catalog)
        for error in catalog.errors[:3]:
            self.app.notify(error, title="catalog", severity="warning", timeout=8, markup=False)
        remember = getattr(self.app, "remember", None)
        if len(catalog.errors) > 3 and remember is not None:
            for error in catalog.errors[3:]:
                remember(error, "catalog")
            self.app.notify(
                f"{len(catalog.errors) - 3} more catalog problems: M shows them all", timeout=8, markup=False
            )
        self._fill_catalog()
        self._update()

    def _fill_catalog(self) -> None:
        from sparktop.plan.estimate import GB

        if self.catalog is None:
            return
        from sparktop.plan.measured import measured_line

        entries = sorted(
            self.catalog.list(self.query_one("#whatif-filter", Input).value), key=lambda e: e.name.lower()
        )
        peaks = self._facts().entry_peaks(entries)
        options = []
        for e in entries:
            size = self.sizes.get(e.name)
            gb = f"{size / GB:5.1f}" if size is not None else "    ?"
            measured = peaks.get(e.name)
            note = f"  {measured_line(measured)}" if measured else ""
            # The name before the kind: on a narrow screen the end is cut, and the name is what tells apart.
            prompt = Content.assemble(
                (f"{gb} ", "dim"), e.name, (f"  {kind_label(e.kind, e.engine)}", "dim"), (note, "dim")
            )
            options.append(Option(prompt, id=e.name))
        if not options:
            options = [Option("nothing matches", disabled=True)]
        set_options_keeping(self.query_one("#whatif-catalog", CatalogList), options)

    @on(Input.Changed, "#whatif-filter")
    def _filter_changed(self) -> None:
        self._fill_catalog()

    @on(Input.Submitted, "#whatif-filter")
    def _filter_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#whatif-catalog", CatalogList).focus()

    # -- the plan --

    def add(self, name: str, index: int | None = None) -> int | None:
        """Add a catalog entry to the plan (at `index`); its uid, or None with the error shown."""
        from sparktop.plan import PlanError

        if self.plan is None:
            return None
        try:
            item = self.plan.add(name)
        except PlanError as exc:
            self.app.notify(str(exc), title="plan", severity="error", timeout=6, markup=False)
            return None
        if index is not None:
            self.plan.move(item.uid, index)
        self._update(highlight=item.uid)
        return item.uid

    def remove_item(self, uid: int) -> None:
        """Take a workload out of the plan (not Widget.remove, which this pane keeps)."""
        if self.plan is None:
            return
        try:
            self.plan.remove(uid)
        except KeyError:
            return
        self._update()

    def move(self, uid: int, index: int) -> None:
        if self.plan is not None:
            self.plan.move(uid, index)
            self._update(highlight=uid)

    def set_plan(self, plan: Plan) -> None:
        self.plan = plan
        self._update()

    @on(CatalogList.AddRequested)
    def _add_requested(self, event: CatalogList.AddRequested) -> None:
        event.stop()
        self.add(event.name, event.index)

    @on(PlanList.RemoveRequested)
    def _remove_requested(self, event: PlanList.RemoveRequested) -> None:
        event.stop()
        self.remove_item(event.uid)

    @on(PlanList.MoveRequested)
    def _move_requested(self, event: PlanList.MoveRequested) -> None:
        event.stop()
        self.move(event.uid, event.index)

    # -- baseline --

    def refresh_baseline(self, snapshot: Snapshot | None) -> None:
        """A new sample from the app: the live baseline moves with it."""
        self.snapshot = snapshot
        if self.baseline_mode == "live":
            if self.region.area:
                self._update()
            else:
                self._stale = True  # on a hidden tab: redraw when it is shown

    def baseline(self) -> Baseline:
        """live: what runs now; clean: this machine empty (as `plan --clean`); spark: an empty DGX Spark (as
        `plan --machine spark`, and what clean falls back to before the first sample)."""
        from sparktop.plan import Baseline

        snap = self.snapshot
        if snap is None or self.baseline_mode == "spark":
            return Baseline.clean()
        if self.baseline_mode == "live":
            return Baseline.from_snapshot(snap)
        return Baseline.clean_of(snap)

    def _facts(self) -> LiveFacts:
        """What this machine knows beyond the estimates: peaks measured here (a live source only: a demo
        must not read the user's store), and what runs now (a live baseline only)."""
        from sparktop.plan.measured import LiveFacts

        snap = self.snapshot
        footprints = slowdowns = None
        if snap is not None and snap.source == "live":
            from sparktop.footprints.store import shared_store

            footprints, slowdowns = shared_store().all, shared_store().slowdowns
        return LiveFacts(
            footprints=footprints,
            snapshot=snap if self.baseline_mode == "live" else None,
            use_measured=self.use_measured,
            slowdowns=slowdowns,
        )

    def action_toggle_measured(self) -> None:
        """Plan with the peaks measured on this machine, or with the estimates alone."""
        self.use_measured = not self.use_measured
        said = "peaks measured here where known" if self.use_measured else "the estimates alone"
        self.notify(f"planning with {said}", title="What-if", markup=False)
        self._update()

    def action_toggle_baseline(self) -> None:
        """b: live → this machine empty → an empty DGX Spark → live."""
        self.baseline_mode = {"live": "clean", "clean": "spark"}.get(self.baseline_mode, "live")
        self._update()

    # -- drawing ---------------------------------------------------------------------------------------------

    def _update(self, highlight: int | None = None) -> None:
        ctx = self.context()
        if self.snapshot is None and ctx.snapshot is not None:
            self.snapshot = ctx.snapshot
        from sparktop.plan import evaluate

        baseline = self.baseline()
        # One verdict engine for this tab and `sparktop plan`: the user's lines where the config sets its own,
        # else the reference's, scaled to the pool (analysis/lines.py); the bar draws the same lines.
        self.evaluation = (
            evaluate(self.plan, baseline, ctx.lines.safe, ctx.lines.aggressive, facts=self._facts())
            if self.plan is not None
            else None
        )
        self._draw_head(baseline, ctx.units)
        self._draw_bar(baseline, ctx)
        self._draw_plan(highlight)
        self._draw_verdicts()

    def _draw_head(self, baseline: Baseline, units: str) -> None:
        head, hint = baseline_head(baseline, self.snapshot, self.baseline_mode, units, self.size.width - 2)
        self.query_one("#whatif-head", Static).update(head)
        self.query_one("#whatif-hint", Static).update(hint)

    def _draw_bar(self, baseline: Baseline, ctx: WhatIfContext) -> None:
        snap = self.snapshot
        if baseline.source == "live" and snap is not None and snap.accounting is not None:
            accounting = snap.accounting  # the session accounts every snapshot it hands out
            total = snap.memory.total
        else:
            used = int(baseline.used.mid)
            system = Consumer(key="host-other", label="system (clean)", kind="host-other", cpu_bytes=used)
            accounting = Accounting(used=used, consumers=[system])
            total = int(baseline.pool)
        planned = []
        colors = ctx.palette.segments[::-1]  # the other end of the palette from the live consumers
        for i, r in enumerate(self.evaluation.items if self.evaluation else []):
            planned.append(Segment(f"plan:{r.uid}", f"+{r.name}", int(r.total.mid), colors[i % len(colors)]))
        # The bar draws the lines the verdict used (scaled to a small pool, as `sparktop plan` does).
        lines = self.evaluation.lines if self.evaluation is not None else ctx.lines.at(total)
        safe, high = lines.safe_bytes, lines.max_bytes
        bar = self.query_one("#whatif-bar", BudgetBar)
        bar.show(accounting, total, safe, high, ctx.units, ctx.palette, planned=planned)

    def _draw_plan(self, highlight: int | None) -> None:
        from sparktop.plan.estimate import GB

        plan_list = self.query_one("#whatif-plan", PlanList)
        ev = self.evaluation
        if ev is None or not ev.items:
            text = "loading…" if self.plan is None else "empty: drag workloads here"
            plan_list.set_options([Option(Content.styled(text, "dim"), disabled=True)])
            return
        # In a narrow list the name gives way to the size, and the speed and the slowdown come only where
        # they fit: the list cut "4.5 GB…" at 60 columns.
        room = plan_list.scrollable_content_region.width or 80
        width = max(6, min(20, max(len(r.name) for r in ev.items), room - 13))
        options = []
        for r in ev.items:
            name = r.name if len(r.name) <= width else r.name[: width - 1] + "…"
            warn = "  ⚠" if r.warnings else ""
            figures = f"  {r.total.mid / GB:6.1f} GB"
            extras = []
            if r.decode:
                extras.append(
                    f"~{r.decode.mid:.0f} tok/s" if r.decode.mid >= 10 else f"~{r.decode.mid:.1f} tok/s"
                )
            if r.slowdown and r.slowdown > 1.05:
                extras.append(f"×{r.slowdown:.1f} slower")
            for extra in extras:
                if width + len(figures) + 2 + len(extra) + len(warn) <= room:
                    figures += f"  {extra}"
            prompt = Content.assemble(name.ljust(width), (figures, "dim"), (warn, "$warning"))
            options.append(Option(prompt, id=str(r.uid)))
        set_options_keeping(plan_list, options)
        if highlight is not None:
            plan_list.highlighted = plan_list.get_option_index(str(highlight))

    def _draw_verdicts(self) -> None:
        ev = self.evaluation
        self.query_one("#whatif-verdicts", Static).update("" if ev is None else verdict_text(ev))

    # -- actions ---------------------------------------------------------------------------------------------

    def _selected_uid(self) -> int | None:
        return self.query_one("#whatif-plan", PlanList).highlighted_uid

    def action_edit(self) -> None:
        uid = self._selected_uid()
        if self.plan is None or uid is None:
            self.app.notify("highlight a planned workload to edit it", timeout=3, markup=False)
            return
        from sparktop.ui.screens.plan_edit import PlanEditScreen

        self.app.push_screen(PlanEditScreen(self.plan, uid), lambda changed: self._update(highlight=uid))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        files = bool(getattr(self.app, "files_allowed", True))
        if action in ("save", "load"):
            return files  # False: not offered in the footer, and the key falls to refuse_files
        if action == "refuse_files":
            return not files
        return True

    def action_refuse_files(self) -> None:
        self._refuse_files()

    def _refuse_files(self) -> bool:
        """A read-only browser session (SparktopApp.files_allowed) offers no file dialog: says so."""
        if getattr(self.app, "files_allowed", True):
            return False
        self.app.explain_no_files()  # type: ignore[attr-defined]
        return True

    def action_save(self) -> None:
        from sparktop.ui.screens.plan_file import PlanFileScreen

        if self.plan is None or self._refuse_files():
            return
        self.plan.baseline = self.baseline_mode  # `plan --file` judges it against the same one
        self.app.push_screen(PlanFileScreen("save", self.plan, self.plan_path), self._saved)

    def _saved(self, result: object) -> None:
        if isinstance(result, Path):
            self.plan_path = result
            self.app.notify(f"plan saved to {result}", timeout=4, markup=False)

    def action_load(self) -> None:
        from sparktop.ui.screens.plan_file import PlanFileScreen

        if self.plan is None or self._refuse_files():
            return
        self.app.push_screen(PlanFileScreen("load", self.plan, self.plan_path), self._loaded)

    def _loaded(self, result: object) -> None:
        from sparktop.plan import Plan

        if isinstance(result, Plan):
            if result.baseline is not None:
                self.baseline_mode = result.baseline
            self.set_plan(result)
            self.app.notify(f"plan loaded: {len(result)} workloads", timeout=4, markup=False)

    def action_focus_filter(self) -> None:
        # At once, not after the keys already queued as `focus()` would: `/gemma2:27b` typed in one go
        # lost its first letters to the catalog's keys (`e` edit, `m` measured) and showed `mma2:27b`.
        if isinstance(self.screen.focused, Input):
            raise SkipAction  # typed into the find box: a character like any other
        self.screen.set_focus(self.query_one("#whatif-filter", Input))

    def leave_filter(self) -> None:
        """Esc in the find box: clear it and give the keys back to the catalog (the box kept them)."""
        box = self.query_one("#whatif-filter", Input)
        box.value = ""
        self.query_one("#whatif-catalog", CatalogList).focus()

    def on_show(self) -> None:
        # Opening the tab puts the keys on the catalog, unless something in the pane already has them.
        if self._stale:
            self._stale = False
            self._update()
        focused = self.screen.focused
        if focused is None or self not in focused.ancestors:
            self.query_one("#whatif-catalog", CatalogList).focus()


class FindBox(Input):
    """The catalog's find box: Esc clears it and leaves it."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "leave", "Leave", show=False)]

    def action_leave(self) -> None:
        pane = next((a for a in self.ancestors if isinstance(a, WhatIfPane)), None)
        had_text = bool(self.value)
        if pane is not None:
            pane.leave_filter()
        if not had_text:
            # Nothing to clear: the Esc goes on too (a screen around the pane closes on it).
            raise SkipAction()


def baseline_head(
    baseline: Baseline, snapshot: Snapshot | None, mode: str, units: str, room: int
) -> tuple[Content, str]:
    """The tab's head (the baseline, what it holds, its pool) and the hint under it, for a head `room` cells
    wide (<= 0: any width). `snapshot`: the latest sample (None before the first); `mode`: the pane's
    baseline_mode (live, clean or spark)."""
    from sparktop.core.format import fmt_size

    # The planner speaks GB (its lines and verdicts); the dashboard the user's unit: both, so "25.3 GB"
    # here and "23.5 GiB" on the bar read as the same pool. To one decimal, as the verdict ("OOM RISK
    # 126.5 GB … of 130.7 GB") and the bar's title give them: "127 GB in use (pool 131 GB)" beside those
    # read as other figures. The pool in the user's unit goes first where the line is too long.
    used = fmt_size(baseline.used.mid, "GB")
    pools = [f"pool {fmt_size(baseline.pool, 'GB')}"]
    if units != "GB":
        pools.insert(0, f"{pools[0]} = {fmt_size(baseline.pool, units)}")
    # Longest first; then without the pool in GiB, the host (or "Linux + Docker") and the key's hint (the
    # footer has it): a wrapped head split "pool 130.7" from its "GB" at 60 columns.
    variants = [(pool, True, True) for pool in pools] + [
        (pools[-1], False, True),
        (pools[-1], False, False),
    ]
    for pool, full, with_key in variants:
        if baseline.source == "live":
            host = snapshot.hostname if snapshot and snapshot.hostname else "this machine"
            head = Content.from_markup(
                "Baseline [b]live[/b]: $used in use$on ($pool)[dim]$key[/dim]",
                used=used, on=f" on {host}" if full else "", pool=pool,
                key="  b: clean" if with_key else "",
            )  # fmt: skip
            hint = "What runs now is already counted: add only what is not running yet."
        else:
            why = " (no live sample yet)" if snapshot is None else ""
            snap = None if mode == "spark" else snapshot
            spark = snap is None
            name = "DGX Spark" if snap is None else snap.hostname or "machine (this one)"
            machine = f"clean {name}"
            following = "live" if spark else "Spark"
            head = Content.from_markup(
                "Baseline [b]$machine[/b]$why: $what$used ($pool)[dim]$key[/dim]",
                machine=machine, why=why, what="Linux + Docker, " if full else "", used=used, pool=pool,
                key=f"  b: {following}" if with_key else "",
            )  # fmt: skip
            hint = "Planned as if nothing else ran: the bar shows the system overhead only."
        if room <= 0 or head.cell_length <= room:
            break
    return head, hint


def verdict_text(ev: Evaluation) -> Content:
    """The tab's verdicts on an evaluation: memory (and a discrete GPU's), compute, decode speeds, contention
    and the notes, a line each."""
    # Workload names and reasons quote plan files and model names: `$text` variables, never markup.
    lines = [_verdict_line("Memory", ev.fit.verdict, ev.fit.reason)]
    if ev.gpu_fit is not None:  # a discrete GPU: its own memory
        lines.append(_verdict_line("GPU mem", ev.gpu_fit.verdict, ev.gpu_fit.reason))
    compute_reasons = ev.compute.reasons or [ev.compute.reason]
    lines.append(_verdict_line("Compute", ev.compute.verdict, compute_reasons[0]))
    lines += [Content(f"{'':9}{extra}") for extra in compute_reasons[1:]]
    decode = [f"{r.name} ~{r.decode.mid:.1f} tok/s" for r in ev.items if r.decode]
    if decode:
        lines.append(_labelled("Decode   ", ", ".join(decode) + " (alone)"))
    for title, text in ev.contention_lines():
        lines.append(_labelled(f"{title} ", text))
    if ev.notes:
        lines.append(Content.styled("Notes", "bold"))
        lines += [Content(f" · {note}") for note in ev.notes]
    return Content("\n").join(lines)


def _labelled(label: str, text: str) -> Content:
    return Content.assemble((label, "bold"), text)


def _verdict_line(title: str, verdict: str, reason: str) -> Content:
    from sparktop.plan.verdict import CAREFUL, FITS, NO, OK, OOM_RISK, TIGHT, WONT_FIT

    styles = {
        FITS: "$success",
        TIGHT: "$warning",
        OOM_RISK: "$error",
        WONT_FIT: "$error",
        OK: "$success",
        CAREFUL: "$warning",
        NO: "$error",
    }
    style = styles.get(verdict, "")
    return Content.from_markup(
        f"[b]{title:<8} [/b][b {style}]$verdict [/]$reason", verdict=verdict.upper(), reason=reason
    )
