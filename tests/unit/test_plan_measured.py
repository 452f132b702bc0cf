"""The planner learns from this machine: a measured peak replaces the estimate (unless switched off), a
planned workload already running is not counted twice, and vLLM's start-up check is answered before launch."""

from __future__ import annotations

import json
import time

import pytest

from sparktop.analysis.headroom import DROP_CACHES
from sparktop.core.snapshot import GB, HostMemory
from sparktop.footprints.store import Footprint, FootprintStore
from sparktop.plan import Baseline, Plan, evaluate
from sparktop.plan.catalog import load_catalog
from sparktop.plan.evaluate import evaluate_known
from sparktop.plan.measured import ItemFacts, LiveFacts, Peaks, PlanFacts
from sparktop.sources.demo import DemoSource

PEAK_AT = time.mktime((2026, 11, 20, 15, 0, 0, 0, 0, -1))


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(user_file=False, discover=False)


@pytest.fixture
def store(tmp_path):
    s = FootprintStore(tmp_path / "footprints.sqlite3", clock=lambda: PEAK_AT)
    s.record("model", "ollama:llama3.1:70b", int(46.8 * GB))
    s.flush()
    yield s
    s.close()


def item(ev, name):
    return next(r for r in ev.items if r.name == name)


def test_measured_peak_replaces_the_estimate_and_can_be_switched_off(catalog, store):
    plan = Plan(catalog)
    plan.add("llama3.1:70b")
    measured = evaluate(plan, facts=LiveFacts(footprints=store.all))
    result = item(measured, "llama3.1:70b")
    assert result.total.mid == pytest.approx(46.8 * GB)
    assert any("measured here: peak 46.8 GB on 2026-11-20" in w for w in result.warnings)

    estimated = evaluate(plan, facts=LiveFacts(footprints=store.all, use_measured=False))
    plain = evaluate(plan)
    assert item(estimated, "llama3.1:70b").total.mid == item(plain, "llama3.1:70b").total.mid
    assert any("estimate used" in w for w in item(estimated, "llama3.1:70b").warnings)


def test_a_planned_model_that_already_runs_is_not_counted_twice(catalog):
    source = DemoSource("servers")
    for _ in range(5):
        snap = source.sample()
    plan = Plan(catalog)
    plan.add("qwen3:32b")
    baseline = Baseline.from_snapshot(snap)
    naive = evaluate(plan, baseline)
    aware = evaluate(plan, baseline, facts=LiveFacts(snapshot=snap))
    running = next(m for r in snap.services for m in r.models if m.name == "qwen3:32b")
    result = item(aware, "qwen3:32b")
    assert result.total.mid == pytest.approx(
        max(0.0, item(naive, "qwen3:32b").total.mid - running.total_bytes)
    )
    assert any("already running" in w for w in result.warnings)
    assert aware.total.mid < naive.total.mid


def test_vllm_startup_check_said_before_launch(catalog):
    snap = DemoSource("default").sample()
    # 17 GiB of page cache on an otherwise idle box: CUDA free is MemFree, far below MemAvailable.
    snap.memory = HostMemory(total=int(121.7 * 2**30), available=119 * 2**30, free=100 * 2**30,
                             cached=17 * 2**30, buffers=2**30, sreclaimable=2**30)  # fmt: skip
    snap.services, snap.containers = [], []
    plan = Plan(catalog)
    plan.add(None, model="Qwen/Qwen3-8B", engine="vllm", gpu_memory_utilization=0.9)
    ev = evaluate(plan, Baseline.from_snapshot(snap), facts=LiveFacts(snapshot=snap))
    text = " ".join(ev.notes)
    assert "vLLM will refuse to start" in text and DROP_CACHES in text


def test_plan_cli_lists_and_plans_with_the_measured_peak(capsys):
    from sparktop.commands.plan import main
    from sparktop.footprints.store import shared_store

    store = shared_store()  # in this test's own XDG_STATE_HOME (tests/conftest.py)
    store.record("model", "ollama:llama3.1:70b", int(46.8 * GB))
    store.flush()

    assert main(["--no-discover", "--list", "llama3.1:70b"]) == 0
    listed = capsys.readouterr().out
    assert "measured here: peak 46.8 GB on " in listed

    main(["--machine=spark", "--no-discover", "--json", "llama3.1:70b"])
    planned = json.loads(capsys.readouterr().out)
    assert planned["items"][0]["gb"]["mid"] == pytest.approx(46.8, abs=0.05)
    main(["--machine=spark", "--no-discover", "--json", "--estimate", "llama3.1:70b"])
    estimated = json.loads(capsys.readouterr().out)
    assert estimated["items"][0]["gb"]["mid"] != pytest.approx(46.8, abs=0.05)


