"""What this machine knows about a planned workload beyond the estimate: the peak it measured when the
workload ran here (the footprint store), whether it runs right now (then the live baseline already holds it),
and, for vLLM, whether its start-up memory check will pass.

The evaluation (plan/evaluate.py) takes these facts as an input, looked up before it starts: `LiveFacts`
says where to look (the store, the live snapshot) and `look_up` reads each once for the whole plan into
`PlanFacts`, each workload's `ItemFacts` by uid. `planned_estimate` then works out each item's range once: its
estimate, swapped for the measured peak where that is plausible (unless `use_measured` is off: the user can
switch back to the estimate), less what a running workload already holds, with the sentences that say so.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from sparktop.analysis.accounting import fill_accounting
from sparktop.analysis.headroom import vllm_startup_check
from sparktop.analysis.served import model_key as served_model_key
from sparktop.analysis.served import split_models
from sparktop.analysis.slowdown import NO_FASTER_THAN_ALONE, PLAUSIBLE_RATIO, plausible_ratio
from sparktop.core.format import fmt_est
from sparktop.core.snapshot import Snapshot
from sparktop.footprints.store import Footprint, MeasuredSlowdown
from sparktop.plan.catalog.entries import CatalogEntry
from sparktop.plan.estimate import Estimate, Range, estimate_fixed
from sparktop.plan.items import Workload

# (kind, name) → the stored peak, or None
FootprintLookup = Callable[[str, str], Footprint | None]
# every stored footprint, to match model tags across servers
FootprintList = Callable[[], list[Footprint]]
# every stored measured slowdown (one per model, kind of neighbour and stretch of contention)
SlowdownList = Callable[[], list[MeasuredSlowdown]]


def _names(w: Workload) -> set[str]:
    """Every name the workload may run under: catalog entry and aliases, its model's tag or id."""
    names = {w.name}
    if w.entry is not None:
        names |= entry_names(w.entry)
    if w.model is not None:
        names.add(w.model.name)
        hf = getattr(w.model, "hf_id", None)
        if hf:
            names.add(hf)
    model = w.values.get("model")
    if isinstance(model, str):
        names.add(model)
    return _with_latest(names)


def entry_names(entry: CatalogEntry) -> set[str]:
    names = {entry.name, *entry.aliases}
    model = entry.fields.get("model")
    if isinstance(model, str):
        names.add(model)
    return _with_latest(names)


def _with_latest(names: set[str]) -> set[str]:
    """An Ollama tag without a version is `:latest`."""
    out = set()
    for name in names:
        out.add(name)
        if name.endswith(":latest"):
            out.add(name[: -len(":latest")])
        elif ":" not in name:
            out.add(f"{name}:latest")
    return out


def measured_line(fp: Footprint) -> str:
    day = time.strftime("%Y-%m-%d", time.localtime(fp.peak_at))
    held = f", held by {fp.owner}" if fp.owner else ""
    return f"measured here: peak {fmt_est(fp.peak_bytes)} on {day}{held}"


# A peak below the estimate's low side replaces the estimate only when it is plausible: the model's weights
# were resident (a model cannot run in less than its weights), or, for what has no weights to check, the
# same consumer was seen holding it for this long.
WEIGHTS_RESIDENT = 0.9
SEEN_FOR_A_WHILE_S = 600.0


def plausibility(fp: Footprint, est: Estimate) -> tuple[bool, str]:
    """(use it?, the sentence that says why) for a measured peak against the estimate it would replace.
    A peak at or above the estimate's low side is always used; one below it never silently."""
    low = est.total.low
    if fp.peak_bytes >= low:
        return True, f"{measured_line(fp)}: planned with it, not the estimate"
    weights = sum(p.bytes.low for p in est.parts if p.label == "weights")
    below = f"below the estimate's low side ({fmt_est(low)})"
    if weights > 0:
        if fp.peak_bytes < WEIGHTS_RESIDENT * weights:
            return False, (
                f"{measured_line(fp)} is less than the model's weights (at least {fmt_est(weights)}): "
                "not a real footprint (a server's own figure?), so the estimate is used"
            )
        return True, f"{measured_line(fp)}, {below} with the weights resident: planned with it"
    if fp.owner is not None and fp.seen_s >= SEEN_FOR_A_WHILE_S:
        return True, f"{measured_line(fp)}, {below}, seen for {fp.seen_s / 60:.0f} min: planned with it"
    return False, f"{measured_line(fp)}, {below} and seen too briefly to trust: the estimate is used"


