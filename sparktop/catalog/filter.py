"""The catalog filter the What-if tab's find box and `sparktop plan --list` both read: words, with
`kind:training` and `source:local` narrowing the list."""

from __future__ import annotations

from sparktop.catalog.params import KINDS


def parse_filter(text: str) -> tuple[str, str | None, str | None]:
    """(words, kind, source): `kind:tr` picks the kind it starts ("training"), `source:` a source prefix."""
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
