"""evaluate(plan, baseline): every workload's estimate, the total, and the fit and compute verdicts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sparktop.analysis.lines import SPARK_POOL, Lines, plan_lines
from sparktop.analysis.slowdown import planner_range_text
from sparktop.core.format import fmt_est
from sparktop.plan.catalog.lookup import Catalog
from sparktop.plan.estimate import (
    GB,
    Estimate,
    Range,
    estimate_fixed,
    estimate_inference,
    estimate_training,
    system_base,
)
from sparktop.plan.items import OLLAMA_AUTO_CONTEXT, OLLAMA_DEFAULT_CONTEXT, Plan, Workload
from sparktop.plan.live_gpu import DeviceMemory, device_memory, has_gpu, running_gpu_loads
from sparktop.plan.measured import LiveFacts, PlanFacts, planned_estimate
from sparktop.plan.verdict import (
    DEFAULT_SM_COUNT,
    DEVICE_AGGRESSIVE_SHARE,
    DEVICE_SAFE_SHARE,
    HEAVY_BYTES_PER_TOKEN,
    ComputeVerdict,
    FitVerdict,
    GpuLoad,
    compute_verdict,
    device_lines,
    fit_verdict,
    worse,
)

if TYPE_CHECKING:
    from sparktop.core.snapshot import Snapshot

UNITS = "GB (1e9 bytes)"


@dataclass(frozen=True)
class Baseline:
    """What the machine holds before the plan starts: a live reading, or a clean machine (Linux + Docker)."""

    used: Range  # bytes
    pool: float = SPARK_POOL  # bytes
    source: str = "clean"  # "clean" | "live"
    sm_count: int = DEFAULT_SM_COUNT
    description: str = "clean machine: Linux + Docker daemon only"
    gpu: bool = True  # the machine has a GPU (a clean machine is a Spark)
    gpu_reason: str = ""  # why there is none (NVML's word)
    running: tuple[GpuLoad, ...] = ()  # GPU work running now: it joins the compute verdict
    device: DeviceMemory | None = None  # a discrete GPU's own memory; None on a unified pool

    @classmethod
    def clean(cls, pool: float = SPARK_POOL, sm_count: int = DEFAULT_SM_COUNT) -> Baseline:
        """An empty DGX Spark (`plan --machine spark`, or when this machine cannot be read)."""
        return cls(
            used=system_base(),
            pool=pool,
            source="clean",
            sm_count=sm_count,
            description=f"clean DGX Spark ({fmt_est(pool)}, {sm_count} SMs): Linux + Docker only",
        )

    @classmethod
    def clean_of(cls, snap: Snapshot) -> Baseline:
        """This machine with nothing running but Linux + Docker: its pool, GPU and SM count, none of what
        runs now. `plan --clean` and the What-if tab's `b` both mean this."""
        live = cls.from_snapshot(snap)
        device = live.device
        host = snap.hostname or "this machine"
        return replace(
            live,
            used=system_base(),
            source="clean",
            description=f"clean {host} ({fmt_est(live.pool)}): Linux + Docker only",
            running=(),
            device=replace(device, used=0.0) if device is not None else None,
        )

    @classmethod
    def from_snapshot(cls, snap: Snapshot) -> Baseline:
        mem = snap.memory
        sm = next((g.sm_count for g in snap.gpu.gpus if g.sm_count), None) if snap.gpu else None
        return cls(
            used=Range.exact(float(mem.used)),
            pool=float(mem.total),
            source="live",
            sm_count=sm or DEFAULT_SM_COUNT,
            description=f"live: {fmt_est(mem.used)} in use now (MemTotal - MemAvailable) on "
            f"{snap.hostname or 'this machine'}",
            gpu=has_gpu(snap),
            gpu_reason=(snap.gpu.reason or "") if snap.gpu else "",
            running=running_gpu_loads(snap),
            device=device_memory(snap),
        )


@dataclass
class ItemResult:
    uid: int
    name: str
    workload: Workload
    estimate: Estimate
    slowdown: float | None = None  # expected, while the rest of the plan runs
    overlap: float | None = None  # while every other workload of the plan is busy at once
    decode_shared: Range | None = None  # tok/s while every other workload is busy (decode / overlap)
    warnings: list[str] = field(default_factory=list)

    @property
    def total(self) -> Range:
        return self.estimate.total

    @property
    def decode(self) -> Range | None:
        return self.estimate.decode

    def to_dict(self) -> dict[str, Any]:
        w = self.workload
        params = {k: (list(v) if isinstance(v, tuple) else v) for k, v in w.values.items() if k != "label"}
        out: dict[str, Any] = {
            "name": self.name,
            "entry": w.entry.name if w.entry else None,
            "kind": w.kind,
            "engine": w.engine,
            "gpu_use": w.gpu_use,
            "gb": self.total.in_gb(),
            "breakdown": [
                {"label": p.label, "gb": p.bytes.in_gb(), "detail": p.detail} for p in self.estimate.parts
            ],
            "decode_tok_s": self.decode.as_dict(1) if self.decode else None,
            "decode_shared_tok_s": self.decode_shared.as_dict(1) if self.decode_shared else None,
            "slowdown": self.slowdown,
            "slowdown_overlap": self.overlap,
            "reference_gb": _range_dict(w.entry.reference_gb) if w.entry and w.entry.reference_gb else None,
            "params": params,
            "notes": list(self.estimate.notes),
            "warnings": list(self.warnings),
        }
        return out