@dataclass(frozen=True)
class SlowdownHere:
    """What this machine measured for one model beside one kind of neighbour, over its stretches."""

    kind: str  # training | decoder
    ratio: float  # the median of the stretches' figures
    low: float
    high: float
    stretches: int
    last_at: float
    neighbour: str | None  # the last one's name

    @property
    def planned(self) -> float:
        """The figure the verdict may use: never below 1 (no model answers faster beside a busy neighbour
        than alone; a measured 0.95x is noise around 1)."""
        return max(NO_FASTER_THAN_ALONE, self.ratio)

    def sentence(self) -> str:
        """`measured here 1.7x slower beside training (ssd-tetris-train-1; 2 times, 1.6–1.8x, last on …)`."""
        day = time.strftime("%Y-%m-%d", time.localtime(self.last_at))
        last = f"{self.neighbour}; " if self.neighbour else ""
        spread = "" if self.low == self.high else f", {self.low:.1f}–{self.high:.1f}x"
        times = "once" if self.stretches == 1 else f"{self.stretches} times"
        detail = f"{last}{times}{spread}, last on {day}"
        what = f"{self.ratio:.1f}x slower" if self.ratio >= 1 else f"{self.ratio:.2f}x (not slower)"
        return f"measured here {what} beside {self.kind} ({detail})"

    def used(self) -> str:
        """How the verdict uses it: as it is, or raised to what physics allows."""
        if self.ratio >= NO_FASTER_THAN_ALONE:
            return "planned with it"
        return (
            f"planned as {NO_FASTER_THAN_ALONE:.1f}x (no model answers faster beside a busy neighbour than "
            "alone)"
        )


@dataclass(frozen=True)
class ItemFacts:
    """What this machine knows about one planned workload: the evaluation's input beside the estimate, looked
    up before it starts (`LiveFacts.look_up`) or given as it is (a test, a caller with its own figures)."""

    peak: Footprint | None = None  # the highest peak measured under any of its names
    slowdowns: Mapping[str, SlowdownHere] = field(default_factory=dict)  # by kind of neighbour
    running: tuple[str, int] | None = None  # (what, bytes it holds now): the live baseline holds it
    claimed: str | None = None  # the server that lists it as loaded while nothing is seen holding it
    startup_check: str | None = None  # vLLM's start-up memory check, answered before launch
    implausible: tuple[str, ...] = ()  # stored slowdowns outside PLAUSIBLE_RATIO, left out: what they were


NOTHING_KNOWN = ItemFacts()


@dataclass(frozen=True)
class PlanFacts:
    """Each planned workload's facts by its plan uid. `use_measured` False: the estimates and the reference's
    slowdowns are planned with, and what was measured is still said."""

    items: Mapping[int, ItemFacts] = field(default_factory=dict)
    use_measured: bool = True

    def of(self, uid: int) -> ItemFacts:
        return self.items.get(uid, NOTHING_KNOWN)


