"""The planner API the What-if tab builds on: add, remove, edit, editable parameters, evaluate, plan files."""

from __future__ import annotations

import pytest

from sparktop.core.snapshot import Snapshot
from sparktop.plan import Baseline, Plan, PlanError, dumps_plan, evaluate, load_plan, loads_plan, save_plan
from sparktop.plan.catalog import load_catalog
from sparktop.plan.estimate import GB
from sparktop.plan.verdict import FITS, OOM_RISK, TIGHT, WONT_FIT
from tests.fixtures.snapshots import snapshot as shared_snapshot
from tests.fixtures.snapshots import spark_gpu

ISSUE_EXAMPLE = """\
[[workload]]
name = "llama3.1:70b"      # a catalog entry; keys below override its parameters
context = 32768

[[workload]]
kind = "training"
model = "Qwen/Qwen3-0.6B"  # a preset or a local HF snapshot
method = "sft"             # sft | dpo | lora | qlora
batch = 8
seq_len = 1024
precision = "bf16"
optimizer = "adamw"
"""


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(user_file=False, discover=False)


@pytest.fixture
def plan(catalog):
    return Plan(catalog)


def part(result, label):
    return next(p.bytes for p in result.estimate.parts if p.label == label)


# --- editing ------------------------------------------------------------------------------------------------


def test_add_remove_move(plan):
    a = plan.add("faster-whisper-large-v3")
    b = plan.add("LLAMA3.1 8B")
    c = plan.add("f5-tts")
    assert [i.entry for i in plan] == ["faster-whisper-large-v3", "llama3.1:8b", "f5-tts"]
    assert len({a.uid, b.uid, c.uid}) == 3
    plan.move(c.uid, 0)
    assert plan.items[0] is c
    plan.remove(a.uid)
    assert [i.entry for i in plan] == ["f5-tts", "llama3.1:8b"]
    with pytest.raises(KeyError):
        plan.remove(a.uid)


def test_unknown_name_suggests(plan):
    with pytest.raises(PlanError) as err:
        plan.add("lama3.1:70b")
    assert "llama3.1:70b" in err.value.suggestions
    assert "did you mean" in str(err.value)
    assert len(plan) == 0


def test_a_named_workload_of_ones_own(plan):
    item = plan.add("my-asr", memory_gb=2.5, kind="speech")
    w = plan.resolve(item)
    assert w.name == "my-asr" and w.fixed and w.values["memory_gb"] == (2.5, 2.5, 2.5)
    with pytest.raises(PlanError):
        plan.add()  # nothing to go on


def test_set_checks_values_and_none_resets(plan):
    item = plan.add("llama3.1:70b")
    plan.set(item.uid, "context", "32k")
    assert plan.resolve(item).values["context"] == 32768
    plan.set(item.uid, "num_ctx", 8192)  # other spellings of the key
    assert item.overrides == {"context": 8192}
    with pytest.raises(PlanError) as err:
        plan.set(item.uid, "context", "lots")
    assert err.value.field == "context"
    with pytest.raises(PlanError):
        plan.set(item.uid, "quant", "Q9_Z")
    with pytest.raises(PlanError):
        plan.set(item.uid, "colour", "red")
    plan.set(item.uid, "context", None)
    assert plan.resolve(item).values["context"] == 4096
    assert item.overrides == {}


