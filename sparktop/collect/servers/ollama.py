"""Ollama: `GET /api/ps` (the loaded models) and `GET /api/version`.

/api/ps answers `{"models": [{name, model, size, size_vram, digest, expires_at, context_length,
details{format, family, parameter_size, quantization_level}}]}`; `context_length` came in later versions
(absent before ~0.9) and every field is treated as optional. The host-side part of a model is
size − size_vram (what Ollama did not place on the GPU).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from sparktop.collect.servers.probe import ServerError, get_json, get_version
from sparktop.collect.servers.reading import MAX_MODELS, Reading
from sparktop.collect.servers.server_text import visible
from sparktop.collect.servers.values import Checked
from sparktop.core.server_kinds import OLLAMA
from sparktop.core.snapshot import ServedModel

KIND = OLLAMA

# Go prints up to nine fractional digits; Python's fromisoformat takes at most six.
_FRACTION = re.compile(r"(\.\d{6})\d+")


def parse_time(value: object) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    text = _FRACTION.sub(r"\1", value.strip()).replace("Z", "+00:00")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment.timestamp()


# The fields /api/ps gives (some only in later versions): the ones present are listed as "what this server
# reported". Only these are looked for: a server's own keys are not collected (10,000 distinct keys in one
# answer made that list a quadratic search).
FIELDS = (
    "name", "model", "size", "size_vram", "digest", "expires_at", "context_length", "details",
)  # fmt: skip


def parse_ps(data: Any) -> tuple[list[ServedModel], list[str], str | None, int]:
    """(loaded models — at most MAX_MODELS —, the fields the answer carried, a note on figures refused,
    models past the cap); ServerError when it is not an /api/ps answer."""
    if not isinstance(data, dict) or not isinstance(data.get("models"), list):
        raise ServerError('/api/ps answer has no "models" list')
    models: list[ServedModel] = []
    seen: set[str] = set()
    more = 0
    check = Checked()
    for entry in data["models"]:
        if not isinstance(entry, dict):
            continue
        name = entry.get("name") or entry.get("model")
        if not isinstance(name, str) or not name:
            continue
        if len(models) >= MAX_MODELS:
            more += 1
            continue
        seen.update(f for f in FIELDS if f in entry)
        shown = visible(name)
        size = check.size(entry.get("size"), f"{shown} size")
        vram = check.size(entry.get("size_vram"), f"{shown} size_vram")
        raw_details = entry.get("details")
        details: dict[str, Any] = raw_details if isinstance(raw_details, dict) else {}
        models.append(
            ServedModel(
                name=shown,
                gpu_bytes=vram,
                cpu_bytes=max(0, size - (vram or 0)) if size is not None else None,
                context_length=check.tokens(entry.get("context_length"), f"{shown} context_length"),
                expires_at=parse_time(entry.get("expires_at")),
                parameter_size=visible(details["parameter_size"]) if details.get("parameter_size") else None,
                quantization=visible(details["quantization_level"])
                if details.get("quantization_level")
                else None,
            )
        )
    return models, [f for f in FIELDS if f in seen], check.note(), more


def recognises(answer: Any) -> bool:
    """Whether an answer of `GET /api/ps` (KIND.probe_path) is Ollama's."""
    return isinstance(answer, dict) and isinstance(answer.get("models"), list)


def read(base: str, timeout: float, want_version: bool = True) -> Reading:
    models, fields, note, more = parse_ps(get_json(f"{base}/api/ps", timeout))
    version = get_version(f"{base}/api/version", timeout) if want_version else None
    return Reading(KIND.name, version=version, models=models, fields=fields, note=note, more_models=more)