def planned_estimate(
    est: Estimate, facts: ItemFacts, use_measured: bool = True
) -> tuple[Estimate, list[str]]:
    """One item's range, worked out once from its estimate and its facts: the measured peak where it is
    plausible (and in use), less what a running workload already holds; with the sentences that say so.
    Builds one new Estimate at most (the estimate itself is returned when nothing changes it)."""
    notes: list[str] = []
    total = est.total
    measured_detail: str | None = None
    fp = facts.peak
    if fp is not None:
        usable, said = plausibility(fp, est)
        if not use_measured:
            notes.append(f"{measured_line(fp)} (estimate used, as asked)")
        else:
            notes.append(said)
            if usable:
                total = Range.exact(float(fp.peak_bytes))
                measured_detail = f"{measured_line(fp)} (the estimate said {fmt_est(est.total.mid)})"
    if facts.running is not None:
        what, nbytes = facts.running
        rest = max(0.0, total.mid - nbytes)
        notes.append(
            f"already running ({what}, {fmt_est(nbytes)} now): the live baseline holds it, so only "
            f"the {fmt_est(rest)} it may still grow is added"
        )
        growth = Range(max(0.0, total.low - nbytes), rest, max(0.0, total.high - nbytes))
        detail = f"{what} already holds {fmt_est(nbytes)}"
        return estimate_fixed(growth, "growth beyond what it holds now", detail, gpu=False), notes
    if facts.claimed is not None:
        notes.append(
            f"{facts.claimed} lists it as loaded, but nothing on this machine is seen holding its "
            "memory (the live baseline does not hold it): counted in full"
        )
    if facts.startup_check is not None:
        notes.append(facts.startup_check)
    if measured_detail is not None:
        # A measured peak already holds the CUDA context: nothing is added to it.
        return estimate_fixed(total, "measured peak", measured_detail, gpu=False), notes
    return est, notes


class Peaks:
    """The store's peaks by the name a plan knows them under (a model's without its server), read once: every
    workload of a plan, or every entry of the catalog list, is then a few look-ups instead of a pass over the
    whole store (up to 5,000 rows)."""

    def __init__(self, footprints: Iterable[Footprint]) -> None:
        # name → (the first of the highest peaks in the store's order, its place in that order)
        self._best: dict[str, tuple[Footprint, int]] = {}
        for order, fp in enumerate(footprints):
            name = fp.name.split(":", 1)[1] if fp.kind == "model" and ":" in fp.name else fp.name
            known = self._best.get(name)
            if known is None or fp.peak_bytes > known[0].peak_bytes:
                self._best[name] = (fp, order)

    def best(self, names: set[str]) -> Footprint | None:
        """The highest peak stored under any of `names` (as a model of any server, a container name or an
        image); of equal peaks, the first in the store's order."""
        found = [self._best[name] for name in names if name in self._best]
        return min(found, key=lambda known: (-known[0].peak_bytes, known[1]))[0] if found else None


def _stored_for(measured: Iterable[MeasuredSlowdown], names: set[str]) -> dict[str, list[MeasuredSlowdown]]:
    """By kind of neighbour, the stored slowdowns of a model under any of `names`."""
    found: dict[str, list[MeasuredSlowdown]] = {}
    for m in measured:
        name = m.model.split(":", 1)[1] if ":" in m.model else m.model
        if (name in names or m.model in names) and m.neighbour_kind in ("training", "decoder"):
            found.setdefault(m.neighbour_kind, []).append(m)
    return found


def slowdowns_here(measured: Iterable[MeasuredSlowdown], names: set[str]) -> dict[str, SlowdownHere]:
    """By kind of neighbour, the slowdowns measured for a model under any of `names`: only figures inside
    PLAUSIBLE_RATIO (a store an older sparktop wrote, or one edited, may hold others)."""
    found = {
        kind: kept
        for kind, stretches in _stored_for(measured, names).items()
        if (kept := [m for m in stretches if plausible_ratio(m.ratio)])
    }
    out = {}
    for kind, stretches in found.items():
        ratios = [m.ratio for m in stretches]
        last = max(stretches, key=lambda m: m.measured_at)
        out[kind] = SlowdownHere(
            kind,
            round(statistics.median(ratios), 2),
            min(ratios),
            max(ratios),
            len(stretches),
            last.measured_at,
            last.neighbour,
        )
    return out


def implausible_slowdowns(measured: Iterable[MeasuredSlowdown], names: set[str]) -> list[str]:
    """What the store holds for a model outside PLAUSIBLE_RATIO, one sentence per kind of neighbour: left out
    of the plan, and said."""
    low, high = PLAUSIBLE_RATIO
    out = []
    for kind, stretches in _stored_for(measured, names).items():
        odd = sorted(m.ratio for m in stretches if not plausible_ratio(m.ratio))
        if odd:
            figures = ", ".join(f"{r:.2f}x" for r in odd[:3]) + (" …" if len(odd) > 3 else "")
            out.append(
                f"measured here {figures} beside {kind}: outside the plausible {low:g}–{high:g}x "
                "(not a slowdown: a server's counters changed for another reason), not planned with"
            )
    return out


