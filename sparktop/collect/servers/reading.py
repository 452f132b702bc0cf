"""What one probe of one server gives back, before the collector adds owner and rates."""

from __future__ import annotations

from dataclasses import dataclass, field

from sparktop.core.snapshot import ServedModel

# Models kept per server: a real server holds a few (vLLM serves one; Ollama as many as fit). A server that
# lists thousands cannot make sparktop hold them all: the rest are a count (`more_models`).
MAX_MODELS = 64


@dataclass
class Reading:
    server: str  # "ollama", "vllm", "llama.cpp", "sglang"
    version: str | None = None
    models: list[ServedModel] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)  # metric names / JSON fields that had a value
    note: str | None = None  # something the user should know (metrics endpoint off, a figure refused, say)
    more_models: int = 0  # models the server listed past MAX_MODELS: counted, not kept


def join_notes(*notes: str | None) -> str | None:
    return "; ".join(n for n in notes if n) or None
