"""Figures as the screen shows them."""

from __future__ import annotations

import pytest

from sparktop.core.format import fmt_gb


@pytest.mark.parametrize(
    ("nbytes", "shown"),
    [
        (80e9, "80 GB"),
        (100e9, "100 GB"),
        (37.5e9, "37.5 GB"),
        (25.3e9 * 80 / 128, "15.8 GB"),  # the safe line scaled to a 25 GB pool: it read `15.8125 GB`
        (25.3e9 * 100 / 128, "19.8 GB"),
        (0.123e9, "0.12 GB"),
        (1000e9, "1000 GB"),  # three significant figures, never `1e+03`
        (0, "0 GB"),
    ],
)
def test_a_threshold_reads_at_three_significant_figures(nbytes: float, shown: str) -> None:
    assert fmt_gb(nbytes) == shown


def test_one_dash_for_no_value_everywhere() -> None:
    """`–` (en dash) and `—` (em dash) both stood for "no value" (the Models tab against the tables)."""
    import ast
    import re
    from pathlib import Path

    from sparktop.core.format import NO_VALUE

    assert NO_VALUE == "—"
    root = Path(__file__).parents[2] / "sparktop"
    # A string that holds an en dash writes it, or its escape: only those ~10 of ~160 modules are parsed
    # (parsing them all was ~0.7 s of CPU).
    en_dash = re.compile(r"–|\\u2013|\\U00002013|\\N\{en dash\}", re.IGNORECASE)
    found = []
    for path in root.rglob("*.py"):
        if path.name == "encoding.py":  # it writes both dashes as "-" on a non-UTF-8 stream
            continue
        source = path.read_text()
        if not en_dash.search(source):
            continue
        tree = ast.parse(source)
        # A range (`1.6–1.8x`) is written with an en dash inside an f-string: that is typography, not a value.
        in_fstrings = {id(part) for f in ast.walk(tree) if isinstance(f, ast.JoinedStr) for part in f.values}
        for node in ast.walk(tree):
            if id(node) in in_fstrings:
                continue
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip() == "–":
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not found, found
