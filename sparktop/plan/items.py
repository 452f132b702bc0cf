"""A what-if plan: workloads picked from the catalog, each with parameter overrides.

`Plan` is what the What-if tab edits (add, remove, move, set a parameter, list a workload's editable
parameters with their types and choices) and what plan files hold. `Plan.resolve()` turns an item into a
`Workload` with every value filled in: defaults, then the catalog entry's fields, then the item's overrides.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from sparktop.plan.catalog.entries import CatalogEntry, ModelSpec
from sparktop.plan.catalog.lookup import Catalog
from sparktop.plan.catalog.params import PARAMS, SPECS, ParamSpec, canonical_key, engine_from_kind
from sparktop.plan.estimate import default_loss
from sparktop.plan.verdict import DEFAULT_DUTY
from sparktop.settings.files import format_problem

# Ollama's default context before 0.15.5, and the reference's assumption; 0.15.5+ picks 262144 on machines
# with 48 GiB of GPU memory or more (a Spark) unless OLLAMA_CONTEXT_LENGTH or num_ctx says otherwise.
OLLAMA_DEFAULT_CONTEXT = 4096
OLLAMA_AUTO_CONTEXT = 262144
LLAMA_CPP_DEFAULT_CONTEXT = 4096
OTHER_DEFAULT_CONTEXT = 4096
DEFAULT_GPU_USE = {
    "training": "sustained",
    "inference": "interactive",
    "speech": "pipeline",
    "other": "batch",
}
TRAINING_DEFAULTS: dict[str, Any] = {
    "method": "sft",
    "batch": 4,
    "seq_len": 2048,
    "precision": "bf16",
    "optimizer": "adamw",
    "gradient_checkpointing": False,
    "efficient_attention": True,
    "lora_rank": 16,
    "dataloader_workers": 0,  # PyTorch's DataLoader and transformers' Trainer default
}


class PlanError(ValueError):
    """Bad input for a plan: an unknown workload, a bad parameter. `str()` is one readable line."""

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        suggestions: list[str] | None = None,
        line: int | None = None,
        source: str | None = None,
    ) -> None:
        self.message, self.field, self.suggestions = message, field, suggestions or []
        self.line, self.source = line, source
        # Every problem found (a plan file's, each with its line): this one first. `str()` is the first.
        self.problems: list[PlanError] = [self]
        super().__init__(self._text())

    def _text(self) -> str:
        hint = f" (did you mean {' or '.join(self.suggestions)}?)" if self.suggestions else ""
        return format_problem(self.source, self.line, self.field, f"{self.message}{hint}")

    def located(self, source: str, line: int | None) -> PlanError:
        return PlanError(
            self.message,
            field=self.field,
            suggestions=self.suggestions,
            line=line or self.line,
            source=source,
        )


@dataclass
class PlanItem:
    uid: int
    entry: str | None  # catalog entry name; None for a workload described by its parameters alone
    overrides: dict[str, Any] = field(default_factory=dict)  # canonical key -> checked value
    line: int | None = None  # where it was defined in a plan file


@dataclass(frozen=True)
class Workload:
    """An item with every value decided."""

    uid: int
    name: str
    entry: CatalogEntry | None
    kind: str
    gpu_use: str
    pipeline: str
    duty: float
    values: dict[str, Any]  # every parameter that applies, resolved
    explicit: frozenset[str]  # keys the plan item sets itself
    ignored: tuple[str, ...]  # keys the item sets that do not apply to it
    model: ModelSpec | None = None

    @property
    def engine(self) -> str | None:
        return self.values.get("engine")

    @property
    def fixed(self) -> bool:
        """Memory given as a figure rather than estimated from a model."""
        return "memory_gb" in self.values

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


@dataclass(frozen=True)
class Param:
    """One editable parameter of one workload, for a form: type, choices, bounds, current value."""

    key: str
    label: str
    type: str  # "int" | "float" | "bool" | "str" | "choice"
    value: Any
    default: Any  # what it would be without the item's override
    overridden: bool
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    unit: str = ""
    help: str = ""


def _applies(spec: ParamSpec, values: dict[str, Any]) -> bool:
    kind = values.get("kind")
    derived = "model" in values and "memory_gb" not in values
    scope = spec.scope
    if scope == "all":
        return True
    if scope == "pipeline":
        return values.get("gpu_use") == "pipeline"
    if scope == "model":
        return kind in ("inference", "training")
    if scope == "inference":
        return kind == "inference" and derived
    if scope == "llama":
        return kind == "inference" and derived and values.get("engine") != "vllm"
    if scope == "vllm":
        return kind == "inference" and derived and values.get("engine") == "vllm"
    if scope == "training":
        return kind == "training" and derived
    if scope == "lora":
        return kind == "training" and derived and "lora" in str(values.get("method", ""))
    return False


class Plan:
    """Workloads to evaluate together. Every change is checked against the catalog and raises PlanError."""

    def __init__(self, catalog: Catalog, items: list[PlanItem] | None = None) -> None:
        self.catalog = catalog
        self.items: list[PlanItem] = list(items or [])
        # What the plan is judged against, where its file says (What-if `b`, `plan --clean`): "live",
        # "clean" (this machine empty) or "spark" (an empty DGX Spark); None where nothing says.
        self.baseline: str | None = None
        self._uids = itertools.count(max((i.uid for i in self.items), default=0) + 1)

    def __iter__(self) -> Iterator[PlanItem]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    # -- editing --

    def add(self, name: str | None = None, /, **params: Any) -> PlanItem:
        """Add a catalog workload by name (forgiving case, spaces, underscores), with parameter overrides; or,
        with no name, a workload described by its parameters (kind, model ... or memory_gb)."""
        entry = None
        label = None
        overrides = self._check(params)
        if name is not None:
            entry = self.catalog.find(name)
            if entry is None:
                if "memory_gb" in overrides or "model" in overrides:
                    label = name  # a workload of the user's own, named by them
                else:
                    raise PlanError(f"unknown workload {name!r}", suggestions=self.catalog.suggest(name))
        elif "memory_gb" not in overrides and "model" not in overrides:
            raise PlanError("a workload needs a catalog name, a model, or memory_gb")
        if label and "label" not in overrides:
            overrides["label"] = label
        item = PlanItem(next(self._uids), entry.name if entry else None, overrides)
        self.items.append(item)
        try:
            self.resolve(item)
        except PlanError:
            self.items.remove(item)
            raise
        return item

    def remove(self, uid: int) -> PlanItem:
        item = self.item(uid)
        self.items.remove(item)
        return item

    def move(self, uid: int, index: int) -> None:
        item = self.item(uid)
        self.items.remove(item)
        self.items.insert(max(0, min(index, len(self.items))), item)

    def clear(self) -> None:
        self.items.clear()

    def set(self, uid: int, key: str, value: Any) -> None:
        """Override one parameter; `value` None goes back to the catalog's value."""
        item = self.item(uid)
        canonical = canonical_key(key)
        if canonical is None:
            raise PlanError("unknown field", field=key)
        old = dict(item.overrides)
        if value is None:
            item.overrides.pop(canonical, None)
        else:
            item.overrides[canonical] = self._check({canonical: value})[canonical]
            engine = engine_from_kind(value) if canonical == "kind" else None
            if engine:
                item.overrides["engine"] = engine
        try:
            self.resolve(item)
        except PlanError:
            item.overrides = old
            raise

    def item(self, uid: int) -> PlanItem:
        for item in self.items:
            if item.uid == uid:
                return item
        raise KeyError(uid)

    def _check(self, params: dict[str, Any]) -> dict[str, Any]:
        values, problems = self.catalog.validate_params(params)
        if problems:
            key, message = problems[0]
            raise PlanError(message, field=key)
        return values

    # -- resolving --

    def resolve(self, item: PlanItem | int) -> Workload:
        if isinstance(item, int):
            item = self.item(item)
        entry = self.catalog.entries.get(item.entry) if item.entry else None
        if item.entry and entry is None:
            raise PlanError(f"workload {item.entry!r} is no longer in the catalog")
        base = dict(entry.fields) if entry else {}
        own = dict(item.overrides)
        if "model" in own and "memory_gb" not in own:
            base.pop("memory_gb", None)  # the user asks for an estimate from the model
        merged = {**base, **own}
        model = self.catalog.model(merged["model"]) if merged.get("model") else None
        if merged.get("model") and model is None:
            raise PlanError(f"unknown model {merged['model']!r}", field="model")
        kind = merged.get("kind") or ("inference" if model else "other")
        values: dict[str, Any] = {**merged, "kind": kind}
        if kind not in ("inference", "training") or "memory_gb" in values:
            if "memory_gb" not in values:
                raise PlanError(
                    f"a {kind} workload needs memory_gb (its footprint in GB); to estimate it from "
                    f'a model, set kind = "inference"',
                    field="memory_gb",
                )
        elif model is None:
            raise PlanError(f"a {kind} workload needs a model or memory_gb", field="model")
        values.setdefault("gpu_use", DEFAULT_GPU_USE[kind])
        values.setdefault("duty", DEFAULT_DUTY[values["gpu_use"]])
        if values["gpu_use"] == "pipeline":
            values.setdefault("pipeline", "default")
        if "memory_gb" not in values and model is not None:
            if kind == "inference":
                self._inference_defaults(values, model)
            else:
                for key, default in TRAINING_DEFAULTS.items():
                    values.setdefault(key, default)
                values.setdefault("loss", default_loss(values["method"]))
        applicable = {k: v for k, v in values.items() if k in SPECS and _applies(SPECS[k], values)}
        ignored = tuple(k for k in own if k not in applicable)
        return Workload(
            uid=item.uid,
            name=_display_name(item, entry, applicable, model),
            entry=entry,
            kind=kind,
            gpu_use=applicable["gpu_use"],
            pipeline=str(applicable.get("pipeline", "")),
            duty=float(applicable["duty"]),
            values=applicable,
            explicit=frozenset(own),
            ignored=ignored,
            model=model if "memory_gb" not in applicable else None,
        )

    def _inference_defaults(self, values: dict[str, Any], model: ModelSpec) -> None:
        engine = values.setdefault("engine", "other")
        if engine in ("ollama", "llama.cpp"):
            native = self.catalog.quant(model.native_quant)
            values.setdefault("quant", model.native_quant if native and native.bits < 16 else "Q4_K_M")
            values.setdefault("kv_dtype", "f16")
            values.setdefault(
                "context", OLLAMA_DEFAULT_CONTEXT if engine == "ollama" else LLAMA_CPP_DEFAULT_CONTEXT
            )
        else:
            values.setdefault("quant", model.native_quant)
            values.setdefault("kv_dtype", "bf16")
            vllm_context = model.arch.context or OTHER_DEFAULT_CONTEXT  # vLLM: max_model_len from the model
            values.setdefault("context", vllm_context if engine == "vllm" else OTHER_DEFAULT_CONTEXT)
        values.setdefault("parallel", 1)
        values.setdefault("flash_attention", True)
        values.setdefault("gpu_memory_utilization", 0.9)

    def workloads(self) -> list[Workload]:
        return [self.resolve(item) for item in self.items]

    def params(self, uid: int) -> list[Param]:
        """The parameters of one workload a form can edit, in a stable order, with their current values."""
        item = self.item(uid)
        workload = self.resolve(item)
        without = self.resolve(PlanItem(item.uid, item.entry, {}, None)) if item.entry else None
        out = []
        for spec in PARAMS:
            if not _applies(spec, workload.values):
                continue
            value = workload.values.get(spec.key)
            if spec.key == "label":
                value = workload.name
            default = without.values.get(spec.key) if without else None
            if spec.key == "memory_gb" and isinstance(value, tuple):
                value = value[1]
            if spec.key == "memory_gb" and isinstance(default, tuple):
                default = default[1]
            out.append(
                Param(
                    key=spec.key,
                    label=spec.label,
                    type=spec.type,
                    value=value,
                    default=default,
                    overridden=spec.key in item.overrides,
                    choices=self.choices(spec.key),
                    minimum=spec.minimum,
                    maximum=spec.maximum,
                    unit=spec.unit,
                    help=spec.help,
                )
            )
        return out

    def choices(self, key: str) -> tuple[str, ...]:
        if key == "quant":
            return tuple(self.catalog.quants)
        if key == "kv_dtype":
            return tuple(self.catalog.kv_dtypes)
        if key == "model":
            return tuple(self.catalog.model_names())
        return SPECS[key].choices


def _display_name(
    item: PlanItem, entry: CatalogEntry | None, values: dict[str, Any], model: ModelSpec | None
) -> str:
    """The label, else the catalog name, else what it is ("sft qwen3-0.6b")."""
    if values.get("label"):
        return str(values["label"])
    if entry is not None:
        return entry.name
    if model is not None:
        if values.get("kind") == "training":
            return f"{values.get('method', 'sft')} {model.name}"
        engine = values.get("engine")
        return f"{model.name} ({engine})" if engine and engine != "other" else model.name
    return f"workload {item.uid}"
