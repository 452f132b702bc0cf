"""Text for an output that cannot take every character (`PYTHONIOENCODING=ascii`, a C locale, a serial
console): sparktop's own glyphs fall back to ASCII look-alikes and what others wrote (a process name in
Chinese) to escapes, instead of a UnicodeEncodeError after the data was collected."""

from __future__ import annotations

import json
from typing import TextIO

# The non-ASCII glyphs sparktop writes itself, and how they read in ASCII.
ASCII_GLYPHS = str.maketrans(
    {
        "°": "",  # "63 °C" -> "63 C"
        "—": "-",
        "–": "-",
        "…": "...",
        "×": "x",
        "·": "-",
        "→": "->",
        "←": "<-",
        "≈": "~",
        "≥": ">=",
        "≤": "<=",
        "±": "+/-",
        "µ": "u",
        "■": "#",
        "▏": "|",
        "⚠": "!",
        "✓": "ok",
        "✗": "x",
        "\u00a0": " ",
    }
)


def _encoding(stream: TextIO) -> str:
    return getattr(stream, "encoding", None) or "utf-8"


def _encodable(text: str, encoding: str) -> bool:
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def for_stream(text: str, stream: TextIO) -> str:
    """`text` as `stream` can write it: unchanged when it can; otherwise glyphs in ASCII and any other
    character the encoding lacks as a backslash escape."""
    encoding = _encoding(stream)
    if _encodable(text, encoding):
        return text
    text = text.translate(ASCII_GLYPHS)
    try:
        return text.encode(encoding, errors="backslashreplace").decode(encoding)
    except LookupError:
        return text.encode("ascii", errors="backslashreplace").decode("ascii")


def json_for_stream(document: str, stream: TextIO) -> str:
    """A JSON document as `stream` can write it: JSON's own \\uXXXX escapes where the encoding lacks a
    character, so the output stays valid JSON that decodes to the same strings."""
    if _encodable(document, _encoding(stream)):
        return document
    return json.dumps(json.loads(document), ensure_ascii=True, indent=2)
