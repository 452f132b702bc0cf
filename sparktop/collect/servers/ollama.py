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

from sparktop.collect.servers.http import ServerError, get_json
from sparktop.collect.servers.reading import Reading
from sparktop.collect.servers.text import visible
from sparktop.model import ServedModel

SERVER = "ollama"
DEFAULT_PORT = 11434

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


def _int(value: object) -> int | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return int(value)
    return None


def parse_ps(data: Any) -> tuple[list[ServedModel], list[str]]:
    """Loaded models and the fields the answer carried; ServerError when it is not an /api/ps answer."""
    if not isinstance(data, dict) or not isinstance(data.get("models"), list):
        raise ServerError('/api/ps answer has no "models" list')
    models: list[ServedModel] = []
    seen: list[str] = []
    for entry in data["models"]:
        if not isinstance(entry, dict):
            continue
        for key in entry:
            if key not in seen:
                seen.append(key)
        name = entry.get("name") or entry.get("model")
        if not isinstance(name, str) or not name:
            continue
        size = _int(entry.get("size"))
        vram = _int(entry.get("size_vram"))
        raw_details = entry.get("details")
        details: dict[str, Any] = raw_details if isinstance(raw_details, dict) else {}
        models.append(
            ServedModel(
                name=visible(name),
                gpu_bytes=vram,
                cpu_bytes=max(0, size - (vram or 0)) if size is not None else None,
                context_length=_int(entry.get("context_length")),
                expires_at=parse_time(entry.get("expires_at")),
                parameter_size=visible(details["parameter_size"]) if details.get("parameter_size") else None,
                quantization=visible(details["quantization_level"])
                if details.get("quantization_level")
                else None,
            )
        )
    return models, seen


def read(base: str, timeout: float, want_version: bool = True) -> Reading:
    models, fields = parse_ps(get_json(f"{base}/api/ps", timeout))
    version = None
    if want_version:
        version = _version(base, timeout)
    return Reading(SERVER, version=version, models=models, fields=fields)


def _version(base: str, timeout: float) -> str | None:
    try:
        answer = get_json(f"{base}/api/version", timeout)
    except ServerError:
        return None  # very old servers have no /api/version; the models still count
    if isinstance(answer, dict) and isinstance(answer.get("version"), str):
        return visible(answer["version"], 40)
    return None
