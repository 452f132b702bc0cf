"""Text a server controls (model names, versions, error bodies), made visible (sparktop.core.safe_text) and
bounded."""

from __future__ import annotations

from sparktop.core.safe_text import visible as _visible


def visible(value: object, limit: int = 200) -> str:
    text = _visible(str(value))
    return text if len(text) <= limit else text[: limit - 1] + "…"