def test_plan_cli_uses_a_measured_slowdown_once_one_is_stored(capsys):
    from sparktop.commands.plan import main
    from sparktop.footprints.store import MeasuredSlowdown, shared_store

    argv = ["--machine=spark", "--no-discover", "--json", "qwen3-8b,engine=vllm", "ssd-tetris"]
    main(argv)
    before = json.loads(capsys.readouterr().out)
    assert not any("measured here" in r for r in before["compute_detail"]["reasons"])
    assert before["items"][0]["slowdown"] >= 2.0  # the H100 reference's decoder beside training

    store = shared_store()  # in this test's own XDG_STATE_HOME (tests/conftest.py)
    for since, ratio in ((1000.0, 1.5), (5000.0, 1.7)):  # two stretches of contention measured here
        store.record_slowdown(
            MeasuredSlowdown(
                "vllm:Qwen/Qwen3-8B", "training", since, ratio, "ssd-tetris-train-1", 9.0, 5.6, PEAK_AT
            )
        )
    store.flush()
    main(argv)
    after = json.loads(capsys.readouterr().out)
    assert (
        "qwen3-8b: measured here 1.6x slower beside training (ssd-tetris-train-1; 2 times, 1.5–1.7x, last on "
        "2026-11-20): planned with it, not the H100 reference's 2.0–2.35x"
    ) in after["compute_detail"]["reasons"]
    assert after["items"][0]["slowdown"] == pytest.approx(1.6)
    assert "about 1.6x slower" in after["compute_detail"]["reason"]

    main([*argv, "--estimate"])  # the reference's figures, as asked, and the figure still said
    estimated = json.loads(capsys.readouterr().out)
    assert estimated["items"][0]["slowdown"] == before["items"][0]["slowdown"]
    assert any("measured here 1.6x slower" in r and "as asked" in r for r in estimated["reasons"])


# --- the seam: the evaluation takes what this machine knows as an input, looked up once (issue 24 item 5) ---


def fp(gb: float, owner: str | None = None) -> Footprint:
    return Footprint("model", "ollama:llama3.1:70b", int(gb * GB), PEAK_AT, PEAK_AT, owner, PEAK_AT)


def known_70b(catalog, facts: ItemFacts, use_measured: bool = True):
    plan = Plan(catalog)
    uid = plan.add("llama3.1:70b").uid
    workloads = plan.workloads()
    alone = evaluate_known(workloads, catalog).items[0]
    ev = evaluate_known(workloads, catalog, known=PlanFacts({uid: facts}, use_measured))
    return alone, ev.items[0]


def test_an_injected_plausible_peak_is_the_items_range(catalog):
    alone, result = known_70b(catalog, ItemFacts(peak=fp(46.8, "ollama (pid 812)")))
    assert alone.total.low < 46.8 * GB  # above the estimate's low side: used as it is
    assert (result.total.low, result.total.mid, result.total.high) == (46.8 * GB,) * 3
    assert [p.label for p in result.estimate.parts] == ["measured peak"]
    assert any("planned with it, not the estimate" in w for w in result.warnings)


def test_an_injected_implausible_peak_leaves_the_estimate_and_says_why(catalog):
    alone, result = known_70b(catalog, ItemFacts(peak=fp(1.0)))
    assert result.total == alone.total
    assert any("less than the model's weights" in w and "estimate is used" in w for w in result.warnings)
    _, as_asked = known_70b(catalog, ItemFacts(peak=fp(46.8, "ollama")), use_measured=False)
    assert as_asked.total == alone.total
    assert any("(estimate used, as asked)" in w for w in as_asked.warnings)


def test_a_measured_peak_of_a_running_workload_counts_only_what_it_may_still_add(catalog):
    running = ("llama3.1:70b on ollama", int(40 * GB))
    _, result = known_70b(catalog, ItemFacts(peak=fp(46.8, "ollama"), running=running))
    assert result.total.mid == pytest.approx(6.8 * GB)
    assert [p.label for p in result.estimate.parts] == ["growth beyond what it holds now"]
    measured, running = result.warnings
    assert measured.startswith("measured here: peak 46.8 GB on 2026-11-20, held by ollama: planned with it")
    assert running.startswith("already running (llama3.1:70b on ollama, 40.0 GB now)")
    assert "only the 6.80 GB it may still grow is added" in running


def test_a_plans_facts_are_looked_up_once_for_all_its_workloads(catalog, store):
    reads = {"footprints": 0, "slowdowns": 0}

    def footprints():
        reads["footprints"] += 1
        return store.all()

    def slowdowns():
        reads["slowdowns"] += 1
        return store.slowdowns()

    plan = Plan(catalog)
    for name in ("llama3.1:70b", "qwen3:32b", "faster-whisper-large-v3", "llama3.1:70b"):
        plan.add(name)
    ev = evaluate(plan, facts=LiveFacts(footprints=footprints, slowdowns=slowdowns))
    assert reads == {"footprints": 1, "slowdowns": 1}
    assert [r.total.mid for r in ev.items if r.workload.name == "llama3.1:70b"] == [46.8 * GB] * 2


def test_the_catalog_list_reads_the_store_once(catalog, store):
    from sparktop.commands.plan import render_list

    reads = []

    def footprints():
        reads.append(1)
        return store.all()

    listed = render_list(catalog, "llama3", LiveFacts(footprints=footprints)).splitlines()
    assert len(listed) > 3 and len(reads) == 1
    (row,) = [line for line in listed if line.startswith("llama3.1:70b ")]
    assert "measured here: peak 46.8 GB on 2026-11-20" in row


def test_a_peak_is_the_highest_under_any_name_and_the_first_of_equal_ones():
    def peak(kind, name, nbytes, owner):
        return Footprint(kind, name, nbytes, PEAK_AT, PEAK_AT, owner)

    served = peak("model", "ollama:qwen3:8b", 9, "ollama")
    container = peak("container", "qwen3:8b", 9, "container")
    image = peak("image", "Qwen/Qwen3-8B", 12, "image")
    assert Peaks([served, container]).best({"qwen3:8b"}) is served
    assert Peaks([container, served]).best({"qwen3:8b"}) is container
    assert Peaks([served, image, container]).best({"qwen3:8b", "Qwen/Qwen3-8B"}) is image
    assert Peaks([container, served]).best({"qwen3:8b", "Qwen/Qwen3-8B"}) is container
    assert Peaks([served]).best({"qwen3:8b-q8"}) is None
