"""Arbitrary numbers — nan, inf, negative, zero, tiny, huge — into every numeric flag, config key and plan
parameter: each is either refused with a message naming it, or accepted as a finite value within its bounds
that every later computation (bytes, estimates, the bar's int()) can use. Never a traceback."""

from __future__ import annotations

import argparse
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparktop.commands.common import settings_from
from sparktop.commands.main import build_parser
from sparktop.commands.plan import _settings
from sparktop.commands.record import _DURATION, _INTERVAL
from sparktop.plan import Plan, PlanError, evaluate
from sparktop.plan.catalog import load_catalog
from sparktop.plan.catalog.params import PARAMS
from sparktop.settings.config import DEFAULTS, config_from_mapping
from sparktop.settings.files import SettingsError

NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.sampled_from([0, -0.0, 1e-300, 1e300, 1e308, -1, 0.05, 0.1, 3600, 3600.5, 48, 1e6, 1e6 + 1]),
)
# What a person types: the same numbers as text, and a few spellings float() accepts.
TYPED = st.one_of(
    NUMBERS.map(str), st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-4", "1_000"])
)
CONFIG_NUMBERS = ("interval", "safe_gb", "max_gb", "stop_timeout", "history_hours")
BOUNDS = {
    "interval": (0.1, 3600.0),
    "safe_gb": (0.0, 1e6),
    "max_gb": (0.0, 1e6),
    "stop_timeout": (0.0, 3600.0),
    "history_hours": (0.0, 48.0),
}
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(autouse=True)
def no_user_files(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def _within(key: str, value: float) -> bool:
    low, high = BOUNDS[key]
    return math.isfinite(value) and low <= value <= high


@FAST
@given(key=st.sampled_from(CONFIG_NUMBERS), value=NUMBERS)
def test_every_numeric_config_key(key, value):
    config, errors = config_from_mapping({key: value}, "config.toml", f"{key} = 1\n")
    got = getattr(config, key)
    if errors:
        assert len(errors) == 1 and errors[0].startswith(f"config.toml:1: {key}: ")
        assert got == getattr(DEFAULTS, key)
    else:
        assert got == value and _within(key, got)
    assert math.isfinite(got) and isinstance(config.safe_bytes, int) and config.safe_bytes < config.max_bytes


@FAST
@given(flag=st.sampled_from(["--interval", "--safe", "--max"]), text=TYPED)
def test_every_dashboard_flag(flag, text):
    opts = build_parser([]).parse_args(["--once", f"{flag}={text}"])
    key = {"--interval": "interval", "--safe": "safe_gb", "--max": "max_gb"}[flag]
    try:
        config, _problems = settings_from(opts)
    except SettingsError as exc:
        assert str(exc).startswith(f"{flag}: ") and "\n" not in str(exc)
        return
    value = getattr(config, key)
    assert value == float(text) and _within(key, value) and config.safe_gb < config.max_gb


@FAST
@given(safe=st.none() | NUMBERS, high=st.none() | NUMBERS)
def test_plan_lines(safe, high):
    args = argparse.Namespace(safe=safe, max=high)
    try:
        _config, safe_bytes, max_bytes, _problems = _settings(args)
    except SettingsError as exc:
        assert str(exc).startswith(("--safe: ", "--max: "))
        return
    for given_gb, got in ((safe, safe_bytes), (high, max_bytes)):
        assert (got is None) == (given_gb is None)
        if got is not None:
            assert math.isfinite(got) and 0 < got <= 1e6 * 1e9
    if safe_bytes is not None and max_bytes is not None:
        assert safe_bytes < max_bytes


@FAST
@given(flag=st.sampled_from(["--interval", "--duration"]), value=NUMBERS)
def test_record_flags(flag, value):
    check = _INTERVAL if flag == "--interval" else _DURATION
    try:
        got = check(float(value))
    except ValueError as exc:
        assert str(exc).startswith("must be ")
        return
    assert math.isfinite(got) and got > 0


CATALOG = load_catalog(False, discover=False)
NUMERIC_PARAMS = [p for p in PARAMS if p.type in ("int", "float")]


@FAST
@given(param=st.sampled_from(NUMERIC_PARAMS), value=st.one_of(NUMBERS, TYPED))
def test_every_numeric_plan_parameter(param, value):
    """The What-if editor, plan files and `plan NAME,key=value` all go through Plan.add / Plan.set."""
    entry = "ssd-tetris" if param.scope in ("training", "lora") else "llama3.1:8b"
    plan = Plan(CATALOG)
    try:
        item = plan.add(entry, **{param.key: value})
    except PlanError as exc:
        assert param.key in str(exc) or "expected" in str(exc) or "must" in str(exc)
        return
    stored = item.overrides.get(param.key)
    if stored is not None:
        numbers = stored if isinstance(stored, tuple) else (stored,)
        assert all(math.isfinite(n) for n in numbers)
        if param.minimum is not None:
            assert min(numbers) >= param.minimum
        if param.maximum is not None:
            assert max(numbers) <= param.maximum
    ev = evaluate(plan)
    for part in (ev.total.low, ev.total.mid, ev.total.high):
        assert math.isfinite(part)
        int(part)  # the What-if bar draws int(total): int(inf) used to end the app
