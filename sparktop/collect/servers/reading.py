"""What one probe of one server gives back, before the collector adds owner and rates."""

from __future__ import annotations

from dataclasses import dataclass, field

from sparktop.model import ServedModel


@dataclass
class Reading:
    server: str  # "ollama", "vllm", "llama.cpp", "sglang"
    version: str | None = None
    models: list[ServedModel] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)  # metric names / JSON fields that had a value
    note: str | None = None  # something the user should know (metrics endpoint off, say)
