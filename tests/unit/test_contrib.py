"""contrib/: the Grafana dashboard and the alerting rules query only metrics the exporter really serves, in
PromQL that promtool accepts, and the rules pass their promtool unit tests (the systemd units:
test_systemd_units.py)."""

from __future__ import annotations

import functools
import json
import re
import subprocess
from pathlib import Path

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from sparktop.core.snapshot import GB
from sparktop.exporter.server import ExporterServer
from sparktop.exporter.state import SamplingLoop
from sparktop.sources.demo import DemoSource
from tests.fixtures.exporters import require

CONTRIB = Path(__file__).resolve().parents[2] / "contrib"
METRIC = re.compile(r"\b(sparktop_[a-z_]+|DCGM_FI_[A-Z_]+)\b")
VARIABLE = re.compile(r"\$\{?\w+\}?")  # a Grafana template variable: $instance, ${job}


def _exprs() -> list[str]:
    dashboard = json.loads((CONTRIB / "grafana-dashboard.json").read_text())
    return [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]


@functools.cache  # once per worker: the tests only read it
def _served_names() -> frozenset[str]:
    loop = SamplingLoop(DemoSource("default"), 1.0, 80 * GB, 100 * GB)
    for _ in range(400):  # until the training run's creep is detected (its series are served then)
        loop.step()
        if loop.latest is not None and loop.latest.creep:
            break
    assert loop.latest is not None and loop.latest.creep
    text = generate_latest(ExporterServer(loop, "127.0.0.1", 0).app.registry).decode()
    names: set[str] = set()
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        names.update(sample.name for sample in family.samples)
    return frozenset(names)


def test_dashboard_uses_served_metrics_only() -> None:
    served = _served_names()
    dashboard = json.loads((CONTRIB / "grafana-dashboard.json").read_text())
    variables = [json.dumps(v.get("query")) for v in dashboard["templating"]["list"]]
    used = {name for expr in _exprs() + variables for name in METRIC.findall(expr)}
    assert used, "the dashboard queries no sparktop metric"
    assert used <= served, f"not served: {sorted(used - served)}"


def test_dashboard_promql_parses(tmp_path: Path) -> None:
    promtool = require("promtool", "prometheus")
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:panel_{i}", "expr": VARIABLE.sub(".*", expr)}
        for i, expr in enumerate(_exprs())
    ]}]}  # fmt: skip
    path = tmp_path / "rules.yml"
    path.write_text(json.dumps(rules))  # YAML is a superset of JSON
    check = [promtool, "check", "rules", str(path)]
    result = subprocess.run(check, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr


# --- the Prometheus alerting rules (issue 32 item 13) -----------------------------------------------------


RULES = CONTRIB / "sparktop-alerts.yml"


def _rules_text() -> str:
    """The rules file without its comments (no YAML library here: what is checked is in the text)."""
    return "\n".join(line for line in RULES.read_text().splitlines() if not line.lstrip().startswith("#"))


def _alert_names() -> set[str]:
    return set(re.findall(r"^\s*- alert: (\w+)$", _rules_text(), re.MULTILINE))


def test_alert_rules_use_served_metrics_only() -> None:
    used = set(METRIC.findall(_rules_text()))
    assert used, "the rules query no sparktop metric"
    served = _served_names()
    assert used <= served, f"not served: {sorted(used - served)}"


def test_alert_rules_cover_what_users_page_on() -> None:
    names = _alert_names()
    assert {
        "SparktopCreepCrossesSafeLine",
        "SparktopPoolExhaustionForecast",
        "SparktopMemoryPressureCritical",
        "SparktopGpuThrottleLasting",
        "SparktopExporterDown",
    } <= names
    tested = (CONTRIB / "sparktop-alerts.test.yml").read_text()
    untested = {name for name in names if f"alertname: {name}\n" not in tested}
    assert not untested, f"alerts without a promtool case: {sorted(untested)}"


def test_alert_rules_pass_promtool_check_and_their_unit_tests() -> None:
    """The cases that fire (creep toward a line, the pool's forecast, pressure, a lasting throttle, an
    exporter down or stale) and those that must not (a one-off step, growth that stopped, a blip)."""
    promtool = require("promtool", "prometheus")
    check = subprocess.run(
        [promtool, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60
    )
    assert check.returncode == 0, check.stdout + check.stderr
    unit = subprocess.run(
        [promtool, "test", "rules", "sparktop-alerts.test.yml"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=CONTRIB,
    )
    assert unit.returncode == 0 and "SUCCESS" in unit.stdout, unit.stdout + unit.stderr
