"""What the catalog holds: quantisations, KV cache types, model presets and the workload entries a plan
names, plus the one way a memory figure in GB is read (`parse_gb_range`). Plain data: the lookups over them
are lookup.py's, reading them from TOML is loader.py's."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from sparktop.plan.catalog.params import MAX_MEMORY_GB
from sparktop.plan.estimate import Architecture
from sparktop.settings.files import SettingsError


@dataclass(frozen=True)
class Quant:
    name: str
    bits: float
    aliases: tuple[str, ...] = ()
    gguf_file_type: int | None = None


@dataclass(frozen=True)
class KvDtype:
    name: str
    bytes: float
    aliases: tuple[str, ...] = ()


@dataclass
class ModelSpec:
    """A model the estimates can reason about: its architecture and, when known, its real size."""

    name: str
    arch: Architecture
    hf_id: str | None = None
    aliases: tuple[str, ...] = ()
    description: str = ""
    native_quant: str = "BF16"
    weights_bytes: float | None = None  # size of the weights files in native_quant
    source: str = "preset"  # "preset", "user", "local:ollama", "local:hf", "local:gguf"
    path: str | None = None


@dataclass
class CatalogEntry:
    """A workload you can put in a plan by name. `fields` are parameter values (see params.py); the plan fills
    in the defaults."""

    name: str
    fields: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    aliases: tuple[str, ...] = ()
    source: str = (
        "builtin"  # "reference", "preset", "ollama", "user", "local:ollama", "local:hf", "local:gguf"
    )
    reference_gb: tuple[float, float, float] | None = None  # the reference's footprint, for comparison
    weights_bytes: float | None = (
        None  # the model's real weights size, when the entry is a file or a known tag
    )
    path: str | None = None
    origin: str = ""  # FILE:LINE of its definition (and overrides)

    @property
    def kind(self) -> str:
        return str(self.fields.get("kind", "inference" if "model" in self.fields else "other"))

    @property
    def engine(self) -> str | None:
        return self.fields.get("engine")

    @property
    def local(self) -> bool:
        return self.source.startswith("local:")


class CatalogError(SettingsError):
    """One bad entry: where it is and what is wrong (`FILE:LINE: key: message`)."""


def parse_gb_range(value: Any) -> tuple[float, float, float]:
    """A number, [low, high] (mid the midpoint), [low, mid, high] or {low, mid, high} in GB."""
    if isinstance(value, dict):
        value = [value.get("low"), value.get("mid"), value.get("high")]
        if value[1] is None and value[0] is not None and value[2] is not None:
            value = [value[0], value[2]]
    if isinstance(value, bool):
        raise ValueError("expected a number of GB or a [low, high] list")
    if isinstance(value, int | float):
        nums = [float(value)] * 3
    elif isinstance(value, str):
        try:
            nums = [float(value)] * 3
        except ValueError:
            raise ValueError("expected a number of GB or a [low, high] list") from None
    elif (
        isinstance(value, list | tuple)
        and len(value) in (2, 3)
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        nums = [float(v) for v in value]
        if len(nums) == 2:
            nums = [nums[0], (nums[0] + nums[1]) / 2, nums[1]]
    else:
        raise ValueError("expected a number of GB or a [low, high] list")
    if not all(math.isfinite(n) for n in nums):
        raise ValueError("must be finite numbers of GB (not nan or inf)")
    if any(n < 0 for n in nums) or not nums[0] <= nums[1] <= nums[2]:
        raise ValueError("expected 0 <= low <= mid <= high")
    if nums[2] > MAX_MEMORY_GB:
        raise ValueError(f"must be at most {MAX_MEMORY_GB:g} GB")
    return nums[0], nums[1], nums[2]
