"""Figures as the screen shows them."""

from __future__ import annotations

import pytest

from sparktop.format import fmt_gb


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