def test_editable_parameters_have_types_and_choices(plan):
    ollama = plan.add("llama3.1:70b")
    params = {p.key: p for p in plan.params(ollama.uid)}
    assert {
        "context",
        "parallel",
        "quant",
        "kv_dtype",
        "engine",
        "flash_attention",
        "gpu_use",
        "duty",
    } <= set(params)
    assert "gpu_memory_utilization" not in params and "batch" not in params
    assert (
        params["context"].type == "int"
        and params["context"].value == 4096
        and params["context"].unit == "tokens"
    )
    assert (
        params["quant"].type == "choice"
        and "Q4_K_M" in params["quant"].choices
        and "BF16" in params["quant"].choices
    )
    assert params["engine"].choices == ("ollama", "llama.cpp", "vllm", "other")
    assert params["flash_attention"].type == "bool"
    plan.set(ollama.uid, "context", 16384)
    edited = {p.key: p for p in plan.params(ollama.uid)}["context"]
    assert edited.overridden and edited.value == 16384 and edited.default == 4096

    plan.set(ollama.uid, "engine", "vllm")
    assert "gpu_memory_utilization" in {p.key for p in plan.params(ollama.uid)}

    train = plan.add(kind="training", model="qwen3-0.6b")
    tparams = {p.key: p for p in plan.params(train.uid)}
    assert tparams["method"].choices == ("sft", "dpo", "lora", "qlora", "dpo-lora", "dpo-qlora")
    assert tparams["optimizer"].choices == ("adamw", "adamw-8bit", "sgd")
    assert tparams["precision"].choices == ("bf16", "fp32", "mixed")
    assert "lora_rank" not in tparams and "context" not in tparams
    plan.set(train.uid, "method", "qlora")
    assert "lora_rank" in {p.key for p in plan.params(train.uid)}

    fixed = plan.add("ssd-tetris")
    fparams = {p.key: p for p in plan.params(fixed.uid)}
    assert fparams["memory_gb"].value == 12 and fparams["memory_gb"].type == "float"
    assert "context" not in fparams and "batch" not in fparams


def test_fixed_entries_become_model_derived_when_given_a_model(plan):
    item = plan.add("ssd-tetris", model="qwen3-0.6b", batch=2, seq_len=512)
    w = plan.resolve(item)
    assert not w.fixed and w.model is not None and w.kind == "training"
    assert evaluate(plan).items[0].estimate.parts[0].label == "weights"
    measured = plan.add("llama3.1:8b", memory_gb=6.2)
    assert plan.resolve(measured).fixed


def test_kind_names_an_engine(plan):
    item = plan.add(kind="vllm", model="qwen3-8b", gpu_memory_utilization=0.3)
    w = plan.resolve(item)
    assert w.kind == "inference" and w.engine == "vllm" and w.values["context"] == 40960
    result = evaluate(plan).items[0]
    assert part(result, "vLLM reservation").mid == pytest.approx(0.3 * 128 * GB)


# --- estimates react to parameters --------------------------------------------------------------------------


def test_context_and_parallel_change_the_kv_cache(plan):
    item = plan.add("llama3.1:70b")
    before = part(evaluate(plan).items[0], "KV cache").mid
    assert before == 327_680 * 4096
    plan.set(item.uid, "context", 32768)
    plan.set(item.uid, "parallel", 2)
    assert part(evaluate(plan).items[0], "KV cache").mid == 327_680 * 32768 * 2
    plan.set(item.uid, "kv_dtype", "q8_0")
    assert part(evaluate(plan).items[0], "KV cache").mid == pytest.approx(327_680 * 32768 * 2 * 1.0625 / 2)


def test_the_known_file_size_counts_only_for_its_format(plan):
    item = plan.add("llama3.1:8b")
    assert part(evaluate(plan).items[0], "weights").mid == pytest.approx(4.92e9)
    plan.set(item.uid, "quant", "Q8_0")
    assert part(evaluate(plan).items[0], "weights").mid == pytest.approx(8.03e9 * 8.5 / 8)


def test_training_item_from_the_issue(catalog):
    plan = loads_plan(ISSUE_EXAMPLE, catalog)
    ev = evaluate(plan)
    llama, sft = ev.items
    assert llama.name == "llama3.1:70b" and llama.workload.values["context"] == 32768
    assert sft.name == "sft qwen3-0.6b" and sft.workload.kind == "training"
    assert {p.label for p in sft.estimate.parts} >= {
        "weights",
        "optimizer states",
        "activations",
        "loss (logits)",
        "allocator slack",
        "process (CPU side)",
    }
    assert ev.compute.verdict == "no"  # the training run starves the 70B's interactive decoding


# --- evaluation ---------------------------------------------------------------------------------------------