def _fit_dict(fit: FitVerdict) -> dict[str, Any]:
    return {
        "reason": fit.reason,
        "culprit": fit.culprit,
        "line_crossed": fit.line_crossed,
        "excess_gb": round(max(0.0, fit.excess) / GB, 2),
        "enough_to_drop": fit.enough_to_drop,
        "mid_verdict": fit.mid_verdict,
        "high_verdict": fit.high_verdict,
        "headline": fit.headline,
    }


def _lines_dict(lines: Lines) -> dict[str, Any]:
    return {
        "safe": round(lines.safe / GB, 2),
        "aggressive": round(lines.aggressive / GB, 2),
        "pool": round(lines.pool / GB, 2),
        "scaled": lines.scaled,
    }


def _range_dict(t: tuple[float, float, float]) -> dict[str, float]:
    return {"low": t[0], "mid": t[1], "high": t[2]}


@dataclass
class Evaluation:
    baseline: Baseline
    items: list[ItemResult]
    lines: Lines
    fit: FitVerdict
    compute: ComputeVerdict
    notes: list[str] = field(default_factory=list)  # warnings and assumptions beyond the two verdicts
    gpu_fit: FitVerdict | None = None  # a discrete GPU: its own memory against the GPU side of the plan

    @property
    def verdict(self) -> str:
        """The memory verdict the launch guard goes by: the pool's, or the worse of RAM and GPU memory."""
        return worse(self.fit.verdict, self.gpu_fit.verdict) if self.gpu_fit else self.fit.verdict

    @property
    def mid_verdict(self) -> str:
        if self.gpu_fit is None:
            return self.fit.mid_verdict
        return worse(self.fit.mid_verdict, self.gpu_fit.mid_verdict)

    @property
    def total(self) -> Range:
        return self.fit.total

    def slowed(self, threshold: float = 1.05) -> list[ItemResult]:
        """Each workload slowed by the rest of the plan."""
        return [r for r in self.items if r.slowdown and r.slowdown > threshold]

    def contention_lines(self) -> list[tuple[str, str]]:
        """("Slowdown", ...) and ("Decoding", ...), for the What-if tab and `sparktop plan` alike: the same
        figures the compute verdict quotes (a decoder's shared speed is its speed alone over its slowdown
        while the rest is busy)."""
        out: list[tuple[str, str]] = []
        slow = [
            f"{r.name} ~{r.slowdown:.1f}x on average, ~{r.overlap or r.slowdown:.1f}x while the rest is busy"
            for r in self.slowed()
        ]
        if slow:
            out.append(("Slowdown", "; ".join(slow)))
        shared = [
            f"{r.name} {r.decode.mid:.1f} -> {r.decode_shared.mid:.1f} tok/s"
            for r in self.items
            if r.decode_shared and r.decode and r.decode_shared.mid < r.decode.mid * 0.95
        ]
        if shared:
            out.append(("Decoding", f"while the rest is busy: {', '.join(shared)}"))
        return out

    @property
    def reasons(self) -> list[str]:
        """Every reason in a sentence: the fit, the compute verdict's reasons, then the notes."""
        gpu = [f"GPU memory: {self.gpu_fit.reason}"] if self.gpu_fit else []
        return [
            f"memory: {self.fit.reason}",
            *gpu,
            *(f"compute: {r}" for r in self.compute.reasons),
            *self.notes,
        ]

    def to_dict(self) -> dict[str, Any]:
        fit = self.fit
        return {
            "units": UNITS,
            "baseline_gb": round(self.baseline.used.mid / GB, 2),
            "baseline": {
                "source": self.baseline.source,
                "gb": self.baseline.used.in_gb(),
                "description": self.baseline.description,
                "pool_gb": round(self.baseline.pool / GB, 2),
                "sm_count": self.baseline.sm_count,
            },
            "lines_gb": {
                "safe": round(self.lines.safe / GB, 2),
                "aggressive": round(self.lines.aggressive / GB, 2),
                "pool": round(self.lines.pool / GB, 2),
                "scaled": self.lines.scaled,
            },
            "items": [i.to_dict() for i in self.items],
            "total_gb": self.total.in_gb(),
            "fit": self.verdict,
            "fit_detail": _fit_dict(fit),
            "gpu_fit": (
                {
                    **_fit_dict(self.gpu_fit),
                    "verdict": self.gpu_fit.verdict,
                    "lines_gb": _lines_dict(self.gpu_fit.lines),
                }
                if self.gpu_fit
                else None
            ),
            "compute": self.compute.verdict,
            "compute_detail": {
                "reason": self.compute.reason,
                "reasons": self.compute.reasons,
                "slowdown": self.compute.slowdown,
                "slowdown_overlap": self.compute.overlap,
            },
            "reasons": self.reasons,
        }


