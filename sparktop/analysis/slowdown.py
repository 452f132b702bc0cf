"""Measured slowdowns: how much slower a served model answers while another GPU consumer is busy, against its
own speed alone just before. Pure functions and a small tracker fed one snapshot per tick.

The rule (every part of it guards against noise; tests/unit/test_slowdown.py tries each):

- A reading is one probe of a server (a new `checked_at`) for one model: its tokens/s per running request.
  It counts only with at least one request running and tokens generated (an idle server, or one busy with
  prefill only, says nothing about decode speed).
- The neighbour: `gpu_neighbours()` (below), the one function to change when the snapshot learns more. It
  must stay busy for `MIN_BUSY_S` without a break; a neighbour busy for one tick gives nothing.
- Solo readings: those in the `SOLO_WINDOW_S` before the neighbour became busy during which nothing else was
  known busy (without per-process use: before the neighbour appeared, with the same processes otherwise).
- At least `MIN_READINGS` solo readings and `MIN_READINGS` readings since the neighbour became busy (a burst
  of one request gives one or two).
- The figure is the ratio of the medians (solo / together): one slow or fast probe cannot move it.
- Only for a server this machine shows running (its process, or its container): a server's counters are its
  own claim, and anything can answer on a port (the footprint store checks the same for peaks).
- Only a figure inside PLAUSIBLE_RATIO (below) is a slowdown; one outside it says something else happened.

Servers that report throughput: vLLM and SGLang (generation-token counters), llama.cpp (`/metrics`:
`tokens_predicted_total`). Ollama reports no token counter, so it gets no figure.
"""

from __future__ import annotations

import re
import statistics
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from sparktop.analysis.time_slicing import BESIDE_COMPUTE, BESIDE_DECODER, BESIDE_DECODER_BOTH_HEAVY
from sparktop.core.snapshot import NeighbourKind, ServiceReport, Slowdown, Snapshot, process_key

MIN_READINGS = 5  # readings in each window (servers are probed every 2 s: 10 s of answering)
MIN_BUSY_S = 20.0  # the neighbour busy without a break for this long
SOLO_WINDOW_S = 600.0  # solo readings from at most 10 min before the neighbour became busy
MAX_TOGETHER = 900  # readings kept while the neighbour stays busy (the most recent)
BUSY_SM_PCT = 20.0  # a neighbour whose kernels ran this share of the SMs' time is busy
# Without per-process use: a GPU process beside the server counts as busy while the device is this busy.
BUSY_DEVICE_PCT = 50.0
SHOWN_FROM = 1.1  # a ratio below this is "not slower"
STARTED_WITHIN_S = 30.0  # a neighbour busy this soon after its start "started"; later it "became busy"
# What a figure can be. Beside a busy neighbour a model cannot answer faster than alone (the GPU's time and
# its 273 GB/s are shared, never added to): a figure below 1 is noise, and below 0.9 it is no longer noise
# but a change of its own (a smaller batch, other prompts, counters that are not what they say). Above 10x
# the neighbour would leave it under a tenth of the GPU, where time slicing between two contexts gives each
# a share and the reference's worst measured pair is 2.35x: a stalled or reset counter, not a slowdown.
PLAUSIBLE_RATIO = (0.9, 10.0)
# The least a planned slowdown can be: a measured 0.95x is planned as 1.0x (no faster than alone), said so.
NO_FASTER_THAN_ALONE = 1.0


def plausible_ratio(ratio: float) -> bool:
    low, high = PLAUSIBLE_RATIO
    return low <= ratio <= high


