"""Local model discovery on small generated Ollama, Hugging Face cache and GGUF fixtures."""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest

from sparktop.plan import Plan, evaluate
from sparktop.plan.catalog.loader import load_catalog
from sparktop.plan.catalog.local_models import (
    GGUFError,
    default_gguf_dirs,
    default_hf_cache,
    default_ollama_dir,
    discover,
    discover_gguf,
    discover_hf,
    discover_ollama,
    gguf_architecture,
    hf_architecture,
    read_gguf_header,
    read_safetensors_header,
)
from tests.unit.model_files import (
    tiny_hf_config,
    tiny_hf_tensors,
    tiny_llama_metadata,
    tiny_llama_params,
    tiny_llama_tensors,
    write_gguf,
    write_hf_snapshot,
    write_ollama_model,
    write_safetensors,
)

FTYPES = {15: "Q4_K_M", 7: "Q8_0", 1: "F16", 32: "BF16"}


# --- GGUF ---------------------------------------------------------------------------------------------------


def test_gguf_header_metadata_and_parameter_count(tmp_path):
    path = write_gguf(tmp_path / "tiny.gguf", tiny_llama_metadata(), tiny_llama_tensors())
    header = read_gguf_header(path)
    assert header.version == 3 and header.tensor_count == len(tiny_llama_tensors())
    meta = header.metadata
    assert meta["general.architecture"] == "llama" and meta["llama.block_count"] == 2
    assert meta["general.file_type"] == 15 and meta["llama.rope.freq_base"] == pytest.approx(500000.0)
    assert "tokenizer.ggml.tokens" not in meta  # long arrays are skipped, only counted
    assert header.array_lengths["tokenizer.ggml.tokens"] == 5000
    assert header.params == tiny_llama_params()
    assert header.has_output_tensor


def test_gguf_architecture(tmp_path):
    path = write_gguf(tmp_path / "tiny.gguf", tiny_llama_metadata(), tiny_llama_tensors(output=False))
    arch = gguf_architecture(read_gguf_header(path))
    assert arch is not None
    assert (arch.layers, arch.hidden, arch.heads, arch.kv_heads, arch.head_dim) == (2, 64, 4, 2, 16)
    assert (arch.vocab, arch.intermediate, arch.context) == (5000, 128, 8192)  # vocab from the token list
    assert arch.tied_embeddings  # no output.weight: the embedding is reused
    assert arch.params == tiny_llama_params(output=False)


def test_gguf_per_layer_kv_heads_key_length_and_sliding_window(tmp_path):
    meta = tiny_llama_metadata(**{"general.architecture": "gemma3"})
    meta = {k.replace("llama.", "gemma3."): v for k, v in meta.items()}
    meta.update(
        {
            "gemma3.attention.head_count_kv": [2, 2],
            "gemma3.attention.key_length": 32,
            "gemma3.attention.sliding_window": 512,
            "gemma3.vocab_size": 4096,
            "gemma3.block_count": 12,
        }
    )
    arch = gguf_architecture(read_gguf_header(write_gguf(tmp_path / "g.gguf", meta, tiny_llama_tensors())))
    assert arch is not None
    assert (arch.kv_heads, arch.head_dim, arch.vocab) == (2, 32, 4096)
    assert (arch.sliding_window, arch.sliding_layers) == (512, 10)  # 5 local layers per global one


def test_gguf_moe_active_parameters(tmp_path):
    meta = tiny_llama_metadata(
        **{"llama.expert_count": 8, "llama.expert_used_count": 2, "llama.expert_feed_forward_length": 32}
    )
    arch = gguf_architecture(read_gguf_header(write_gguf(tmp_path / "moe.gguf", meta, tiny_llama_tensors())))
    assert arch is not None and arch.is_moe
    assert arch.active_params == pytest.approx(arch.params - 6 * 3 * 64 * 32 * 2)


@pytest.mark.parametrize("content", [b"NOPE" + b"\0" * 64, b"GGUF\x09\0\0\0" + b"\0" * 32, b"GGUF\x03\0"])
def test_gguf_bad_files_raise_a_readable_error(tmp_path, content):
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)
    with pytest.raises(GGUFError):
        read_gguf_header(path)