def test_evaluation_to_dict_schema(plan):
    plan.add("faster-whisper-large-v3")
    plan.add("llama3.1:8b")
    data = evaluate(plan).to_dict()
    assert {"baseline_gb", "items", "total_gb", "fit", "compute", "reasons"} <= set(data)
    assert data["units"] == "GB (1e9 bytes)" and data["baseline_gb"] == 3.0
    item = data["items"][1]
    assert {"name", "kind", "gb", "breakdown", "decode_tok_s", "slowdown", "params"} <= set(item)
    assert set(item["gb"]) == {"low", "mid", "high"} and item["engine"] == "ollama"
    assert sum(p["gb"]["mid"] for p in item["breakdown"]) == pytest.approx(item["gb"]["mid"], abs=0.02)
    assert data["fit"] == FITS and data["compute"] == "ok"
    assert data["reasons"][0].startswith("memory: ") and data["reasons"][1].startswith("compute: ")


def test_duplicate_workloads_get_distinct_names(plan):
    plan.add("llama3.1:8b")
    plan.add("llama3.1:8b")
    names = [r.name for r in evaluate(plan).items]
    assert names == ["llama3.1:8b", "llama3.1:8b #2"]


@pytest.mark.parametrize(
    ("memory_gb", "verdict"), [(70, FITS), (90, TIGHT), (110, OOM_RISK), (140, WONT_FIT)]
)
def test_fit_verdicts(plan, memory_gb, verdict):
    plan.add("thing", memory_gb=memory_gb, gpu_use="none")
    assert evaluate(plan).fit.verdict == verdict


def snapshot(used_gb: float, total_gb: float = 128.5, sm_count: int | None = 48) -> Snapshot:
    return shared_snapshot(
        total=int(total_gb * GB),
        used=int(used_gb * GB),
        free=0,
        gpus=[spark_gpu(sm_count=sm_count)],
        hostname="spark",
    )


def test_live_baseline_from_a_snapshot(plan):
    baseline = Baseline.from_snapshot(snapshot(used_gb=40, sm_count=48))
    assert baseline.source == "live" and baseline.used.mid == pytest.approx(40 * GB, rel=1e-6)
    assert baseline.pool == pytest.approx(128.5 * GB) and baseline.sm_count == 48
    plan.add("llama3.1:70b")  # 45 GB on top of 40 GB in use: over the safe line
    ev = evaluate(plan, baseline)
    assert ev.fit.verdict == TIGHT and ev.fit.culprit == "llama3.1:70b"
    assert ev.to_dict()["baseline"]["source"] == "live"
    assert evaluate(plan, Baseline.clean()).fit.verdict == FITS


def test_live_baseline_without_an_sm_count_defaults_to_48():
    assert Baseline.from_snapshot(snapshot(used_gb=5, sm_count=None)).sm_count == 48


def test_ollama_default_context_is_flagged(plan):
    plan.add("llama3.1:8b")
    assert any("262144" in r for r in evaluate(plan).reasons)
    plan.clear()
    plan.add("llama3.1:8b", context=8192)
    assert not any("262144" in r for r in evaluate(plan).reasons)


# --- plan files ---------------------------------------------------------------------------------------------


def test_plan_round_trip(plan, tmp_path, catalog):
    plan.add("llama3.1:70b", context=32768, parallel=2)
    plan.add(kind="training", model="Qwen/Qwen3-0.6B", method="lora", batch=8, seq_len=1024, lora_rank=32)
    plan.add("my-asr", memory_gb=[2, 3])
    plan.add("faster-whisper-large-v3", label='whisper "prod"', duty=0.5)
    path = tmp_path / "sub" / "plan.toml"
    save_plan(plan, path)
    loaded = load_plan(path, catalog)
    assert [(i.entry, i.overrides) for i in loaded] == [(i.entry, i.overrides) for i in plan]
    assert dumps_plan(loaded) == path.read_text()
    text = path.read_text()
    assert 'name = "llama3.1:70b"\ncontext = 32768\nparallel = 2\n' in text
    assert "memory_gb = [2.0, 3.0]" in text


