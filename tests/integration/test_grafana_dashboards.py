"""Dashboards nobody on this team wrote, and our own, against a real Prometheus scraping two demo exporters
(fixtures/exporters.DemoNode: `sparktop serve --demo`, in this process): each panel's PromQL, variables
substituted as Grafana does (see fixtures/grafana.py).

- NVIDIA's DCGM dashboard (tests/data/grafana/, see tests/data/README.md) shows data in 7 of its 8 panels.
  "Tensor Core Utilization" (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE) stays empty: it is a DCGM profiling counter
  that NVML, which sparktop reads, does not offer.
- contrib/grafana-dashboard.json's "Exporter up" says DOWN (0) for an exporter that was stopped.

One Prometheus for the module (scrape every second); the exporters sample once an hour, so Prometheus's values
can be compared exactly with each node's /snapshot.json. The last test stops a node: keep it last.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sparktop.core.snapshot import MIB
from tests.fixtures import grafana
from tests.fixtures.exporters import DemoNode, PrometheusServer, demo_nodes, served_snapshot

ROOT = Path(__file__).resolve().parents[2]
DCGM_DASHBOARD = ROOT / "tests" / "data" / "grafana" / "dcgm-exporter-dashboard.json"
CONTRIB_DASHBOARD = ROOT / "contrib" / "grafana-dashboard.json"
# Empty against sparktop, and why: see the module's docstring.
MAY_STAY_EMPTY = {"Tensor Core Utilization"}


@dataclass
class Lab:
    prometheus: PrometheusServer
    nodes: list[DemoNode]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    with (
        demo_nodes() as nodes,
        PrometheusServer(tmp_path_factory.mktemp("prometheus"), [n.address for n in nodes]) as prometheus,
    ):
        prometheus.wait_for("DCGM_FI_DEV_GPU_TEMP", 2)
        prometheus.wait_for("sparktop_build_info", 2)
        yield Lab(prometheus, nodes)


def test_nvidia_dcgm_dashboard_has_data_in_7_of_8_panels(lab: Lab) -> None:
    dashboard = grafana.load(DCGM_DASHBOARD)
    chosen = grafana.choose_all(dashboard, lab.prometheus)
    assert chosen["instance"] == sorted(n.address for n in lab.nodes) and chosen["gpu"] == ["0"]
    results = grafana.panel_results(dashboard, lab.prometheus, chosen)
    assert len(results) == 8
    empty = {title for title, answers in results.items() if not any(answers)}
    assert empty <= MAY_STAY_EMPTY, f"no data in {sorted(empty)}"
    assert len(results) - len(empty) >= 7
    # one series per node in the per-GPU panels
    assert len(results["GPU Temperature"][0]) == len(lab.nodes)


def test_dcgm_series_carry_the_snapshots_values_in_dcgm_units(lab: Lab) -> None:
    fields = {
        "DCGM_FI_DEV_GPU_TEMP": lambda s: s.gpu.gpus[0].temperature_c,
        "DCGM_FI_DEV_POWER_USAGE": lambda s: s.gpu.gpus[0].power_w,
        "DCGM_FI_DEV_SM_CLOCK": lambda s: s.gpu.gpus[0].sm_clock_mhz,
        "DCGM_FI_DEV_GPU_UTIL": lambda s: s.gpu.gpus[0].utilization_pct,
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": lambda s: s.gpu.gpus[0].energy_j * 1000,
        "DCGM_FI_DEV_FB_USED": lambda s: s.memory.used // MIB,
        "DCGM_FI_DEV_FB_FREE": lambda s: s.memory.available // MIB,
    }
    snapshots = {node.address: served_snapshot(node) for node in lab.nodes}
    for name, expected in fields.items():
        got = {r["metric"]["instance"]: r for r in lab.prometheus.query(name)}
        assert set(got) == set(snapshots), name
        for address, snap in snapshots.items():
            labels = got[address]["metric"]
            assert float(got[address]["value"][1]) == pytest.approx(expected(snap)), (name, address)
            assert (labels["gpu"], labels["device"], labels["Hostname"]) == ("0", "nvidia0", snap.hostname)
            assert labels["UUID"] == snap.gpu.gpus[0].uuid and labels["pci_bus_id"] == "0000000F:01:00.0"


def test_contrib_dashboard_exporter_up_says_down_for_a_killed_exporter(lab: Lab) -> None:
    dashboard = grafana.load(CONTRIB_DASHBOARD)
    (panel,) = [p for p in grafana.panels(dashboard) if p.title == "Exporter up"]
    (expr,) = panel.exprs
    defined = {v["name"]: v for v in grafana.variables(dashboard)}

    def up_by_instance() -> dict[str, float]:
        # Grafana asks for the variables' values again on a time range change (refresh: 2)
        chosen = grafana.choose_all(dashboard, lab.prometheus)
        query = grafana.interpolate(expr, chosen, defined)
        return {r["metric"]["instance"]: float(r["value"][1]) for r in lab.prometheus.query(query)}

    alive, victim = lab.nodes
    assert up_by_instance() == {alive.address: 1.0, victim.address: 1.0}
    victim.stop()
    lab.prometheus.wait_for(f'up{{instance="{victim.address}"}} == 0', 1)
    # The killed exporter is still listed for the last hour and its panel reads 0: DOWN, not absent.
    assert up_by_instance() == {alive.address: 1.0, victim.address: 0.0}