def test_gguf_directory_scan_groups_split_files_and_skips_projectors(tmp_path):
    models = tmp_path / "models"
    write_gguf(models / "Qwen_Tiny-Q4_K_M.gguf", tiny_llama_metadata(), tiny_llama_tensors(), data_bytes=4096)
    part1 = write_gguf(
        models / "big" / "Big-Model-Q8_0-00001-of-00002.gguf",
        tiny_llama_metadata(file_type=7),
        tiny_llama_tensors(),
        data_bytes=1000,
    )
    part2 = models / "big" / "Big-Model-Q8_0-00002-of-00002.gguf"
    part2.write_bytes(b"\0" * 5000)
    write_gguf(models / "mmproj-Qwen_Tiny-f16.gguf", tiny_llama_metadata(), tiny_llama_tensors())
    (models / "broken.gguf").write_bytes(b"GGUF")
    result = discover_gguf([models, tmp_path / "missing"], FTYPES)
    found = {m.name: m for m in result.models}
    assert set(found) == {"qwen-tiny-q4-k-m", "big-model-q8-0"}
    tiny = found["qwen-tiny-q4-k-m"]
    assert tiny.quant == "Q4_K_M" and tiny.source == "gguf"
    assert tiny.weights_bytes == (models / "Qwen_Tiny-Q4_K_M.gguf").stat().st_size
    big = found["big-model-q8-0"]
    assert big.weights_bytes == part1.stat().st_size + part2.stat().st_size and big.quant == "Q8_0"
    assert len(result.errors) == 1 and "broken.gguf" in result.errors[0]


# --- Ollama -------------------------------------------------------------------------------------------------


def test_ollama_manifests_and_blobs(tmp_path):
    store = tmp_path / "ollama"
    gguf = write_gguf(tmp_path / "src.gguf", tiny_llama_metadata(), tiny_llama_tensors(), data_bytes=10_000)
    write_ollama_model(store, "tiny", "1b", gguf, params={"num_ctx": 8192, "stop": ["<|eot|>"]})
    write_ollama_model(store, "custom", "latest", gguf, namespace="me")
    write_ollama_model(
        store, "mirror", "q8", gguf, namespace="team", host="registry.example.com", file_type="Q8_0"
    )
    result = discover_ollama(store, FTYPES)
    assert not result.errors
    found = {m.name: m for m in result.models}
    assert set(found) == {"tiny:1b", "me/custom:latest", "registry.example.com/team/mirror:q8"}
    tiny = found["tiny:1b"]
    assert tiny.source == "ollama" and tiny.weights_bytes == gguf.stat().st_size
    assert tiny.context == 8192 and tiny.quant == "Q4_K_M"  # quant from the GGUF's file type
    assert tiny.arch is not None and tiny.arch.layers == 2
    assert found["me/custom:latest"].context is None


def test_ollama_missing_blob_and_bad_manifest_are_reported(tmp_path):
    store = tmp_path / "ollama"
    gguf = write_gguf(tmp_path / "src.gguf", tiny_llama_metadata(), tiny_llama_tensors())
    manifest = write_ollama_model(store, "gone", "1b", gguf)
    for blob in (store / "blobs").iterdir():
        if blob.stat().st_size == gguf.stat().st_size:
            blob.unlink()
    bad = store / "manifests" / "registry.ollama.ai" / "library" / "bad" / "latest"
    bad.parent.mkdir(parents=True)
    bad.write_text("{not json")
    result = discover_ollama(store, FTYPES)
    assert any("missing" in e for e in result.errors) and any("bad/latest" in e for e in result.errors)
    gone = next(m for m in result.models if m.name == "gone:1b")
    assert gone.arch is None and gone.quant == "Q4_K_M"  # from the config blob
    assert manifest.exists()


# --- Hugging Face cache -------------------------------------------------------------------------------------


