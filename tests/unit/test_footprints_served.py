"""A model server's own figures are a claim, not a measurement (issue 23 item 4, issue 27 item 3).

Anyone can answer on :11434. A local user's server that lists `llama3.1:70b-instruct-fp16` at 1 GB once
turned `plan`'s WON'T FIT (exit 2) into FITS (exit 0) for good. A model's peak is stored only when the machine
shows what serves it holding that memory, with who it was; the planner uses a stored peak below the
estimate's low side only when it is plausible, and says so either way."""

from __future__ import annotations

import json
import time

import pytest

from sparktop.collect.registry import AddOns
from sparktop.collect.servers.collector import ServersCollector
from sparktop.commands.plan import main
from sparktop.core.snapshot import (
    GB,
    ProcessInfo,
    ServedModel,
    ServiceReport,
    Snapshot,
)
from sparktop.footprints.store import FootprintCollector, FootprintStore, shared_store
from sparktop.plan import Baseline, Plan, evaluate
from sparktop.plan.measured import LiveFacts
from tests.fixtures.snapshots import snapshot as shared_snapshot

GIB = 1024**3
LIE = {"models": [{"name": "llama3.1:70b-instruct-fp16", "size": 1e9, "size_vram": 1e9}]}
NOW = time.time()


def snapshot(processes: list[ProcessInfo]) -> Snapshot:
    return shared_snapshot(total=120 * GIB, available=80 * GIB, free=60 * GIB, processes=processes)


def served_peaks(httpserver, tmp_path, processes: list[ProcessInfo], answer: dict) -> FootprintStore:
    """The real servers collector reading a real HTTP server, then the footprint collector, as a live
    source runs them each tick, until the server's models were reported."""
    httpserver.expect_request("/api/ps").respond_with_json(answer)
    httpserver.expect_request("/api/version").respond_with_json({"version": "0.12.6"})
    store = FootprintStore(tmp_path / "footprints.sqlite3", flush_s=0)
    servers = ServersCollector(env={"OLLAMA_HOST": httpserver.url_for("/").rstrip("/")}, interval=0.1)
    add_ons = AddOns([servers, FootprintCollector(store)])
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            snap = snapshot(processes)
            add_ons.collect(snap)
            if any(r.server == "ollama" and r.models for r in snap.services):
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the server's models were never reported")
        store.flush()
    finally:
        servers.close()
    return store


def model_rows(store: FootprintStore) -> list:
    return [fp for fp in store.all() if fp.kind == "model"]


def test_a_server_nothing_on_the_machine_serves_is_not_measured(httpserver, tmp_path):
    store = served_peaks(httpserver, tmp_path, [], LIE)
    assert model_rows(store) == []


def test_a_process_named_ollama_that_does_not_hold_the_memory_is_not_measured(httpserver, tmp_path):
    impostor = ProcessInfo(pid=777, name="ollama", cmdline="ollama", user="nobody", rss=20 * 1024**2,
                           start_time=NOW - 60)  # fmt: skip
    store = served_peaks(httpserver, tmp_path, [impostor], LIE)
    assert model_rows(store) == []


def test_a_server_whose_process_holds_its_models_is_measured_with_who_served_it(httpserver, tmp_path):
    server = ProcessInfo(pid=812, name="ollama", cmdline="/usr/local/bin/ollama serve", user="ollama",
                         rss=300 * 1024**2, start_time=NOW - 3600)  # fmt: skip
    runner = ProcessInfo(pid=813, ppid=812, name="ollama", cmdline="ollama runner", user="ollama",
                         rss=GIB, gpu_bytes=43 * 10**9, start_time=NOW - 3000)  # fmt: skip
    answer = {"models": [{"name": "llama3.1:70b", "size": 42_500_000_000, "size_vram": 42_500_000_000}]}
    store = served_peaks(httpserver, tmp_path, [server, runner], answer)
    (fp,) = model_rows(store)
    assert fp.name == "ollama:llama3.1:70b" and fp.peak_bytes == 42_500_000_000
    assert fp.owner == "ollama (pid 812, user ollama)"


# --- the planner -------------------------------------------------------------------------------------------


def plan_text(capsys, *argv: str) -> tuple[int, str]:
    code = main(["--machine=spark", "--no-discover", *argv])
    return code, capsys.readouterr().out


def test_an_implausible_stored_peak_does_not_make_a_model_fit(capsys):
    """The row the attack left (from before owners were recorded, or from a process that held 1 GB)."""
    store = shared_store()  # this test's own XDG_STATE_HOME (tests/conftest.py)
    store.record("model", "ollama:llama3.1:70b-instruct-fp16", 10**9)
    store.flush()
    code, out = plan_text(capsys, "llama3.1:70b-instruct-fp16")
    assert code == 2 and "WON'T FIT" in out, out
    assert "less than the model's weights" in out and "estimate is used" in out
    store.record("model", "ollama:llama3.1:70b", 10**9, "ollama (pid 777, user nobody)")
    store.flush()
    code, out = plan_text(capsys, "--json", "llama3.1:70b")
    assert json.loads(out)["items"][0]["gb"]["low"] > 40  # the estimate, not 1 GB


def test_a_plausible_stored_peak_is_used_and_named(capsys):
    store = shared_store()
    store.record("model", "ollama:llama3.1:70b", int(46.8 * GB), "ollama (pid 812, user ollama)")
    store.flush()
    code, out = plan_text(capsys, "llama3.1:70b")
    assert code == 0
    assert "measured here: peak 46.8 GB on " in out and "held by ollama (pid 812, user ollama)" in out
    assert "planned with it" in out


def test_a_peak_below_the_estimates_low_side_is_used_only_with_the_weights_resident_and_said(capsys):
    catalog_low = json.loads(plan_text(capsys, "--json", "--estimate", "llama3.1:70b")[1])["items"][0]["gb"]
    store = shared_store()
    below = (catalog_low["low"] - 1.0) * GB  # under the low side, above the weights
    store.record("model", "ollama:llama3.1:70b", int(below), "ollama (pid 812, user ollama)")
    store.flush()
    _, out = plan_text(capsys, "llama3.1:70b")
    assert "below the estimate's low side" in out and "weights resident" in out
    _, out = plan_text(capsys, "--json", "llama3.1:70b")
    assert json.loads(out)["items"][0]["gb"]["mid"] == pytest.approx(below / GB, abs=0.05)


def test_a_model_a_server_only_claims_to_run_is_not_taken_as_already_running():
    """With a live baseline, a running model is counted only for what it may still add: a claim nothing on
    the machine holds must not be subtracted from the plan (it is not in the baseline either)."""
    from sparktop.plan.catalog import load_catalog

    snap = snapshot([])
    snap.services = [
        ServiceReport(collector="servers", endpoint="http://127.0.0.1:11434", server="ollama",
                      models=[ServedModel(name="llama3.1:70b", gpu_bytes=140 * 10**9, cpu_bytes=0)])
    ]  # fmt: skip
    plan = Plan(load_catalog(user_file=False, discover=False))
    plan.add("llama3.1:70b")
    baseline = Baseline.from_snapshot(snap)
    naive = evaluate(plan, baseline)
    aware = evaluate(plan, baseline, facts=LiveFacts(snapshot=snap))
    assert aware.total.mid == pytest.approx(naive.total.mid)
    assert not any("already running" in w for r in aware.items for w in r.warnings)