def estimate_workload(w: Workload, catalog: Catalog, pool: float = SPARK_POOL) -> Estimate:
    """The memory estimate of one resolved workload."""
    if w.fixed or w.model is None:
        lo, mid, hi = w.values["memory_gb"]
        measured = "memory_gb" in w.explicit
        source = w.entry.source if w.entry else ""
        detail = (
            "given in the plan"
            if measured
            else "reference table"
            if source == "reference"
            else "catalog figure"
        )
        return estimate_fixed(Range.gb(lo, mid, hi), "footprint", detail, gpu=w.gpu_use != "none")
    arch = w.model.arch
    if w.kind == "training":
        return estimate_training(
            arch,
            method=w.values["method"],
            batch=w.values["batch"],
            seq_len=w.values["seq_len"],
            precision=w.values["precision"],
            optimizer=w.values["optimizer"],
            gradient_checkpointing=w.values["gradient_checkpointing"],
            efficient_attention=w.values["efficient_attention"],
            lora_rank=w.values.get("lora_rank", 16),
            loss=w.values.get("loss"),
            dataloader_workers=w.values.get("dataloader_workers", 0),
        )
    quant = catalog.quant(w.values["quant"])
    assert quant is not None
    kv = catalog.kv_dtype(w.values["kv_dtype"])
    assert kv is not None
    # A real file size counts only for the format it was measured in.
    weights = None
    entry = w.entry
    if (
        entry
        and entry.weights_bytes
        and entry.fields.get("quant", w.model.native_quant) == quant.name
        and (entry.fields.get("model") == w.model.name)
    ):
        weights = entry.weights_bytes
    elif w.model.weights_bytes and w.model.native_quant == quant.name:
        weights = w.model.weights_bytes
    return estimate_inference(
        arch,
        engine=w.values["engine"],
        bits_per_weight=quant.bits,
        quant=quant.name,
        weights_bytes=weights,
        context=w.values["context"],
        parallel=w.values["parallel"],
        kv_bytes_per_element=kv.bytes,
        kv_dtype=kv.name,
        flash_attention=w.get("flash_attention", True),
        gpu_memory_utilization=w.get("gpu_memory_utilization", 0.9),
        pool_bytes=pool,
    )


def _load(w: Workload, est: Estimate, name: str) -> GpuLoad:
    group = f"pipeline:{w.pipeline}" if w.gpu_use == "pipeline" else f"item:{w.uid}"
    bpt = est.bytes_per_token if w.kind == "inference" and w.model is not None else None
    if bpt is not None:
        heavy = bpt >= HEAVY_BYTES_PER_TOKEN
    else:
        heavy = w.kind == "inference" and est.total.mid >= HEAVY_BYTES_PER_TOKEN
    return GpuLoad(name=name, gpu_use=w.gpu_use, duty=w.duty, group=group, bytes_per_token=bpt, heavy=heavy)


def evaluate(
    plan: Plan,
    baseline: Baseline | None = None,
    safe: float | None = None,
    aggressive: float | None = None,
    facts: LiveFacts | None = None,
) -> Evaluation:
    """Estimates and verdicts for the whole plan on top of `baseline` (a clean machine when None).
    `safe`/`aggressive` (bytes) are the user's lines; by default the reference's 80/100 GB, scaled on a
    machine much smaller than a Spark (verdict.plan_lines: the What-if tab and `sparktop plan` share them).
    `facts` (plan/measured.py): where to look up the peaks measured on this machine, what runs now, and
    vLLM's start-up check; they are looked up once, up front, and passed in (`evaluate_known`)."""
    baseline = baseline or Baseline.clean()
    workloads = plan.workloads()
    known = facts.look_up(workloads, live=baseline.source == "live") if facts is not None else None
    return evaluate_known(workloads, plan.catalog, baseline, safe, aggressive, known)


