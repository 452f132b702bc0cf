"""SVG snapshots of the main views on the deterministic demo (fixed seed, fixed simulated clock, no timers).
Each picture's app is warm_app's: make_app's dashboard with the demo's warm-up simulated once per worker, not
once per picture (the pictures are the same bytes).

Update the baselines after a deliberate visual change with `pytest tests/ui --snapshot-update` and look at
the report (snapshot_report.html) before committing them.
"""

from __future__ import annotations

from tests.ui.demo_app import SEVEN_MINUTES, warm_app


def pictured(**kwargs):
    """The dashboard as a user sees it seven minutes in."""
    return warm_app(warmup=SEVEN_MINUTES, **kwargs)


def test_dashboard_dark(snap_compare):
    assert snap_compare(pictured(), terminal_size=(120, 36))


def test_dashboard_light(snap_compare):
    assert snap_compare(pictured(theme="sparktop-light"), terminal_size=(120, 36))


def test_dashboard_high_contrast(snap_compare):
    assert snap_compare(pictured(theme="sparktop-high-contrast"), terminal_size=(120, 36))


def test_dashboard_nvidia(snap_compare):
    assert snap_compare(pictured(theme="sparktop-nvidia"), terminal_size=(120, 36))


def test_dashboard_80x24(snap_compare):
    assert snap_compare(pictured(), terminal_size=(80, 24))


def test_dashboard_200x60(snap_compare):
    assert snap_compare(pictured(), terminal_size=(200, 60))


def test_containers_tab(snap_compare):
    assert snap_compare(pictured(), terminal_size=(120, 36), press=["2"])


def test_processes_tab_80x24(snap_compare):
    assert snap_compare(pictured(), terminal_size=(80, 24), press=["3"])


def test_critical_pressure(snap_compare):
    assert snap_compare(warm_app("critical", warmup=120), terminal_size=(120, 36))


def test_help_screen(snap_compare):
    assert snap_compare(pictured(), terminal_size=(100, 36), press=["question_mark"])


def test_too_small(snap_compare):
    assert snap_compare(warm_app(warmup=5), terminal_size=(50, 14))


def test_models_tab(snap_compare):
    assert snap_compare(warm_app("servers", warmup=26), terminal_size=(120, 36), press=["5"])