# What a training run looks like on its command line (training: compute-bound, the planner's "sustained").
_TRAINING = re.compile(
    r"\b(train\w*|finetune\w*|fine-tune\w*|torchrun|deepspeed|accelerate launch|pretrain\w*|sft|lightning)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Neighbour:
    key: str  # "container:<id>" or a process key
    label: str
    kind: NeighbourKind
    started: float | None = None  # its earliest process start (Unix time), when known


@dataclass(frozen=True)
class GpuShare:
    """Who else is busy on the GPU this tick, as far as the snapshot can tell: busiest first with per-process
    SM use (`per_process`), else every GPU compute process beside the server while the device is busy,
    newest first."""

    busy: tuple[Neighbour, ...]
    per_process: bool

    @property
    def keys(self) -> frozenset[str]:
        return frozenset(n.key for n in self.busy)


def server_pids(report: ServiceReport, snapshot: Snapshot) -> set[int]:
    """The PIDs that run a server: its container's, or its host process and that process's children."""
    owner = report.owner or ""
    if owner.startswith("container:"):
        cid = owner.split(":", 1)[1]
        pids = {p.pid for p in snapshot.processes if p.container_id == cid}
        for container in snapshot.containers:
            if container.id == cid:
                pids.update(container.pids)
        return pids
    if owner.startswith("process:"):
        for proc in snapshot.processes:
            if process_key(proc) == owner:
                return {proc.pid} | {
                    p.pid for p in snapshot.processes if p.ppid == proc.pid and p.container_id is None
                }
    return set()


@dataclass
class _Group:
    label: str
    sm: float = 0.0
    started: float | None = None
    command: str = ""
    server: bool = False

    def neighbour(self, key: str) -> Neighbour:
        kind: NeighbourKind = "decoder" if self.server else "other"
        if not self.server and _TRAINING.search(self.command):
            kind = "training"
        return Neighbour(key, self.label, kind, self.started)


def gpu_neighbours(snapshot: Snapshot, own: set[int], servers: Iterable[set[int]] = ()) -> GpuShare:
    """The GPU consumers other than the processes `own` that are busy now, grouped by container (a host
    process is its own group). With per-process SM use on the snapshot, those at BUSY_SM_PCT or more,
    busiest first; without it, every other process holding GPU memory for compute while the device is at
    BUSY_DEVICE_PCT or more, newest first (the one that started last is taken for the cause). `servers`: the
    PIDs of the other model servers, whose groups are decoders."""
    wanted = {gp.pid for gpu in snapshot.gpu.gpus for gp in gpu.processes}
    by_pid = {p.pid: p for p in snapshot.processes if p.pid in wanted}
    names = {c.id: c.label for c in snapshot.containers}
    serving: set[int] = set().union(*servers)
    groups: dict[str, _Group] = {}
    per_process = False
    util = max((g.utilization_pct or 0.0 for g in snapshot.gpu.gpus), default=0.0)
    for gpu in snapshot.gpu.gpus:
        for gp in gpu.processes:
            if gp.pid in own or gp.kind == "graphics":
                continue
            sm = gp.sm_pct
            per_process |= sm is not None
            proc = by_pid.get(gp.pid)
            if proc is None:
                key, label = f"pid:{gp.pid}", f"pid {gp.pid}"
            elif proc.container_id is not None:
                key, label = (
                    f"container:{proc.container_id}",
                    names.get(proc.container_id, proc.container_id[:12]),
                )
            else:
                key, label = process_key(proc), proc.name
            group = groups.setdefault(key, _Group(label))
            group.sm += sm or 0.0
            group.server |= gp.pid in serving
            if proc is not None:
                group.command += f" {proc.name} {proc.cmdline}"
                if proc.start_time is not None:
                    group.started = min(group.started or proc.start_time, proc.start_time)
    found: list[tuple[float, Neighbour]] = []
    for key, group in groups.items():
        if per_process:
            if group.sm >= BUSY_SM_PCT:
                found.append((-group.sm, group.neighbour(key)))
        elif util >= BUSY_DEVICE_PCT:
            found.append((-(group.started or 0.0), group.neighbour(key)))
    found.sort(key=lambda item: (item[0], item[1].key))
    return GpuShare(tuple(n for _, n in found), per_process)


def planner_range(kind: str) -> tuple[float, float]:
    """What the planner assumes beside this kind of neighbour (measured on an H100: the reference's pairs)."""
    if kind == "training":
        return BESIDE_COMPUTE[False], BESIDE_COMPUTE[True]
    if kind == "decoder":
        return BESIDE_DECODER, BESIDE_DECODER_BOTH_HEAVY
    return BESIDE_DECODER, BESIDE_COMPUTE[True]


def _figure(value: float) -> str:
    """2.0, 2.35, 1.9: one decimal at least, two where the second says something."""
    text = f"{value:.2f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


def planner_range_text(kind: str) -> str:
    """`2.0–2.35`: the planner's range beside this kind of neighbour, as the lines print it."""
    low, high = planner_range(kind)
    return f"{_figure(low)}–{_figure(high)}"


def slowdown_line(s: Slowdown) -> str:
    """`qwen3:32b 2.1× slower since ssd-tetris-train started (planner: 2.0–2.35×)`."""
    what = f"{s.ratio:.1f}× slower" if s.ratio >= SHOWN_FROM else f"not slower ({s.ratio:.2f}×)"
    started = s.neighbour_started is not None and s.since - s.neighbour_started <= STARTED_WITHIN_S
    when = "started" if started else "became busy"
    return f"{s.model} {what} since {s.neighbour} {when} (planner: {planner_range_text(s.neighbour_kind)}×)"


def slowdowns(snapshot: Snapshot) -> list[Slowdown]:
    return [s for report in snapshot.services for s in report.slowdowns]


def slowdown_lines(snapshot: Snapshot) -> list[str]:
    """What the Models tab and `--once` say: each slowdown measured now, and each server that cannot have
    one because it reports no token counts (Ollama)."""
    lines = [slowdown_line(s) for s in slowdowns(snapshot)]
    for report in snapshot.services:
        counts = any(m.tokens_per_s is not None for m in report.models)
        if report.server == "ollama" and report.models and not counts:
            lines.append(
                f"ollama at {report.endpoint} reports no token counts: no tok/s, no measured slowdown"
            )
    return lines


# --- the tracker -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Reading:
    t: float
    rate: float | None  # tokens/s per running request; None: nothing to learn from this probe
    busy: frozenset[str]
    per_process: bool


@dataclass
class _Streak:
    neighbour: Neighbour
    since: float
    solo: list[float]
    together: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_TOGETHER))