def evaluate_known(
    workloads: Sequence[Workload],
    catalog: Catalog,
    baseline: Baseline | None = None,
    safe: float | None = None,
    aggressive: float | None = None,
    known: PlanFacts | None = None,
) -> Evaluation:
    """`evaluate` with what this machine knows given as it is (`known`: each workload's measured peak,
    measured slowdowns, and what runs now, by uid; None: nothing known): each item's range is worked out once,
    its estimate then `planned_estimate`."""
    baseline = baseline or Baseline.clean()
    lines = plan_lines(baseline.pool, safe, aggressive)
    items: list[ItemResult] = []
    ollama_default = False  # an Ollama model estimated at the assumed default context
    names_seen: dict[str, int] = {}
    for w in workloads:
        est = estimate_workload(w, catalog, baseline.pool)
        found: list[str] = []
        if known is not None:
            est, found = planned_estimate(est, known.of(w.uid), known.use_measured)
        name = w.name
        names_seen[name] = names_seen.get(name, 0) + 1
        if names_seen[name] > 1:
            name = f"{name} #{names_seen[name]}"
        result = ItemResult(uid=w.uid, name=name, workload=w, estimate=est)
        result.warnings += est.warnings + found
        if w.ignored:
            result.warnings.append(f"ignored: {', '.join(w.ignored)} (not used by this kind of workload)")
        context_set = "context" in w.explicit or (w.entry is not None and "context" in w.entry.fields)
        ollama_default |= w.engine == "ollama" and w.model is not None and not context_set
        items.append(result)

    loads = [_load(r.workload, r.estimate, r.name) for r in items]
    # Slowdowns measured on this machine replace the reference's H100 pairs ("measured here").
    here = {r.name: known.of(r.uid).slowdowns for r in items} if known is not None else {}
    use_here = known is not None and known.use_measured
    compute = compute_verdict(
        [*baseline.running, *loads],
        baseline.sm_count,
        has_gpu=baseline.gpu,
        no_gpu_reason=baseline.gpu_reason,
        measured={n: {k: f.planned for k, f in by_kind.items()} for n, by_kind in here.items()}
        if use_here
        else None,
    )
    for r in items:
        for kind, figure in here.get(r.name, {}).items():
            if kind in compute.measured.get(r.name, {}):
                compute.reasons.append(
                    f"{r.name}: {figure.sentence()}: {figure.used()}, not the H100 reference's "
                    f"{planner_range_text(kind)}x"
                )
            elif not use_here:
                r.warnings.append(f"{figure.sentence()} (the reference's figures used, as asked)")
            else:
                r.warnings.append(f"{figure.sentence()} (nothing of that kind beside it in this plan)")
        if known is not None:
            r.warnings += known.of(r.uid).implausible
    for r in items:
        r.slowdown = compute.slowdown.get(r.name)
        r.overlap = compute.overlap.get(r.name)
        r.decode_shared = compute.decode_shared.get(r.name)

    gpu_fit = None
    notes: list[str] = []
    if baseline.device is not None:
        # A discrete GPU: the GPU side of each workload against the GPU's own memory, the rest against RAM.
        fit = fit_verdict(baseline.used, [(r.name, r.estimate.side_total("host")) for r in items], lines)
        gpu_lines = device_lines(baseline.device.total)
        gpu_used = Range.exact(baseline.device.used)
        gpu_fit = fit_verdict(gpu_used, [(r.name, r.estimate.side_total("gpu")) for r in items], gpu_lines)
        notes.append(
            f"discrete GPU ({baseline.device.name}, {fmt_est(baseline.device.total)}): GPU-side memory is "
            f"planned against it (lines at {DEVICE_SAFE_SHARE:.0%} / {DEVICE_AGGRESSIVE_SHARE:.0%}), "
            "the host side against RAM"
        )
    else:
        fit = fit_verdict(baseline.used, [(r.name, r.total) for r in items], lines)
    if lines.scaled:
        notes.append(
            f"this machine's pool is {fmt_est(lines.pool)}: the safe and aggressive lines are "
            f"scaled from 80/100 of 128 GB"
        )
    for r in items:
        notes += [f"{r.name}: {warning}" for warning in r.warnings]
    if ollama_default:
        notes.append(
            f"Ollama models are estimated at a {OLLAMA_DEFAULT_CONTEXT}-token context; Ollama 0.15.5+ "
            f"defaults to {OLLAMA_AUTO_CONTEXT} on a Spark (48 GiB or more of GPU memory) unless "
            f"OLLAMA_CONTEXT_LENGTH or num_ctx is set: check `ollama ps`, and set context to what it shows"
        )
    return Evaluation(
        baseline=baseline, items=items, lines=lines, fit=fit, compute=compute, notes=notes, gpu_fit=gpu_fit
    )
