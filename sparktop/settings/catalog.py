"""The user catalog's shape ($XDG_CONFIG_HOME/sparktop/catalog.toml) and its [discovery] table.

Each top-level table is checked here (a key that is not a list of tables is reported and that table skipped);
what an entry's keys mean — parameter values, model architecture — is checked by the catalog loader with the
parameter rules the plan and the What-if editor share. [discovery] is one pydantic model: a bad key loses only
the model source it configures, the rest of the catalog loads.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from sparktop.settings.files import KeyLines, SettingsError, problems_from


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
    data, problems, dropped = dict(data), [], set()
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


__all__ = ["CatalogFile", "DiscoverySettings", "read_catalog_file", "read_discovery"]