@dataclass
class _Series:
    readings: deque[_Reading] = field(default_factory=deque)
    checked_at: float | None = None
    streak: _Streak | None = None


def _solo(reading: _Reading, neighbour: Neighbour, now: GpuShare) -> bool:
    if reading.rate is None:
        return False
    if reading.per_process:
        return not reading.busy
    # Without per-process use every GPU process counts as busy while the device is: a reading is solo for
    # this neighbour when it was absent and nothing was there that is not there now.
    return neighbour.key not in reading.busy and reading.busy <= now.keys - {neighbour.key}


class SlowdownTracker:
    """Feed it every snapshot (`update`); it returns the slowdowns measured now, by the rule above."""

    def __init__(self, max_series: int = 64) -> None:
        self._series: dict[tuple[str, str], _Series] = {}
        self.max_series = max_series

    def update(self, snapshot: Snapshot) -> list[Slowdown]:
        now = snapshot.timestamp
        reports = [r for r in snapshot.services if r.server and r.models]
        if not any(m.tokens_per_s is not None for r in reports for m in r.models):
            self._series.clear()
            return []  # no server counts tokens (none, or only Ollama): nothing to measure
        pids = {id(r): server_pids(r, snapshot) for r in reports}
        out: list[Slowdown] = []
        seen: set[tuple[str, str]] = set()
        for report in reports:
            own = pids[id(report)]
            if not own:
                continue  # nothing on this machine is seen running it: its counters are only a claim
            share: GpuShare | None = None
            for model in report.models:
                if model.tokens_per_s is None:
                    continue  # Ollama: no token counter
                key = (report.endpoint, model.name)
                seen.add(key)
                series = self._series.get(key)
                if series is None:
                    if len(self._series) >= self.max_series:
                        continue
                    series = self._series[key] = _Series()
                if share is None:
                    share = gpu_neighbours(snapshot, own, [p for r, p in pids.items() if r != id(report)])
                found = self._step(
                    series, report, model.name, model.tokens_per_s, model.requests_running, now, share
                )
                if found is not None:
                    out.append(found)
        for key in [k for k in self._series if k not in seen]:
            del self._series[key]  # the server or the model went away
        return out

    def _step(
        self,
        series: _Series,
        report: ServiceReport,
        model: str,
        tokens_per_s: float,
        running: int | None,
        now: float,
        share: GpuShare,
    ) -> Slowdown | None:
        checked = report.checked_at if report.checked_at is not None else now
        reading: _Reading | None = None
        if checked != series.checked_at:  # a new probe: the tick between two probes repeats the last one
            series.checked_at = checked
            rate = tokens_per_s / running if running and running >= 1 and tokens_per_s > 0 else None
            reading = _Reading(now, rate, share.keys, share.per_process)
        if not share.busy:
            series.streak = None
        else:
            neighbour = share.busy[0]
            streak = series.streak
            if streak is None or streak.neighbour.key != neighbour.key:
                since = now
                alone = [
                    r.rate
                    for r in series.readings
                    if r.rate is not None and r.t >= now - SOLO_WINDOW_S and _solo(r, neighbour, share)
                ]
                streak = series.streak = _Streak(neighbour, since, alone)
            if reading is not None and reading.rate is not None:
                streak.together.append(reading.rate)
        if reading is not None:
            series.readings.append(reading)
        while series.readings and series.readings[0].t < now - SOLO_WINDOW_S:
            series.readings.popleft()
        streak = series.streak
        if streak is None or now - streak.since < MIN_BUSY_S:
            return None
        if len(streak.solo) < MIN_READINGS or len(streak.together) < MIN_READINGS:
            return None
        solo, together = statistics.median(streak.solo), statistics.median(streak.together)
        if not plausible_ratio(solo / together):
            return None
        return Slowdown(
            endpoint=report.endpoint,
            server=report.server,
            model=model,
            neighbour=streak.neighbour.label,
            neighbour_kind=streak.neighbour.kind,
            since=streak.since,
            neighbour_started=streak.neighbour.started,
            ratio=round(solo / together, 2),
            solo_tokens_per_s=round(solo, 2),
            together_tokens_per_s=round(together, 2),
            solo_readings=len(streak.solo),
            together_readings=len(streak.together),
            per_process=share.per_process,
        )
