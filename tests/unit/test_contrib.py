"""contrib/: the Grafana dashboard queries only metrics the exporter really serves, in PromQL that promtool
accepts (the systemd units: test_systemd_units.py)."""

from __future__ import annotations

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


def _served_names() -> set[str]:
    loop = SamplingLoop(DemoSource("default"), 1.0, 80 * GB, 100 * GB)
    for _ in range(400):  # long enough for the training run's creep to be detected
        loop.step()
    assert loop.latest is not None and loop.latest.creep
    text = generate_latest(ExporterServer(loop, "127.0.0.1", 0).app.registry).decode()
    names: set[str] = set()
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        names.update(sample.name for sample in family.samples)
    return names


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