def bytes_read() -> int:
    """What this process has read through read() and its kin so far (/proc/self/io's rchar)."""
    with open("/proc/self/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("rchar:"))


def test_safetensors_header_is_read_without_the_weights(tmp_path):
    path = tmp_path / "model.safetensors"
    size = write_safetensors(path, {"w": ("BF16", [50_000, 50_000])})  # a 5 GB sparse hole
    read_before = bytes_read()
    header = read_safetensors_header(path)
    assert bytes_read() - read_before < 1_000_000  # the header, not the 5 GB (counted, not timed)
    assert header["w"]["shape"] == [50_000, 50_000] and size == 5_000_000_000


def test_hf_cache_snapshot(tmp_path):
    cache = tmp_path / "hub"
    config = tiny_hf_config()
    shards = tiny_hf_tensors(config)
    write_hf_snapshot(cache, "Org/Tiny-LM", config, shards)
    result = discover_hf(cache, FTYPES)
    assert not result.errors
    (model,) = result.models
    assert model.name == "Org/Tiny-LM" and model.hf_id == "Org/Tiny-LM" and model.source == "hf"
    elements = sum(_count(shape) for shard in shards for _, shape in shard.values())
    assert model.weights_bytes == 2 * elements  # BF16
    assert model.quant == "BF16"
    arch = model.arch
    assert arch is not None
    assert (arch.layers, arch.hidden, arch.heads, arch.kv_heads, arch.head_dim) == (2, 64, 4, 2, 32)
    assert (arch.vocab, arch.context, arch.intermediate, arch.tied_embeddings) == (1000, 40960, 128, True)
    assert arch.params == elements


def test_hf_cache_quantised_multimodal_and_untied(tmp_path):
    cache = tmp_path / "hub"
    text = tiny_hf_config(tie_word_embeddings=False)
    config = {
        "architectures": ["Mistral3ForConditionalGeneration"],
        "model_type": "mistral3",
        "text_config": text,
        "vision_config": {"hidden_size": 32},
        "quantization_config": {"quant_method": "fp8"},
    }
    write_hf_snapshot(cache, "Org/Vision-FP8", config, tiny_hf_tensors(text, dtype="F8_E4M3"))
    (model,) = discover_hf(cache, FTYPES).models
    assert model.quant == "FP8"
    assert model.arch is not None and model.arch.layers == 2 and not model.arch.tied_embeddings
    assert model.arch.params == model.arch.estimated_params()  # packed tensors: counted from the shapes


def test_hf_cache_ignores_repos_without_a_snapshot(tmp_path):
    cache = tmp_path / "hub"
    (cache / "models--Org--Empty" / "blobs").mkdir(parents=True)
    (cache / "datasets--Org--Data").mkdir(parents=True)
    assert discover_hf(cache, FTYPES).models == []


def test_hf_architecture_from_config_variants():
    arch = hf_architecture(
        {"n_layer": 12, "n_embd": 768, "n_head": 12, "vocab_size": 50257, "n_positions": 1024}
    )
    assert arch is not None and (arch.layers, arch.head_dim, arch.kv_heads, arch.context) == (
        12,
        64,
        12,
        1024,
    )
    assert hf_architecture({"model_type": "bert-ish"}) is None
    swa = hf_architecture(
        {**tiny_hf_config(), "sliding_window": 128, "layer_types": ["sliding_attention", "full_attention"]}
    )
    assert swa is not None and (swa.sliding_window, swa.sliding_layers) == (128, 1)
    off = hf_architecture({**tiny_hf_config(), "sliding_window": 4096, "use_sliding_window": False})
    assert off is not None and off.sliding_window == 0


def _count(shape):
    n = 1
    for d in shape:
        n *= d
    return n


# --- defaults and the catalog -------------------------------------------------------------------------------


def test_default_locations_follow_the_environment(private_home, monkeypatch):
    assert default_ollama_dir() == private_home / ".ollama" / "models"
    assert default_hf_cache() == private_home / ".cache" / "huggingface" / "hub"
    assert default_gguf_dirs()[:3] == [
        private_home / ".cache" / "llama.cpp",
        private_home / "models",
        private_home / ".lmstudio" / "models",
    ]
    monkeypatch.setenv("OLLAMA_MODELS", "/srv/o")
    assert default_ollama_dir() == Path("/srv/o")
    monkeypatch.setenv("HF_HOME", "/hf")
    assert default_hf_cache() == Path("/hf/hub")
    monkeypatch.setenv("HF_HUB_CACHE", "/hub")
    assert default_hf_cache() == Path("/hub")
    monkeypatch.setenv("SPARKTOP_GGUF_PATH", "/a:/b")
    monkeypatch.setenv("LLAMA_CACHE", "/llama")
    dirs = default_gguf_dirs()
    assert dirs[0] == Path("/llama") and Path("/a") in dirs and Path("/b") in dirs


@pytest.mark.parametrize("cache_home", [None, "/elsewhere/cache", "   ", "relative/cache"])
def test_cache_directories_follow_platformdirs(private_home, monkeypatch, cache_home):
    # $XDG_CACHE_HOME read as every sparktop directory is (settings/files.py): a blank value is unset (by
    # hand, "   " was a relative directory named by three spaces); a relative one, as platformdirs decides.
    if cache_home is None:
        monkeypatch.delenv("XDG_CACHE_HOME")
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", cache_home)
    cache = platformdirs.user_cache_path()
    if cache_home is None or not cache_home.strip():
        assert cache == private_home / ".cache"
    elif cache_home.startswith("/"):
        assert cache == Path(cache_home)
    assert default_hf_cache() == cache / "huggingface" / "hub"
    assert default_gguf_dirs()[0] == cache / "llama.cpp"


@pytest.fixture
def machine(private_home):
    """A home directory with one model of each kind."""
    home = private_home
    gguf = write_gguf(
        home.parent / "src.gguf", tiny_llama_metadata(), tiny_llama_tensors(), data_bytes=20_000
    )
    write_ollama_model(home / ".ollama" / "models", "tiny", "1b", gguf, params={"num_ctx": 2048})
    write_ollama_model(home / ".ollama" / "models", "llama3.1", "8b", gguf)  # shadows the built-in tag
    config = tiny_hf_config()
    write_hf_snapshot(home / ".cache" / "huggingface" / "hub", "Org/Tiny-LM", config, tiny_hf_tensors(config))
    write_gguf(
        home / "models" / "Local-7B-Q4_K_M.gguf",
        tiny_llama_metadata(),
        tiny_llama_tensors(),
        data_bytes=50_000,
    )
    return home


def test_discover_finds_every_kind(machine):
    result = discover(quant_by_file_type=FTYPES)
    names = {m.name for m in result.models}
    assert {"tiny:1b", "llama3.1:8b", "Org/Tiny-LM", "local-7b-q4-k-m"} <= names
    assert not result.errors


def test_local_models_join_the_catalog_with_their_real_sizes(machine):
    catalog = load_catalog()
    assert not catalog.errors
    tiny = catalog.find("tiny:1b")
    assert tiny is not None and tiny.source == "local:ollama" and tiny.fields["context"] == 2048
    hf = catalog.find("Org/Tiny-LM")
    assert hf is not None and hf.name == "org/tiny-lm" and hf.source == "local:hf"
    gguf = catalog.find("local-7b-q4_k_m")
    assert gguf is not None and gguf.fields["engine"] == "llama.cpp"
    # a local copy of a built-in tag keeps the reference figure but uses the real file and architecture
    llama = catalog.find("llama3.1:8b")
    assert llama is not None and llama.source == "local:ollama" and llama.reference_gb == (5.0, 5.0, 5.0)
    assert catalog.list(source="local") and all(e.local for e in catalog.list(source="local"))

    plan = Plan(catalog)
    plan.add("tiny:1b")
    plan.add("llama3.1:8b")
    ev = evaluate(plan)
    weights = {r.name: next(p.bytes for p in r.estimate.parts if p.label == "weights") for r in ev.items}
    size = (machine / "models" / "Local-7B-Q4_K_M.gguf").stat().st_size
    assert weights["tiny:1b"].mid == weights["llama3.1:8b"].mid < size  # the blob, not an estimate
    assert ev.items[0].workload.values["context"] == 2048


def test_training_on_a_local_snapshot(machine):
    catalog = load_catalog()
    plan = Plan(catalog)
    item = plan.add(kind="training", model="Org/Tiny-LM", method="sft", batch=2, seq_len=128)
    w = plan.resolve(item)
    assert w.model is not None and w.model.source == "local:hf"
    assert evaluate(plan).items[0].estimate.total.mid > 0


def test_discovery_can_be_turned_off(machine):
    cfg = machine / ".config" / "sparktop" / "catalog.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("[discovery]\nenabled = false\n")
    catalog = load_catalog()
    assert catalog.find("tiny:1b") is None
    assert load_catalog(discover=False, user_file=False).find("tiny:1b") is None


def test_user_catalog_adds_gguf_directories(private_home):
    extra = private_home.parent / "elsewhere"
    write_gguf(extra / "Far-Model.gguf", tiny_llama_metadata(), tiny_llama_tensors())
    cfg = private_home / ".config" / "sparktop" / "catalog.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(f'[discovery]\ngguf_dirs = ["{extra}"]\n')
    catalog = load_catalog()
    assert catalog.find("far-model") is not None
