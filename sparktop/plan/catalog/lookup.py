"""The merged catalog and the questions asked of it: an entry or model by a forgiving name, "did you mean",
the filtered list the What-if tab and `plan --list` show, and parameter values checked against the catalog's
own quantisations, KV cache types and models."""

from __future__ import annotations

import builtins
import difflib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from sparktop.plan.catalog.entries import CatalogEntry, KvDtype, ModelSpec, Quant, parse_gb_range
from sparktop.plan.catalog.params import KINDS, SPECS, canonical_key, coerce, engine_from_kind, norm_token


def parse_filter(text: str) -> tuple[str, str | None, str | None]:
    """Filter words, with `kind:training` and `source:local` taken out: (words, kind, source)."""
    words, kind, source = [], None, None
    for word in text.split():
        key, _, value = word.partition(":")
        if key.lower() == "kind" and value:
            kind = next((k for k in KINDS if k.startswith(value.lower())), value.lower())
        elif key.lower() == "source" and value:
            source = value.lower()
        else:
            words.append(word)
    return " ".join(words), kind, source


# --- lookups ------------------------------------------------------------------------------------------------


def name_key(name: str) -> str:
    """How names are compared: case, spaces and underscores forgiven."""
    return norm_token(name)


def loose_key(name: str) -> str:
    """Also forgiving ':' and '/' (llama3.1 70b, llama3.1-70b, llama3.1:70b)."""
    return re.sub(r"[:/]+", "-", name_key(name))


