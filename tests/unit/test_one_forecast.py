"""One forecast for the banner and the creep lines (issue 32 item 1): on a 24 GB machine with two 1 GiB/min
growers, a 3 GiB/min one that stops, and others that allocate and free beside them, the exhaustion warning
stays up while the growth goes on (it blinked: shown, gone, back), its rate follows a grower that stops
within seconds (it said +6.0 GiB/min 24 s after), and it names the same time as the creep lines."""

from __future__ import annotations

import re

import pytest

from sparktop.core.snapshot import GIB
from sparktop.session.session import Session
from tests.fixtures.hogs import FAST_STOPS_S, growing_machine


def _minutes(text: str, pattern: str) -> str:
    found = re.search(pattern, text)
    assert found, text
    return found.group(1)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_banner_stays_up_on_steady_growth_and_agrees_with_the_creep_lines(seed: int) -> None:
    source, session = growing_machine(seed), Session()
    shown: list[bool] = []
    for _ in range(230):
        session.ingest(source.sample())
        fc = session.forecast
        assert fc is not None
        shown.append(fc.warning)
        if not fc.warning or fc.rate_bytes_per_s is None:
            continue
        # One rate: the banner's is the pool's, all the growers together, no less than the creep lines'.
        assert fc.rate_bytes_per_s >= sum(a.rate_bytes_per_s for a in session.creep) * 0.999
        # One time: every creep line says the pool runs out when the banner does, in the same words.
        banner = fc.message()
        when = _minutes(banner, r"pool exhausted in ~([^ ]+ (?:s|min))")
        for alert in session.creep:
            assert alert.eta_pool_s == pytest.approx(fc.eta_s)
            assert _minutes(alert.message(), r"the pool in ~([^ ,]+ (?:s|min))") == when
        elapsed = source.elapsed
        if elapsed >= FAST_STOPS_S + 8:  # the fast grower stopped: the rate is the two left, within seconds
            assert fc.rate_bytes_per_s == pytest.approx(2 * GIB / 60, rel=0.25), (elapsed, banner)
    first = shown.index(True)
    assert first <= 90, "the growth was not seen"
    assert all(shown[first:]), f"the banner went away at t+{first + shown[first:].index(False) + 1} s"