def test_plan_file_errors_name_the_line_and_field(catalog):
    bad_value = (
        '[[workload]]\nname = "llama3.1:8b"\n\n[[workload]]\nkind = "training"\nmodel = "qwen3-0.6b"\n'
        'batch = "x"\n'
    )
    with pytest.raises(PlanError) as err:
        loads_plan(bad_value, catalog, "p.toml")
    assert str(err.value) == "p.toml:7: batch: expected an integer"

    with pytest.raises(PlanError) as err:
        loads_plan('[[workload]]\ncontext = 8192\nname = "lama3.1:70b"\n', catalog, "p.toml")
    # Issue 32 item 6: an unknown workload is located at its name, not at its table's first line.
    assert str(err.value).startswith("p.toml:3: unknown workload 'lama3.1:70b'")
    assert "llama3.1:70b" in err.value.suggestions

    with pytest.raises(PlanError) as err:
        loads_plan('[[workload]]\nname = "x"\nmemory_gb = [1,\n', catalog, "p.toml")
    assert str(err.value).startswith("p.toml:3: invalid TOML")

    with pytest.raises(PlanError) as err:
        loads_plan("[plan]\nx = 1\n", catalog, "p.toml")
    assert "unknown table" in str(err.value)

    with pytest.raises(PlanError) as err:
        loads_plan('[[workload]]\nname = "ssd-tetris"\nmodel = "gpt-5"\n', catalog, "p.toml")
    assert str(err.value).startswith("p.toml:3: model: unknown model")


def test_parameters_that_do_not_apply_are_reported_not_fatal(plan):
    plan.add("ssd-tetris", context=8192)
    ev = evaluate(plan)
    assert any("ignored: context" in r for r in ev.reasons)


def test_a_reset_that_would_leave_nothing_to_estimate_is_refused(plan):
    item = plan.add("my-asr", memory_gb=2)
    with pytest.raises(PlanError):
        plan.set(item.uid, "memory_gb", None)
    assert item.overrides["memory_gb"] == (2, 2, 2)


# --- loss kernel and dataloader workers (issue 11) ------------------------------------------------------


def test_loss_and_dataloader_workers_are_training_parameters(plan, catalog):
    item = plan.add(kind="training", model="qwen3-0.6b", batch=8, seq_len=1024)
    params = {p.key: p for p in plan.params(item.uid)}
    assert params["loss"].value == "hf" and params["loss"].choices == ("hf", "no-upcast", "fused")
    assert params["dataloader_workers"].value == 0 and params["dataloader_workers"].minimum == 0
    hf = evaluate(plan).items[0]
    plan.set(item.uid, "loss", "Liger")  # an alias of fused
    plan.set(item.uid, "num_workers", "4")  # transformers' name
    values = plan.resolve(item).values
    assert values["loss"] == "fused" and values["dataloader_workers"] == 4
    fused = evaluate(plan).items[0]
    # the fused loss drops the 12 B x 151,936 vocab per token of the loss path: ~15 GB at 8 x 1024
    assert hf.total.mid - fused.total.mid > 14e9
    host = fused.estimate.side_total("host").mid - hf.estimate.side_total("host").mid
    assert host == pytest.approx(4 * 0.4e9)
    with pytest.raises(PlanError, match="expected one of hf, no-upcast, fused"):
        plan.set(item.uid, "loss", "magic")
    with pytest.raises(PlanError, match="at least 0"):
        plan.set(item.uid, "dataloader_workers", -1)
    # a DPO run defaults to TRL's loss in the activation dtype; an explicit choice wins
    dpo = plan.add(kind="training", model="qwen3-0.6b", method="dpo")
    assert plan.resolve(dpo).values["loss"] == "no-upcast"
    # and both survive a plan file
    again = loads_plan(dumps_plan(plan), catalog)
    assert [w.values["loss"] for w in again.workloads()] == ["fused", "no-upcast"]
    assert again.workloads()[0].values["dataloader_workers"] == 4


def test_loss_and_workers_in_a_plan_file(catalog):
    text = ISSUE_EXAMPLE + 'loss = "no-upcast"\ndataloader_workers = 2\n'
    plan = loads_plan(text, catalog)
    sft = plan.workloads()[1]
    assert sft.values["loss"] == "no-upcast" and sft.values["dataloader_workers"] == 2
    with pytest.raises(PlanError, match=r"<plan>:\d+: loss: "):
        loads_plan(ISSUE_EXAMPLE + 'loss = "cheap"\n', catalog)