class _Holdings:
    """What a live snapshot's consumers hold, worked out once for every workload of a plan."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        # What the live baseline holds of a served model is what its server's process or container measurably
        # holds for it (split_models caps a server's figure by that): a server's own claim subtracts nothing.
        accounted = snap if snap.accounting is not None else fill_accounting(snap.model_copy())
        split = split_models(accounted)
        self.by_model = {c.key: c.total for c in split.consumers} if split is not None else {}
        consumers = accounted.accounting.consumers if accounted.accounting else []
        self.by_key = {c.key: c.total for c in consumers}

    def running(self, names: set[str]) -> tuple[str, int] | None:
        """(what, bytes it holds now) when the workload already runs: a served model or a container."""
        for report in self.snap.services:
            for model in report.models:
                backed = self.by_model.get(served_model_key(report, model), 0)
                if model.name in names and backed:
                    return f"{model.name} on {report.server or 'a server'}", backed
        for container in self.snap.containers:
            if container.name in names:
                held = self.by_key.get(f"container:{container.id}")
                if held is None and container.memory is not None:
                    held = container.memory.working_set + container.gpu_bytes
                return f"container {container.name}", held or 0
        return None

    def claimed(self, names: set[str]) -> str | None:
        """The server that lists the workload's model as loaded (whether or not anything holds it)."""
        for report in self.snap.services:
            if any(m.name in names and m.total_bytes for m in report.models):
                return f"{report.server or 'a server'} at {report.endpoint}"
        return None


@dataclass
class LiveFacts:
    """Where to look up what this machine knows: the footprint store's peaks and slowdowns, and the snapshot
    of what runs now. `look_up` reads each once for a whole plan."""

    footprints: FootprintList | None = None
    snapshot: Snapshot | None = None
    use_measured: bool = True
    slowdowns: SlowdownList | None = None

    def peaks(self) -> Peaks:
        """The store's peaks, read now, indexed by name."""
        return Peaks(self.footprints() if self.footprints is not None else [])

    def entry_peaks(self, entries: Iterable[CatalogEntry]) -> dict[str, Footprint]:
        """Each catalog entry's measured peak by entry name, the store read once (the catalog list names it
        beside the entry)."""
        peaks = self.peaks()
        found = {entry.name: peaks.best(entry_names(entry)) for entry in entries}
        return {name: fp for name, fp in found.items() if fp is not None}

    def look_up(self, workloads: Iterable[Workload], live: bool) -> PlanFacts:
        """Every workload's facts, by uid. `live`: the plan starts from what runs now, so a workload already
        running counts only for what it may still add (and vLLM's start-up check is answered)."""
        peaks = self.peaks()
        slowdowns = self.slowdowns() if self.slowdowns is not None else []
        snap = self.snapshot if live else None
        holdings = _Holdings(snap) if snap is not None else None
        items: dict[int, ItemFacts] = {}
        for w in workloads:
            names = _names(w)
            running = holdings.running(names) if holdings is not None else None
            items[w.uid] = ItemFacts(
                peak=peaks.best(names),
                slowdowns=slowdowns_here(slowdowns, names),
                implausible=tuple(implausible_slowdowns(slowdowns, names)),
                running=running,
                claimed=holdings.claimed(names) if holdings is not None and running is None else None,
                startup_check=_startup_check(w, snap) if running is None else None,
            )
        return PlanFacts(items, self.use_measured)


def _startup_check(w: Workload, snap: Snapshot | None) -> str | None:
    """vLLM's start-up memory check against the live pool, on unified memory (page cache can fail it)."""
    if w.engine != "vllm" or snap is None or not snap.gpu.unified_memory:
        return None
    util = w.get("gpu_memory_utilization")
    if isinstance(util, int | float) and util > 0:
        return vllm_startup_check(float(util), snap.memory).message(fmt_est)
    return None
