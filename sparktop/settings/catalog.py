"""The user catalog's shape ($XDG_CONFIG_HOME/sparktop/catalog.toml) and its [discovery] table.

Each top-level table is checked here (a key that is not a list of tables is reported and that table skipped);
what an entry's keys mean — parameter values, model architecture — is checked by the catalog loader with the
parameter rules the plan and the What-if editor share. [discovery] is one pydantic model: a bad key loses only
the model source it configures, the rest of the catalog loads.
"""

from __future__ import annotations

import functools
import math
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, create_model

from sparktop.settings.files import KeyLines, SettingsError, problems_from


def _finite_positive(value: float) -> float:
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"must be a finite number above 0, not {value}")
    return float(value)


def _finite_not_negative(value: float) -> float:
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"must be a finite number >= 0, not {value}")
    return float(value)


PositiveNumber = Annotated[float, Field(allow_inf_nan=True), AfterValidator(_finite_positive)]
NumberNotNegative = Annotated[float, Field(allow_inf_nan=True), AfterValidator(_finite_not_negative)]
WholeNotNegative = Annotated[int, Field(ge=0)]
Name = Annotated[str, Field(min_length=1)]


class QuantEntry(BaseModel):
    """[[quant]]: a weights format and its bits per weight."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: Name
    bits: PositiveNumber
    aliases: str | list[str] = []
    gguf_file_type: WholeNotNegative | None = None


class KvDtypeEntry(BaseModel):
    """[[kv_dtype]]: a KV cache element type and its size."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: Name
    bytes: PositiveNumber
    aliases: str | list[str] = []


class _ModelMeta(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: Annotated[str, Field(pattern=r"\S")]
    like: str | None = None
    hf_id: str | None = None
    aliases: str | list[str] = []
    description: str | None = None
    native_quant: str | None = None
    file_gb: PositiveNumber | None = None
    ollama: list[dict[str, Any]] = []


@functools.cache
def model_preset_entry(
    ints: tuple[str, ...], floats: tuple[str, ...], bools: tuple[str, ...]
) -> type[BaseModel]:
    """[[model]]: a model's architecture (its config.json facts), optionally `like` another preset. The
    architecture fields are the catalog's (it adds one in one place); which are required depends on `like`,
    so the loader checks that; here each value's type and range."""
    fields: dict[str, Any] = {name: (WholeNotNegative | None, None) for name in ints}
    fields |= {name: (NumberNotNegative | None, None) for name in floats}
    fields |= {name: (bool | None, None) for name in bools}
    return create_model("ModelPresetEntry", __base__=_ModelMeta, **fields)


class OllamaTagEntry(BaseModel):
    """[[model.ollama]]: an Ollama tag of the model above it."""

    model_config = ConfigDict(extra="forbid", strict=True)

    tag: Name
    quant: str = "Q4_K_M"
    file_gb: PositiveNumber | None = None
    context: Any = None  # checked by the parameter rules plans use


def validate_entry(
    model: type[BaseModel], raw: Any, file: str, lines: KeyLines, loc: tuple[str | int, ...]
) -> tuple[Any, list[SettingsError]]:
    """(the entry, []) or (None, its problems) for one table of the catalog at `loc`."""
    try:
        return model.model_validate(raw), []
    except ValidationError as exc:
        return None, problems_from(exc, file, lines, loc)


class DiscoverySettings(BaseModel):
    """Where to look for local models. None: the default place."""

    model_config = ConfigDict(extra="forbid", strict=True)

    enabled: bool = True
    gguf_dirs: list[str] = []
    ollama_models: str | None = None
    hf_cache: str | None = None


# A bad key in [discovery] skips the source it configures, rather than scanning a place not meant.
SOURCE_OF_KEY = {"ollama_models": "ollama", "hf_cache": "hf", "gguf_dirs": "gguf"}


class CatalogFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    quant: list[dict[str, Any]] = []
    kv_dtype: list[dict[str, Any]] = []
    model: list[dict[str, Any]] = []
    workload: list[dict[str, Any]] = []
    discovery: dict[str, Any] = {}


def _keeping_good(
    model: type[BaseModel], data: dict[str, Any], file: str, lines: KeyLines, prefix: tuple[str, ...] = ()
) -> tuple[Any, list[SettingsError], set[str]]:
    """`model` from `data` with each refused top-level key dropped; (value, problems, dropped keys)."""
    data = dict(data)
    problems: list[SettingsError] = []
    dropped: set[str] = set()
    while True:
        try:
            return model.model_validate(data), problems, dropped
        except ValidationError as exc:
            for problem, error in zip(problems_from(exc, file, lines, prefix), exc.errors(), strict=True):
                key = str(error["loc"][0])
                if key in data:
                    data.pop(key)
                    dropped.add(key)
                    problems.append(problem)


def read_catalog_file(data: dict[str, Any], file: str, text: str) -> tuple[CatalogFile, list[SettingsError]]:
    """The catalog file's tables; a table of the wrong shape is reported and left out."""
    lines = KeyLines(text)
    catalog, problems, _dropped = _keeping_good(CatalogFile, data, file, lines)
    for problem in problems:
        if problem.message == "unknown key":
            problem.message = "unknown table (expected workload, model, quant, kv_dtype or discovery)"
    return catalog, problems


def read_discovery(
    data: dict[str, Any], file: str, text: str
) -> tuple[DiscoverySettings, list[SettingsError], set[str]]:
    """[discovery] settings, one problem per bad key, and the sources ("ollama", "hf", "gguf") to skip."""
    settings, problems, dropped = _keeping_good(DiscoverySettings, data, file, KeyLines(text), ("discovery",))
    for problem in problems:
        source = SOURCE_OF_KEY.get(
            problem.key.removeprefix("discovery.").split("[")[0] if problem.key else ""
        )
        if source:
            problem.message += f"; {source} models are not looked for"
    return settings, problems, {SOURCE_OF_KEY[k] for k in dropped if k in SOURCE_OF_KEY}


__all__ = [
    "CatalogFile",
    "DiscoverySettings",
    "KvDtypeEntry",
    "OllamaTagEntry",
    "QuantEntry",
    "model_preset_entry",
    "read_catalog_file",
    "read_discovery",
    "validate_entry",
]
