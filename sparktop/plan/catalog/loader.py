"""The catalog read and merged: built-in data files, models found on this machine, and the user's catalog.
(What it holds: entries.py; the lookups over it: lookup.py.)

Order (later wins, field by field): quantisation table and model presets (data/quants.toml, data/models.toml:
each preset is an entry, and so is each Ollama tag it lists), the reference workloads (data/reference.toml),
local models (discovery), then the user catalog ($XDG_CONFIG_HOME/sparktop/catalog.toml). A bad entry is
skipped and reported as "FILE:LINE: field 'x': message"; everything else still loads.

User catalog format (the same tables as the built-in files):

    [[workload]]              # a new entry, or fields to override on an existing one
    name = "my-tts"
    kind = "speech"
    memory_gb = [3, 4]        # a number, [low, high] or [low, mid, high]
    gpu_use = "pipeline"

    [[model]]                 # a model preset: architecture facts from its config.json
    name = "my-llama"
    like = "llama-3.1-8b"     # start from another preset

    [discovery]
    enabled = true
    gguf_dirs = ["/data/models"]
    ollama_models = "/srv/ollama/models"
    hf_cache = "/data/hf/hub"
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from sparktop.plan.catalog.entries import (
    CatalogEntry,
    CatalogError,
    KvDtype,
    ModelSpec,
    Quant,
    parse_gb_range,
)
from sparktop.plan.catalog.local_models import LocalModel, default_gguf_dirs
from sparktop.plan.catalog.local_models import discover as discover_local_models
from sparktop.plan.catalog.lookup import Catalog
from sparktop.plan.catalog.params import SPECS, coerce
from sparktop.plan.estimate import GB, Architecture
from sparktop.settings import files
from sparktop.settings.catalog import (
    CatalogFile,
    DiscoverySettings,
    KvDtypeEntry,
    OllamaTagEntry,
    QuantEntry,
    model_preset_entry,
    read_catalog_file,
    read_discovery,
    validate_entry,
)
from sparktop.settings.files import KeyLines, SettingsError, user_catalog_path

DATA_DIR = Path(__file__).resolve().parent / "data"
BUILTIN_FILES = ("quants.toml", "models.toml", "reference.toml")


def read_toml(path: Path) -> tuple[dict[str, Any], str]:
    """Parse a TOML file; CatalogError (with the line) if it cannot be read, is not UTF-8 or not TOML."""
    try:
        return files.read_toml(path)
    except SettingsError as exc:
        raise CatalogError(exc.file, exc.line, exc.key, exc.message) from None


# --- building the catalog -----------------------------------------------------------------------------------

_ARCH_INT = (
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "head_dim",
    "vocab",
    "intermediate",
    "context",
    "experts",
    "experts_active",
    "moe_intermediate",
    "sliding_window",
    "sliding_layers",
    "norms_per_layer",
)
_ARCH_BOOL = ("tied_embeddings", "qk_norm")
_ARCH_FLOAT = ("params", "active_params")
_MODEL_META = ("name", "like", "hf_id", "aliases", "description", "native_quant", "file_gb", "ollama")
_ENTRY_META = ("name", "aliases", "description", "reference_gb")


class _Source:
    """One file being read: its text for line numbers, and where errors go."""

    def __init__(self, catalog: Catalog, path: Path, text: str, label: str) -> None:
        self.catalog, self.path, self.text, self.label = catalog, path, text, label
        self.lines = KeyLines(text)

    def header(self, *table: str | int) -> int | None:
        """The line of a table: header("workload", 2), header("model", 0, "ollama", 1)."""
        return self.lines.line(table)

    def validated(self, model: type[BaseModel], raw: Any, loc: tuple[str | int, ...]) -> Any:
        """`raw` as `model`, or None with its problems added to the catalog's errors."""
        entry, problems = validate_entry(model, raw, self.label, self.lines, loc)
        self.catalog.errors += [str(p) for p in problems]
        return entry

    def error(self, table: tuple[str | int, ...], field_name: str | None, message: str) -> None:
        line = self.lines.line((*table, field_name) if field_name else table)
        self.catalog.errors.append(str(CatalogError(self.label, line, field_name, message)))


