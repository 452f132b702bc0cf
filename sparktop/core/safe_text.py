"""Text that others control, made safe to show: control characters visible, nothing that steers a terminal.

Process names, command lines, container and compose labels, model names, file contents and the error messages
that quote them are written by other users. Written raw, `ESC ] 2 ; … BEL` renames the admin's terminal
window, `ESC [ 31 m` recolours it, `\\x9b` is the one-byte CSI, and U+202E reverses what follows on screen.
Rich and Textual strip only BEL, BS, VT, FF and CR, so this is done here, once, where such text enters
sparktop: the snapshot's string fields are `VisibleStr` (every source, live, demo, replay or a future
collector, builds its snapshot through the model), and the few texts that never become a model (errors naming
a file, toasts, the text output of `--once` and `plan`) go through `visible()` / `visible_lines()`.

The visible forms are printable and `visible` leaves them alone, so applying it twice changes nothing (a
recording replayed is validated again):

- C0 controls and DEL in caret notation, as `cat -v` and less show them: ESC → `^[`, BEL → `^G`, TAB → `^I`,
  newline → `^J`, DEL → `^?`;
- C1 controls (U+0080–U+009F) as `\\x9b`;
- bidi controls, line and paragraph separators and lone surrogates as `<U+202E>`.
"""

from __future__ import annotations

import re
import sys
from typing import Annotated

from pydantic import AfterValidator

# What a terminal acts on or that reorders the text around it. Other unprintable characters (NBSP, zero-width
# joiners in emoji, unassigned code points) are drawn as text, so they stay.
_OTHER_CONTROLS = (
    "\x7f-\x9f"  # DEL, C1
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidi marks, embeddings, overrides, isolates
    "\u2028\u2029"  # line and paragraph separators
    "\ud800-\udfff"  # lone surrogates (undecodable bytes kept by surrogateescape): not writable as UTF-8
)
_CONTROL_BUT_NEWLINE = re.compile(f"[\x00-\x09\x0b-\x1f{_OTHER_CONTROLS}]")


def _shown(code: int) -> str:
    if code < 0x20:
        return "^" + chr(code + 0x40)
    if code == 0x7F:
        return "^?"
    if code <= 0x9F:
        return f"\\x{code:02x}"
    return f"<U+{code:04X}>"


def _codes(char_class: str) -> list[int]:
    """The code points of a character class's body made of single characters and `a-b` ranges."""
    codes: list[int] = []
    i = 0
    while i < len(char_class):
        if char_class[i + 1 : i + 2] == "-" and i + 2 < len(char_class):
            codes += range(ord(char_class[i]), ord(char_class[i + 2]) + 1)
            i += 3
        else:
            codes.append(ord(char_class[i]))
            i += 1
    return codes


# Each C0 control and each of _OTHER_CONTROLS -> its visible form, for str.translate: one pass in C (a regex
# substitution calls back into Python for every control: a 10 kB name of them took milliseconds).
_VISIBLE = {code: _shown(code) for code in _codes(f"\x00-\x1f{_OTHER_CONTROLS}")}
_VISIBLE_BUT_NEWLINE = {code: shown for code, shown in _VISIBLE.items() if code != ord("\n")}


def visible(text: str) -> str:
    """`text` as one line of plain text: every control character, bidi control and line break made visible."""
    if text.isprintable():  # the common case, checked in C: nothing to do
        return text
    return text.translate(_VISIBLE)


def visible_lines(text: str) -> str:
    """As `visible`, keeping newlines: for text sparktop lays out in lines itself (`--once`, `plan`)."""
    if text.isprintable():
        return text
    return text.translate(_VISIBLE_BUT_NEWLINE)


def say(program: str, message: object) -> None:
    """One message of a command (`sparktop serve: ...`) on stderr, control characters made visible: it may
    quote a file's keys, a path, a server's error or a recording's line."""
    print(visible_lines(f"{program}: {message}"), file=sys.stderr, flush=True)


def has_raw_controls(text: str) -> bool:
    """Whether `text` still holds a character `visible` would have replaced (newlines allowed)."""
    return _CONTROL_BUT_NEWLINE.search(text) is not None


# A string field that holds text from outside: made visible when the model is built.
VisibleStr = Annotated[str, AfterValidator(visible)]


_JSON_UNSAFE = re.compile(f"[{_OTHER_CONTROLS}]")


def json_visible(document: str) -> str:
    """A JSON document as `json.dumps` / pydantic write it, with the characters JSON leaves raw (C1 controls,
    bidi controls, separators) written as `\\uXXXX` escapes too: the same data, safe on a terminal."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", document)


def one_line(text: object, limit: int | None = None) -> str:
    """`text` (an exception, a message) on one line: runs of whitespace, newlines included, become one space;
    cut at `limit` characters with "…"; an exception without a message reads as its type's name."""
    line = " ".join(str(text).split())
    if not line and isinstance(text, BaseException):
        line = type(text).__name__
    return line if limit is None or len(line) <= limit else line[: limit - 1] + "…"


def error_line(exc: BaseException) -> str:
    """An unexpected failure as one line for the user: "Type: message" (whitespace runs, newlines included,
    made one space), or the type's name alone when the exception has no message."""
    detail = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
