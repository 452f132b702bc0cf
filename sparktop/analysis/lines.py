"""The safe and aggressive lines, defined once for every view: the dashboard's bar, banner and status line,
the exporter's `/metrics` and headers, the guard, creep alerts, the cluster view, the What-if tab and `plan`.

NVIDIA's guidance for a Spark (128 GB) is 80 GB safe and 100 GB aggressive. On a machine much smaller than a
Spark those figures would sit above the pool, so a line the user did not set keeps its share of the pool
(80/128 and 100/128); a line the user set (config or flag) is used as given. `LineChoice` is what the user
chose; `LineChoice.at(pool)` gives the lines on a machine with that pool.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparktop.core.snapshot import GB

SAFE_LINE = 80 * GB
AGGRESSIVE_LINE = 100 * GB
SPARK_POOL = 128 * GB  # 128 GB LPDDR5x; Linux shows about this much (119-122 GiB) as MemTotal

FITS, TIGHT, OOM_RISK, WONT_FIT = "fits", "tight", "OOM risk", "won't fit"


@dataclass(frozen=True)
class Lines:
    """The safe and aggressive lines and the pool, bytes. On a machine much smaller than a Spark the lines
    keep their share of the pool (80/128 and 100/128) and `scaled` says so."""

    safe: float = SAFE_LINE
    aggressive: float = AGGRESSIVE_LINE
    pool: float = SPARK_POOL
    scaled: bool = False

    @classmethod
    def for_pool(cls, pool: float) -> Lines:
        if pool >= 0.9 * SPARK_POOL:
            return cls(SAFE_LINE, AGGRESSIVE_LINE, pool)
        k = pool / SPARK_POOL
        return cls(SAFE_LINE * k, AGGRESSIVE_LINE * k, pool, scaled=True)

    @property
    def safe_bytes(self) -> int:
        return int(self.safe)

    @property
    def max_bytes(self) -> int:
        return int(self.aggressive)

    def classify(self, total: float) -> str:
        if total <= self.safe:
            return FITS
        if total <= self.aggressive:
            return TIGHT
        if total <= self.pool:
            return OOM_RISK
        return WONT_FIT

    def line_for(self, verdict: str) -> tuple[str, float] | None:
        """The line a plan with this verdict has crossed."""
        return {
            TIGHT: ("safe", self.safe),
            OOM_RISK: ("aggressive", self.aggressive),
            WONT_FIT: ("pool", self.pool),
        }.get(verdict)


def plan_lines(pool: float, safe: float | None = None, aggressive: float | None = None) -> Lines:
    """The lines on a machine with this pool: the user's where they set their own (bytes; None: not set),
    else the reference's 80/100 GB, kept as a share of the pool on a machine much smaller than a Spark."""
    default = Lines.for_pool(pool)
    if safe is None and aggressive is None:
        return default
    return Lines(safe or default.safe, aggressive or default.aggressive, pool)


@dataclass(frozen=True)
class LineChoice:
    """The lines the user chose, in bytes; None where they kept the reference's (scaled to the pool)."""

    safe: float | None = None
    aggressive: float | None = None

    @classmethod
    def of(cls, config: Any) -> LineChoice:
        """From a settings.config.Config: only the lines set in the file or by a flag count as chosen."""
        chosen: set[str] = getattr(config, "model_fields_set", set())
        return cls(
            float(config.safe_gb) * GB if "safe_gb" in chosen else None,
            float(config.max_gb) * GB if "max_gb" in chosen else None,
        )

    def at(self, pool: float) -> Lines:
        return plan_lines(pool, self.safe, self.aggressive)


__all__ = [
    "AGGRESSIVE_LINE",
    "SAFE_LINE",
    "SPARK_POOL",
    "LineChoice",
    "Lines",
    "plan_lines",
]