def _aliases(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ValueError("expected a string or a list of strings")


def _load_quants(src: _Source, data: Mapping[str, Any]) -> None:
    cat = src.catalog
    for i, raw in enumerate(data.get("quant", [])):
        q = src.validated(QuantEntry, raw, ("quant", i))
        if q is not None:
            cat.quants[q.name] = Quant(q.name, q.bits, _aliases(q.aliases), q.gguf_file_type)
    for i, raw in enumerate(data.get("kv_dtype", [])):
        d = src.validated(KvDtypeEntry, raw, ("kv_dtype", i))
        if d is not None:
            cat.kv_dtypes[d.name] = KvDtype(d.name, d.bytes, _aliases(d.aliases))


def _load_models(src: _Source, data: Mapping[str, Any], source: str) -> None:
    cat = src.catalog
    for i, raw in enumerate(data.get("model", [])):
        preset = src.validated(model_preset_entry(_ARCH_INT, _ARCH_FLOAT, _ARCH_BOOL), raw, ("model", i))
        if preset is None:
            continue
        try:
            spec, tags = _model_from_raw(cat, preset.model_dump(exclude_none=True))
        except _FieldError as exc:
            src.error(("model", i), exc.field, exc.message)
            continue
        spec.source = source
        cat.add_model(spec)
        _add_entry(
            cat,
            CatalogEntry(
                name=spec.name,
                fields={"kind": "inference", "engine": "other", "model": spec.name},
                description=spec.description or spec.name,
                aliases=tuple(a for a in (spec.hf_id, *spec.aliases) if a),
                source="preset" if source == "preset" else "user",
                weights_bytes=spec.weights_bytes,
                origin=f"{src.label}:{src.header('model', i)}",
            ),
        )
        for j, raw_tag in enumerate(tags):
            tag = src.validated(OllamaTagEntry, raw_tag, ("model", i, "ollama", j))
            if tag is None:
                continue
            try:
                entry = _ollama_entry(cat, spec, tag)
            except _FieldError as exc:
                src.error(("model", i, "ollama", j), exc.field, exc.message)
                continue
            entry.origin = f"{src.label}:{src.header('model', i, 'ollama', j)}"
            _add_entry(cat, entry)


class _FieldError(Exception):
    def __init__(self, field_name: str | None, message: str) -> None:
        super().__init__(message)
        self.field, self.message = field_name, message


def _model_from_raw(cat: Catalog, raw: Mapping[str, Any]) -> tuple[ModelSpec, list[dict[str, Any]]]:
    name = raw["name"]  # checked by the preset's model, as every value's type and range below
    base_name = raw.get("like") or (name if name in cat.models else None)
    base = cat.model(base_name) if base_name else None
    if raw.get("like") and base is None:
        raise _FieldError("like", f"no model named {raw['like']!r} (it must come earlier)")
    arch_values: dict[str, Any] = (
        {f.name: getattr(base.arch, f.name) for f in fields(Architecture)} if base else {}
    )
    arch_values.update({key: raw[key] for key in (*_ARCH_INT, *_ARCH_FLOAT, *_ARCH_BOOL) if key in raw})
    for key in ("layers", "hidden", "heads", "vocab", "params"):
        if not arch_values.get(key):
            raise _FieldError(key, "required (or `like` another model)")
    arch_values.setdefault("kv_heads", arch_values["heads"])
    if not arch_values.get("kv_heads"):
        arch_values["kv_heads"] = arch_values["heads"]
    if not arch_values.get("head_dim"):
        arch_values["head_dim"] = arch_values["hidden"] // arch_values["heads"]
    arch = Architecture(**arch_values)
    native = raw.get("native_quant", base.native_quant if base else "BF16")
    q = cat.quant(native) if isinstance(native, str) else None
    if q is None:
        raise _FieldError("native_quant", f"unknown quantisation {native!r}")
    file_gb = raw.get("file_gb")
    aliases = _aliases(raw.get("aliases"))
    tags = raw.get("ollama", [])
    spec = ModelSpec(
        name=name.strip(),
        arch=arch,
        hf_id=raw.get("hf_id", base.hf_id if base and not raw.get("like") else None),
        aliases=aliases or (base.aliases if base and not raw.get("like") else ()),
        description=str(raw.get("description", base.description if base else "")),
        native_quant=q.name,
        weights_bytes=float(file_gb) * GB
        if file_gb
        else (base.weights_bytes if base and not raw.get("like") else None),
    )
    return spec, tags


def _ollama_entry(cat: Catalog, spec: ModelSpec, tag: OllamaTagEntry) -> CatalogEntry:
    q = cat.quant(tag.quant)
    if q is None:
        raise _FieldError("quant", f"unknown quantisation {tag.quant!r}")
    fields_: dict[str, Any] = {"kind": "inference", "engine": "ollama", "model": spec.name, "quant": q.name}
    if tag.context is not None:
        try:
            fields_["context"] = coerce(SPECS["context"], tag.context)
        except ValueError as exc:
            raise _FieldError("context", str(exc)) from None
    return CatalogEntry(
        name=tag.tag,
        fields=fields_,
        description=f"Ollama: {spec.description or spec.name} ({q.name})",
        source="ollama",
        weights_bytes=tag.file_gb * GB if tag.file_gb else None,
    )


def _add_entry(cat: Catalog, entry: CatalogEntry) -> None:
    existing = cat.entries.get(entry.name)
    if existing is None:
        cat.add_entry(entry)
        return
    _merge_entry(cat, existing, entry)


def _merge_entry(cat: Catalog, existing: CatalogEntry, new: CatalogEntry) -> None:
    existing.fields.update(new.fields)
    if new.description:
        existing.description = new.description
    existing.aliases = tuple(dict.fromkeys((*existing.aliases, *new.aliases)))
    if new.reference_gb is not None:
        existing.reference_gb = new.reference_gb
    if new.weights_bytes is not None:
        existing.weights_bytes = new.weights_bytes
    if new.path:
        existing.path = new.path
    if new.source.startswith(("local:", "user")):
        existing.source = new.source
    existing.origin = ", ".join(o for o in (existing.origin, new.origin) if o)
    cat.add_entry(existing)  # stored again under its name: its new aliases are looked up too


def _load_workloads(src: _Source, data: Mapping[str, Any], source: str) -> None:
    cat = src.catalog
    for i, raw in enumerate(data.get("workload", [])):
        if not isinstance(raw, dict):
            continue
        name = raw.get("name")
        if not isinstance(name, str) or not name.strip():
            src.error(("workload", i), "name", "a workload needs a name")
            continue
        values, problems = cat.validate_params(raw, ignore=_ENTRY_META)
        try:
            aliases = _aliases(raw.get("aliases"))
        except ValueError as exc:
            problems.append(("aliases", str(exc)))
            aliases = ()
        reference = None
        if "reference_gb" in raw:
            try:
                reference = parse_gb_range(raw["reference_gb"])
            except ValueError as exc:
                problems.append(("reference_gb", str(exc)))
        if problems:
            for key, message in problems:
                src.error(("workload", i), key, message)
            continue
        existing = cat.find(name) if name not in cat.entries else cat.entries[name]
        if existing is None and "memory_gb" not in values and "model" not in values:
            src.error(
                ("workload", i),
                "name",
                f"{name!r} is not in the catalog: a new workload needs memory_gb or a model",
            )
            continue
        entry = CatalogEntry(
            name=existing.name if existing else name.strip(),
            fields=values,
            description=str(raw.get("description", "")),
            aliases=aliases,
            source=source,
            reference_gb=reference,
            origin=f"{src.label}:{src.header('workload', i)}",
        )
        _add_entry(cat, entry)


def _add_local(cat: Catalog, models: Iterable[LocalModel]) -> None:
    engines = {"ollama": "ollama", "hf": "other", "gguf": "llama.cpp"}
    for lm in models:
        source = f"local:{lm.source}"
        known = cat.quant(lm.quant) if lm.quant else None
        quant = known.name if known else None
        fields_: dict[str, Any] = {"kind": "inference", "engine": engines.get(lm.source, "other")}
        if lm.source == "hf" and lm.path.endswith(".gguf"):
            fields_["engine"] = "llama.cpp"
        if lm.arch is not None:
            spec = ModelSpec(
                name=lm.name,
                arch=lm.arch,
                hf_id=lm.hf_id,
                description=lm.description,
                native_quant=quant or "BF16",
                weights_bytes=float(lm.weights_bytes),
                source=source,
                path=lm.path,
            )
            cat.add_model(spec)
            fields_["model"] = spec.name
            if quant:
                fields_["quant"] = quant
        else:
            w = lm.weights_bytes / GB
            fields_["memory_gb"] = (w, w * 1.1, w * 1.3)
        if lm.context:
            fields_["context"] = lm.context
        name = lm.name.lower() if lm.source == "hf" else lm.name
        existing = cat.entries.get(name)
        entry = CatalogEntry(
            name=name,
            fields=fields_,
            description=existing.description if existing else lm.description,
            source=source,
            weights_bytes=float(lm.weights_bytes),
            path=lm.path,
            aliases=(lm.name,) if name != lm.name else (),
        )
        _add_entry(cat, entry)


def _user_dir(path: str | None) -> Path | None:
    return Path(os.path.expanduser(path)) if path else None


@functools.cache
def _builtin_catalog_state() -> bytes:
    """The built-in files' catalog, parsed once a process (~15 ms; the files ship with the package and do
    not change under it), kept as bytes so that each load starts from a copy of its own (~0.4 ms)."""
    import pickle  # here: only a catalog's load needs it

    cat = Catalog()
    for fname in BUILTIN_FILES:
        path = DATA_DIR / fname
        data, text = read_toml(path)  # a broken built-in file is a bug: let it raise
        src = _Source(cat, path, text, f"builtin:{fname}")
        cat.files.append(str(path))
        _load_quants(src, data)
        _load_models(src, data, "preset")
        _load_workloads(src, data, "reference" if fname == "reference.toml" else "builtin")
    return pickle.dumps(cat, protocol=pickle.HIGHEST_PROTOCOL)


def load_catalog(
    user_file: Path | bool | None = None,
    *,
    discover: bool = True,
    local_models: Iterable[LocalModel] | None = None,
) -> Catalog:
    """The merged catalog. `user_file`: None for the XDG default, False for none, or a path. `discover`: look
    for local models (Ollama, HF cache, GGUF). `local_models`: use these instead of looking (tests)."""
    import pickle

    cat: Catalog = pickle.loads(_builtin_catalog_state())  # a copy of its own; bytes this process made

    user_path = user_catalog_path() if user_file is None or user_file is True else user_file
    user = CatalogFile()
    user_src: _Source | None = None
    # exists(), not is_file(): a FIFO or device in its place is said (files.read_bytes), not skipped silently
    if isinstance(user_path, Path) and user_path.exists():
        try:
            user_data, text = read_toml(user_path)
        except CatalogError as exc:
            cat.errors.append(str(exc))
        else:
            user_src = _Source(cat, user_path, text, str(user_path))
            cat.files.append(str(user_path))
            user, problems = read_catalog_file(user_data, str(user_path), text)
            cat.errors += [str(p) for p in problems]
    settings, skip = DiscoverySettings(), set[str]()
    if user_src is not None:
        _load_quants(user_src, user.model_dump())
        _load_models(user_src, user.model_dump(), "user")
        settings, problems, skip = read_discovery(user.discovery, user_src.label, user_src.text)
        cat.errors += [str(p) for p in problems]

    if local_models is not None:
        _add_local(cat, local_models)
    elif discover and settings.enabled:
        found = discover_local_models(
            ollama_dir=_user_dir(settings.ollama_models),
            hf_cache=_user_dir(settings.hf_cache),
            gguf_dirs=[
                *default_gguf_dirs(),
                *(Path(os.path.expanduser(p)) for p in settings.gguf_dirs),
            ],
            quant_by_file_type=cat.quant_by_file_type(),
            skip=skip,
        )
        _add_local(cat, found.models)
        cat.errors += [f"discovery: {e}" for e in found.errors]

    if user_src is not None:
        _load_workloads(user_src, user.model_dump(), "user")
    return cat
