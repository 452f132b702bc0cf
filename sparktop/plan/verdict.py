"""Verdicts on a plan: does the memory fit, and will the workloads starve each other of the GPU.

Fit: baseline + every workload against the safe (80 GB) and aggressive (100 GB) lines and the pool
(decimal GB, 1e9 bytes), by the high side of the estimates. Compute: the reference's decision matrix (training
saturates the SMs; big decoders split the 273 GB/s; sequential pipeline stages never collide), with slowdowns
calibrated on measured pairs of GPU processes (shared/reference/measured-h100.md section 2): each interactive
workload gets the slowdown while everything else is busy at once, and the expected one (weighted by how often
the others are busy); decode speeds shared with the others are the same figure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sparktop.analysis.lines import FITS, OOM_RISK, TIGHT, WONT_FIT, Lines  # the lines: analysis/lines.py
from sparktop.analysis.time_slicing import BESIDE_COMPUTE, BESIDE_DECODER, BESIDE_DECODER_BOTH_HEAVY
from sparktop.plan.estimate import BANDWIDTH, GB, Range, decode_rate

DEFAULT_SM_COUNT = 48  # GB10: 6,144 CUDA cores / 128 per SM

FIT_VERDICTS = (FITS, TIGHT, OOM_RISK, WONT_FIT)
OK, CAREFUL, NO = "ok", "careful", "no"
COMPUTE_VERDICTS = (OK, CAREFUL, NO)


def _gb(value: float) -> str:
    text = f"{value / GB:.1f}"
    return f"{text.removesuffix('.0')} GB"


def _names(names: Sequence[str]) -> str:
    names = list(names)
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


# --- fit ----------------------------------------------------------------------------------------------------


# A discrete GPU's memory is its own pool: going over it fails the allocation (no machine freeze), but the
# caching allocator's growth and fragmentation need room, so the lines sit below it.
DEVICE_SAFE_SHARE = 0.85
DEVICE_AGGRESSIVE_SHARE = 0.95


def device_lines(device_memory: float) -> Lines:
    return Lines(DEVICE_SAFE_SHARE * device_memory, DEVICE_AGGRESSIVE_SHARE * device_memory, device_memory)


def worse(a: str, b: str) -> str:
    """The more severe of two fit verdicts."""
    return a if FIT_VERDICTS.index(a) >= FIT_VERDICTS.index(b) else b


@dataclass
class FitVerdict:
    """The verdict goes by the honest side of the estimates, the high one: an underestimate freezes a Spark.
    `mid_verdict` is what the mid estimates alone would say (`sparktop plan --optimistic`)."""

    verdict: str
    total: Range
    lines: Lines
    mid_verdict: str = FITS
    culprit: str | None = None  # the workload whose addition crossed the line (high side)
    line_crossed: str | None = None  # "safe", "aggressive" or "pool"
    excess: float = 0.0  # bytes that would have to go to be back under the safe line (high side)
    enough_to_drop: list[str] = field(default_factory=list)  # any one of these alone would be enough
    reason: str = ""

    @property
    def high_verdict(self) -> str:
        return self.verdict

    @property
    def headline(self) -> str:
        """ "fits", or "fits at mid, tight at high" when the two sides differ."""
        if self.mid_verdict == self.verdict:
            return self.verdict
        return f"{self.mid_verdict} at mid, {self.verdict} at high"


def fit_verdict(baseline: Range, items: Sequence[tuple[str, Range]], lines: Lines) -> FitVerdict:
    total = baseline + Range.total(r for _, r in items)
    verdict = lines.classify(total.high)
    out = FitVerdict(verdict=verdict, total=total, lines=lines, mid_verdict=lines.classify(total.mid))
    figures = _gb(total.mid) if total.high == total.mid else f"{_gb(total.mid)} (high {_gb(total.high)})"
    prefix = "" if out.mid_verdict == verdict else f"{out.headline}: "
    if verdict == FITS:
        out.reason = (
            f"{figures} of {_gb(lines.pool)}: under the {_gb(lines.safe)} safe line "
            f"with {_gb(lines.safe - total.high)} to spare"
        )
        return out
    name, line = lines.line_for(verdict)  # type: ignore[misc]
    out.line_crossed = name
    running = baseline.high
    for item_name, r in items:
        running += r.high
        if running > line:
            out.culprit = item_name
            break
    out.excess = total.high - lines.safe
    out.enough_to_drop = [n for n, r in sorted(items, key=lambda x: x[1].high) if r.high >= out.excess][:3]
    where = {
        TIGHT: f"between the {_gb(lines.safe)} safe and {_gb(lines.aggressive)} aggressive lines",
        OOM_RISK: f"over the {_gb(lines.aggressive)} aggressive line",
        WONT_FIT: f"more than the {_gb(lines.pool)} pool",
    }[verdict]
    side = "the high estimate is " if out.mid_verdict != verdict else ""
    out.reason = f"{prefix}{figures}: {side}{where}"
    if out.culprit:
        out.reason += f"; {out.culprit} pushes it over the {name} line"
    # Never "0 GB would have to go": an excess that rounds to nothing is still one.
    amount = _gb(out.excess) if out.excess >= 0.05 * GB else "less than 0.1 GB"
    out.reason += f"; {amount} would have to go to be back under {_gb(lines.safe)}"
    if out.enough_to_drop:
        out.reason += f" (dropping {out.enough_to_drop[0]} alone would do)"
    return out


# --- compute ------------------------------------------------------------------------------------------------

GPU_USES = ("sustained", "interactive", "pipeline", "batch", "none")
# Share of the time a workload keeps the GPU busy, by default.
DEFAULT_DUTY = {"sustained": 1.0, "batch": 0.8, "interactive": 0.3, "pipeline": 0.2, "none": 0.0}
COMPUTE_BOUND = ("sustained", "batch")
# A decoder that reads this much per token answers slowly enough (a few tok/s) that its bursts last long.
HEAVY_BYTES_PER_TOKEN = 15 * GB


@dataclass(frozen=True)
class GpuLoad:
    """How one workload uses the GPU. Workloads with the same `group` run one after the other (pipeline
    stages) and never collide."""

    name: str
    gpu_use: str
    duty: float
    group: str
    bytes_per_token: float | None = None  # decoders only
    heavy: bool = False  # a big decoder (or a big interactive model of unknown shape)
    count: int = 1  # the consumers it stands for (the GPU work running now may be several): the wording


@dataclass
class _Group:
    key: str
    loads: list[GpuLoad]

    @property
    def names(self) -> list[str]:
        return [g.name for g in self.loads]

    @property
    def duty(self) -> float:
        return min(1.0, sum(g.duty for g in self.loads))

    @property
    def compute_bound(self) -> bool:
        return any(g.gpu_use in COMPUTE_BOUND for g in self.loads)

    @property
    def interactive(self) -> bool:
        return any(g.gpu_use in ("interactive", "pipeline") for g in self.loads)

    @property
    def heavy(self) -> bool:
        return any(g.heavy for g in self.loads)

    @property
    def label(self) -> str:
        if len(self.loads) > 1 and self.key.startswith("pipeline:"):
            return f"the {self.key.removeprefix('pipeline:')} pipeline"
        return _names(self.names)

    def decode_bytes(self) -> float:
        # Stages of one pipeline decode one at a time: the group reads at most its biggest decoder's bytes.
        return max((g.bytes_per_token or 0.0) for g in self.loads)


@dataclass
class ComputeVerdict:
    verdict: str
    reason: str
    reasons: list[str] = field(default_factory=list)
    slowdown: dict[str, float] = field(default_factory=dict)  # expected, for interactive and pipeline work
    overlap: dict[str, float] = field(default_factory=dict)  # slowdown while all the others are busy at once
    decode_shared: dict[str, Range] = field(default_factory=dict)  # tok/s while every other group is busy
    # The slowdowns measured on this machine that replaced the reference's: workload → kind of neighbour → x
    measured: dict[str, dict[str, float]] = field(default_factory=dict)


def compute_verdict(
    loads: Sequence[GpuLoad],
    sm_count: int | None = None,
    bandwidth: float = BANDWIDTH,
    has_gpu: bool = True,
    no_gpu_reason: str = "",
    measured: Mapping[str, Mapping[str, float]] | None = None,
) -> ComputeVerdict:
    """`measured`: slowdowns measured on this machine (workload name → kind of neighbour, "training" or
    "decoder" → x), used instead of the reference's H100 pairs where the plan puts that kind beside it."""
    sms = sm_count or DEFAULT_SM_COUNT
    active = [g for g in loads if g.gpu_use != "none" and g.duty > 0]
    if not has_gpu:
        why = f" ({no_gpu_reason})" if no_gpu_reason else ""
        if active:
            reason = (
                f"no GPU on this machine{why}: {_names([g.name for g in active])} would have none to run on "
                "here; plan for an empty DGX Spark instead (plan --machine spark, or b in the What-if tab)"
            )
            return ComputeVerdict(verdict=CAREFUL, reason=reason, reasons=[reason])
        reason = f"no GPU on this machine{why}; nothing in the plan needs one"
        return ComputeVerdict(verdict=OK, reason=reason, reasons=[reason])
    groups: dict[str, _Group] = {}
    for load in active:
        groups.setdefault(load.group, _Group(load.group, [])).loads.append(load)
    glist = list(groups.values())

    # Each interactive workload, beside each other group: the measured slowdown while both are busy (`pair`);
    # while every other group is busy at once the excesses add up (`overlap`); on average each counts for the
    # share of the time it is busy (`slowdown`, expected).
    used: dict[str, dict[str, float]] = {}

    def pair(victim: GpuLoad, other: _Group) -> float:
        kind = neighbour_kind(other.compute_bound)
        here = (measured or {}).get(victim.name, {}).get(kind)
        if here is not None:
            used.setdefault(victim.name, {})[kind] = here
            return here
        if other.compute_bound:
            return BESIDE_COMPUTE[victim.heavy]
        return BESIDE_DECODER_BOTH_HEAVY if victim.heavy and other.heavy else BESIDE_DECODER

    slowdown: dict[str, float] = {}
    overlap: dict[str, float] = {}
    for g in glist:
        others = [o for o in glist if o is not g]
        for load in g.loads:
            if load.gpu_use not in ("interactive", "pipeline"):
                continue
            overlap[load.name] = round(1.0 + sum(pair(load, o) - 1.0 for o in others), 2)
            slowdown[load.name] = round(1.0 + sum(o.duty * (pair(load, o) - 1.0) for o in others), 2)

    # A decoder's speed while every other group is busy: its speed alone over the same overlap slowdown.
    decode_shared: dict[str, Range] = {}
    for g in glist:
        for load in g.loads:
            if load.bytes_per_token and load.name in overlap and overlap[load.name] > 1.0:
                decode_shared[load.name] = decode_rate(load.bytes_per_token, bandwidth).scale(
                    1.0 / overlap[load.name]
                )

    verdict = OK
    reasons: list[str] = []

    def flag(level: str, sentence: str) -> None:
        nonlocal verdict
        reasons.append(sentence)
        if COMPUTE_VERDICTS.index(level) > COMPUTE_VERDICTS.index(verdict):
            verdict = level

    sustained = [g for g in active if g.gpu_use == "sustained"]
    batch = [g for g in active if g.gpu_use == "batch"]
    inter_groups = [g for g in glist if g.interactive]
    inter_names = [load.name for g in inter_groups for load in g.loads if load.gpu_use != "sustained"]
    worst = max(slowdown.values(), default=1.0)

    if sustained and inter_groups:
        verb = "saturates" if len(sustained) == 1 else "saturate"
        flag(
            NO,
            f"{_names([s.name for s in sustained])} {verb} the {sms} SMs: interactive inference "
            f"({_names(inter_names)}) will stall, about {worst:.1f}x slower on average and seconds of "
            f"extra latency per request",
        )
    if len(sustained) + len(batch) >= 2:
        n = len(sustained) + len(batch)
        flag(
            CAREFUL,
            f"{_names([s.name for s in sustained + batch])} share the {sms} SMs: each runs at about "
            f"1/{n} of its speed alone",
        )

    heavy_groups = [g for g in inter_groups if g.heavy]
    if len(heavy_groups) >= 2:
        parts = []
        for g in heavy_groups:
            for load in g.loads:
                if load.heavy and load.bytes_per_token and load.name in decode_shared:
                    solo = decode_rate(load.bytes_per_token, bandwidth).mid
                    parts.append(f"{load.name} {solo:.1f} -> {decode_shared[load.name].mid:.1f} tok/s")
        speeds = f" ({'; '.join(parts)})" if parts else ""
        flag(
            NO,
            f"{_names([g.label for g in heavy_groups])} are big decoders: they take turns on the "
            f"{bandwidth / GB:.0f} GB/s when both answer{speeds}; load both, run one at a time",
        )
    elif heavy_groups and len(inter_groups) >= 2:
        heavy = heavy_groups[0]
        other_labels = [g.label for g in inter_groups if g is not heavy]
        worst_overlap = max((overlap.get(load.name, 1.0) for load in heavy.loads), default=1.0)
        flag(
            CAREFUL,
            f"{heavy.label} competes with {_names(other_labels)} for the GPU: avoid simultaneous inference "
            f"(about {worst_overlap:.1f}x slower while they overlap)",
        )

    if batch and inter_groups and not sustained:
        flag(
            CAREFUL,
            f"{_names([b.name for b in batch])} keeps the GPU busy: interactive work "
            f"({_names(inter_names)}) about {worst:.1f}x slower",
        )

    if verdict == OK and worst >= 1.5:
        victim = max(slowdown, key=lambda k: slowdown[k])
        flag(CAREFUL, f"bursty workloads overlap often enough to slow {victim} about {worst:.1f}x")

    if verdict == OK:
        if not glist:
            reasons.append("nothing in the plan uses the GPU")
        elif len(glist) == 1:
            g = glist[0]
            if len(g.loads) > 1:
                reasons.append(f"{g.label}: sequential stages, each gets all {sms} SMs during its turn")
            elif g.loads[0].count > 1:
                # Several consumers have nothing "to itself": they share the GPU, and the plan adds none.
                all_busy = g.loads[0].gpu_use == "sustained"
                busy = f"keep all {sms} SMs busy" if all_busy else f"share the {sms} SMs"
                reasons.append(
                    f"{g.label} {busy} between them and nothing planned joins them: keep other GPU work off "
                    "while they run"
                )
            elif g.loads[0].gpu_use == "sustained":
                reasons.append(
                    f"{g.label} has all {sms} SMs to itself: keep other GPU work off while it runs"
                )
            else:
                reasons.append(f"{g.label} has the GPU to itself")
        else:
            reasons.append(
                f"light, bursty workloads: their bursts rarely overlap (about {worst:.1f}x slower "
                f"on average at worst)"
            )
    return ComputeVerdict(
        verdict=verdict,
        reason=reasons[0],
        reasons=reasons,
        slowdown=slowdown,
        overlap=overlap,
        decode_shared=decode_shared,
        measured=used,
    )


def neighbour_kind(compute_bound: bool) -> str:
    """The kind of neighbour a measured slowdown is kept under (analysis/slowdown.py) for a plan's group."""
    return "training" if compute_bound else "decoder"