class Catalog:
    def __init__(self) -> None:
        self.entries: dict[str, CatalogEntry] = {}
        self.models: dict[str, ModelSpec] = {}
        self.quants: dict[str, Quant] = {}
        self.kv_dtypes: dict[str, KvDtype] = {}
        self.errors: list[str] = []
        self.files: list[str] = []  # files read, in order
        self._index: tuple[dict[str, str], dict[str, set[str]]] | None = None
        self._model_index: dict[str, str] | None = None

    # -- entries --

    def _entry_index(self) -> tuple[dict[str, str], dict[str, set[str]]]:
        if self._index is None:
            exact: dict[str, str] = {}
            loose: dict[str, set[str]] = {}
            for entry in self.entries.values():
                exact.setdefault(name_key(entry.name), entry.name)
            for entry in self.entries.values():
                for alias in entry.aliases:
                    exact.setdefault(name_key(alias), entry.name)
            for key, name in exact.items():
                loose.setdefault(loose_key(key), set()).add(name)
            self._index = (exact, loose)
        return self._index

    def _changed(self) -> None:
        self._index = None
        self._model_index = None

    def find(self, name: str) -> CatalogEntry | None:
        if name in self.entries:
            return self.entries[name]
        exact, loose = self._entry_index()
        if name_key(name) in exact:
            return self.entries[exact[name_key(name)]]
        matches = loose.get(loose_key(name), set())
        if len(matches) == 1:
            return self.entries[next(iter(matches))]
        return None

    def suggest(self, name: str, n: int = 3) -> list[str]:
        """Entry names close to `name`, for "did you mean"."""
        exact, loose = self._entry_index()
        key = name_key(name)
        out: list[str] = []
        for match in sorted(loose.get(loose_key(name), set())):
            out.append(match)
        for match in difflib.get_close_matches(key, list(exact), n=n * 2, cutoff=0.6):
            out.append(exact[match])
        if len(out) < n and len(key) >= 3:
            out += [exact[k] for k in exact if key in k][: n * 2]
        seen: list[str] = []
        for item in out:
            if item not in seen:
                seen.append(item)
        return seen[:n]

    def list(
        self, filter: str = "", kind: str | None = None, source: str | None = None
    ) -> list[CatalogEntry]:
        """Entries whose name, aliases or description contain every word of `filter` (case-insensitive);
        `kind` ("inference", "speech", "training", "other") and `source` (prefix: "local", "reference" ...)
        narrow it further, and so do `kind:training` and `source:local` written in `filter` (the What-if
        tab's find box and `sparktop plan --list` take the same text)."""
        filter, kind_word, source_word = parse_filter(filter)
        kind, source = kind or kind_word, source or source_word
        words = [name_key(w) for w in filter.split()]
        out = []
        for entry in self.entries.values():
            if kind and entry.kind != kind:
                continue
            if source and not entry.source.startswith(source):
                continue
            text = " ".join(
                [name_key(entry.name), *map(name_key, entry.aliases), name_key(entry.description)]
            )
            if all(w in text for w in words):
                out.append(entry)
        return out

    def add_entry(self, entry: CatalogEntry) -> None:
        self.entries[entry.name] = entry
        self._changed()

    def add_model(self, spec: ModelSpec) -> None:
        self.models[spec.name] = spec
        self._changed()

    # -- models, quants --

    def model(self, name: str) -> ModelSpec | None:
        if name in self.models:
            return self.models[name]
        if self._model_index is None:
            index: dict[str, str] = {}
            for spec in self.models.values():
                index.setdefault(name_key(spec.name), spec.name)
            for spec in self.models.values():
                if spec.hf_id:
                    index.setdefault(name_key(spec.hf_id), spec.name)
                for alias in spec.aliases:
                    index.setdefault(name_key(alias), spec.name)
            self._model_index = index
        found = self._model_index.get(name_key(name))
        return self.models[found] if found else None

    def model_names(self) -> builtins.list[str]:  # `list` here is the method above
        return list(self.models)

    def quant(self, name: str) -> Quant | None:
        if name in self.quants:
            return self.quants[name]
        key = name_key(name)
        for q in self.quants.values():
            if key == name_key(q.name) or key in (name_key(a) for a in q.aliases):
                return q
        return None

    def kv_dtype(self, name: str) -> KvDtype | None:
        if name in self.kv_dtypes:
            return self.kv_dtypes[name]
        key = name_key(name)
        for d in self.kv_dtypes.values():
            if key == name_key(d.name) or key in (name_key(a) for a in d.aliases):
                return d
        return None

    def quant_by_file_type(self) -> dict[int, str]:
        return {q.gguf_file_type: q.name for q in self.quants.values() if q.gguf_file_type is not None}

    # -- parameter values --

    def coerce_param(self, key: str, value: Any) -> Any:
        """A parameter value checked and converted (ValueError with a short message); `key` canonical."""
        spec = SPECS[key]
        if key == "memory_gb":
            return parse_gb_range(value)
        if key == "quant":
            q = self.quant(value) if isinstance(value, str) else None
            if q is None:
                raise ValueError(f"unknown quantisation {value!r} (known: {', '.join(self.quants)})")
            return q.name
        if key == "kv_dtype":
            d = self.kv_dtype(value) if isinstance(value, str) else None
            if d is None:
                raise ValueError(f"unknown KV cache type {value!r} (known: {', '.join(self.kv_dtypes)})")
            return d.name
        if key == "model":
            m = self.model(value) if isinstance(value, str) else None
            if m is None:
                close = difflib.get_close_matches(
                    name_key(str(value)), [name_key(n) for n in self.models], n=2
                )
                hint = f" (did you mean {' or '.join(close)}?)" if close else ""
                raise ValueError(f"unknown model {value!r}{hint}")
            return m.name
        return coerce(spec, value)

    def validate_params(
        self, raw: Mapping[str, Any], ignore: Iterable[str] = ()
    ) -> tuple[dict[str, Any], builtins.list[tuple[str, str]]]:
        """Parameter values from a file or a form: canonical keys, checked values, and (field, message) for
        each problem. `kind = "vllm"` is read as kind inference, engine vllm."""
        out: dict[str, Any] = {}
        problems: list[tuple[str, str]] = []
        skip = set(ignore)
        for raw_key, value in raw.items():
            if raw_key in skip:
                continue
            key = canonical_key(raw_key)
            if key is None:
                problems.append((raw_key, "unknown field"))
                continue
            if key == "kind":
                engine = engine_from_kind(value)
                if engine and "engine" not in raw:
                    out["engine"] = engine
            try:
                out[key] = self.coerce_param(key, value)
            except ValueError as exc:
                problems.append((raw_key, str(exc)))
        return out, problems
