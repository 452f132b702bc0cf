"""Text a server controls (model names, versions, error bodies) made safe to show: controls made visible."""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, and the bidi overrides/isolates that can reorder what a terminal shows.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(value: object, limit: int = 200) -> str:
    text = _UNSAFE.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
        str(value),
    )
    return text if len(text) <= limit else text[: limit - 1] + "…"
