"""The built-in catalog (reference workloads, model presets, quantisation table) and the user catalog."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparktop.plan.catalog import load_catalog, user_catalog_path
from sparktop.plan.catalog.entries import parse_gb_range
from sparktop.plan.catalog.loader import DATA_DIR
from sparktop.settings import files

REFERENCE_ROWS = {
    # reference table row -> catalog name, footprint (GB)
    "Qwen2.5-Omni-3B": ("qwen2.5-omni-3b", (7, 8)),
    "faster-whisper large-v3": ("faster-whisper-large-v3", (3, 3)),
    "F5-TTS": ("f5-tts", (2, 3)),
    "Qwen3-TTS 1.7B": ("qwen3-tts-1.7b", (3, 4)),
    "Chatterbox TTS": ("chatterbox-tts", (4, 4)),
    "XTTS v2": ("xtts-v2", (2, 2)),
    "Ollama llama3.1:8b (Q4)": ("llama3.1:8b", (5, 5)),
    "Ollama llama3.1:70b (Q4)": ("llama3.1:70b", (40, 40)),
    "Ollama Devstral Small 2 (24B BF16)": ("devstral-small-2:24b-instruct-2512-fp16", (48, 48)),
    "Ollama Qwen 2.5 Coder 32B (BF16)": ("qwen2.5-coder:32b-instruct-fp16", (64, 64)),
    "Screen-Self-Driving Tetris (SSD)": ("ssd-tetris", (8, 15)),
}

PRESETS = [
    "llama-3.1-8b",
    "llama-3.1-70b",
    "llama-3.3-70b",
    "qwen2.5-0.5b",
    "qwen2.5-1.5b",
    "qwen2.5-3b",
    "qwen2.5-7b",
    "qwen2.5-14b",
    "qwen2.5-32b",
    "qwen2.5-72b",
    "qwen3-0.6b",
    "qwen3-1.7b",
    "qwen3-4b",
    "qwen3-8b",
    "qwen3-14b",
    "qwen3-32b",
    "qwen3-30b-a3b",
    "devstral-small-24b",
    "devstral-small-2-24b",
    "qwen2.5-coder-7b",
    "qwen2.5-coder-32b",
    "gpt-oss-20b",
    "gpt-oss-120b",
    "mistral-7b",
    "mistral-nemo-12b",
    "mixtral-8x7b",
    "gemma-2-9b",
    "gemma-3-27b",
]


@pytest.fixture(scope="module")
def catalog():
    cat = load_catalog(user_file=False, discover=False)
    assert cat.errors == []
    return cat


def test_every_reference_workload_is_in_the_catalog(catalog):
    for row, (name, (low, high)) in REFERENCE_ROWS.items():
        entry = catalog.find(name)
        assert entry is not None, row
        figure = entry.fields.get("memory_gb") or entry.reference_gb
        assert figure is not None and (figure[0], figure[2]) == (low, high), row
    tetris = catalog.find("ssd-tetris")
    assert tetris.fields["memory_gb"] == (8, 12, 15) and tetris.kind == "training"  # mid batch: 12 GB
    assert catalog.find("ssd-tetris-large-batch").fields["memory_gb"] == (15, 15, 15)


def test_ollama_reference_rows_are_model_based(catalog):
    for name in (
        "llama3.1:8b",
        "llama3.1:70b",
        "devstral-small-2:24b-instruct-2512-fp16",
        "qwen2.5-coder:32b-instruct-fp16",
    ):
        entry = catalog.find(name)
        assert entry.fields["engine"] == "ollama" and "memory_gb" not in entry.fields
        assert catalog.model(entry.fields["model"]) is not None


def test_presets_have_their_public_architecture(catalog):
    for name in PRESETS:
        spec = catalog.model(name)
        assert spec is not None, name
        a = spec.arch
        assert (
            a.layers
            and a.hidden
            and a.heads
            and a.kv_heads
            and a.head_dim
            and a.vocab
            and a.params
            and a.context
        )
        assert catalog.find(name) is not None  # each preset is also a workload
    llama = catalog.model("meta-llama/Llama-3.1-8B-Instruct").arch
    assert (llama.layers, llama.hidden, llama.heads, llama.kv_heads, llama.head_dim, llama.vocab) == (
        32,
        4096,
        32,
        8,
        128,
        128256,
    )
    qwen = catalog.model("Qwen/Qwen3-0.6B").arch
    assert (qwen.layers, qwen.hidden, qwen.heads, qwen.kv_heads, qwen.head_dim, qwen.vocab, qwen.context) == (
        28,
        1024,
        16,
        8,
        128,
        151936,
        40960,
    )
    coder = catalog.model("qwen2.5-coder-32b")
    assert coder.arch == catalog.model("qwen2.5-32b").arch  # `like`: same shapes
    assert coder.hf_id == "Qwen/Qwen2.5-Coder-32B-Instruct"


def test_preset_parameter_counts_agree_with_their_shapes(catalog):
    for spec in catalog.models.values():
        # the model cards count a vision encoder (~0.4B) where there is one
        tolerance = 0.12 if "vision" in spec.description else 0.01
        assert spec.arch.estimated_params() == pytest.approx(spec.arch.params, rel=tolerance), spec.name


def test_presets_are_data_files_not_code():
    assert {p.name for p in DATA_DIR.glob("*.toml")} >= {"models.toml", "reference.toml", "quants.toml"}


def test_quantisation_table(catalog):
    assert catalog.quant("q4_k_m").name == "Q4_K_M" and catalog.quant("fp16").name == "F16"
    assert catalog.quant("Q4_K_M").bits == pytest.approx(4.85)
    assert catalog.quant_by_file_type()[15] == "Q4_K_M"
    assert catalog.kv_dtype("q8_0").bytes == pytest.approx(34 / 32)
    assert catalog.kv_dtype("fp16").name == "f16"


def test_names_are_lowercase_and_hyphenated(catalog):
    for entry in catalog.entries.values():
        assert entry.name == entry.name.lower() and " " not in entry.name, entry.name
        if entry.source != "ollama" and ":" not in entry.name:
            assert "_" not in entry.name, entry.name
    assert catalog.find("llama3.1:70b").name == "llama3.1:70b"  # Ollama tags keep their tags


@pytest.mark.parametrize(
    ("typed", "name"),
    [
        ("llama3.1:70b", "llama3.1:70b"),
        ("LLAMA3.1:70B", "llama3.1:70b"),
        ("llama3.1 70b", "llama3.1:70b"),
        ("llama3.1_70b", "llama3.1:70b"),
        ("Faster Whisper Large V3", "faster-whisper-large-v3"),
        ("faster_whisper_large_v3", "faster-whisper-large-v3"),
        ("Qwen/Qwen3-0.6B", "qwen3-0.6b"),
        ("tetris", "ssd-tetris"),
    ],
)
def test_lookups_forgive_case_spaces_and_underscores(catalog, typed, name):
    assert catalog.find(typed).name == name


def test_did_you_mean(catalog):
    assert "llama3.1:70b" in catalog.suggest("lama3.1:70b")
    assert "faster-whisper-large-v3" in catalog.suggest("faster-wisper")
    assert catalog.find("no-such-thing") is None


def test_listing_with_a_filter(catalog):
    tts = {e.name for e in catalog.list("tts")}
    assert {"f5-tts", "qwen3-tts-1.7b", "chatterbox-tts", "xtts-v2"} <= tts
    assert all(e.kind == "training" for e in catalog.list(kind="training"))
    assert {e.name for e in catalog.list(source="reference")} >= {"faster-whisper-large-v3", "ssd-tetris"}
    coder = {e.name for e in catalog.list("qwen coder 32b")}
    assert "qwen2.5-coder:32b" in coder and "qwen2.5-coder-32b" in coder


def test_parse_gb_range():
    assert parse_gb_range(5) == (5, 5, 5)
    assert parse_gb_range([7, 8]) == (7, 7.5, 8)
    assert parse_gb_range([8, 12, 15]) == (8, 12, 15)
    assert parse_gb_range({"low": 1, "high": 3}) == (1, 2, 3)
    for bad in ([3, 1], "x", [1, 2, 3, 4], -1, True):
        with pytest.raises(ValueError):
            parse_gb_range(bad)


# --- the user catalog ---------------------------------------------------------------------------------------


def write_user(home: Path, text: str) -> Path:
    """The user catalog where the environment (private_home) says it is."""
    path = user_catalog_path()
    assert path == home / ".config" / "sparktop" / "catalog.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("config_home", [None, "/elsewhere/config", "   ", "relative/config"])
def test_the_user_catalog_is_in_sparktops_config_directory(private_home, monkeypatch, config_home):
    # One place for every user file (settings/files.py, platformdirs): config.toml, themes/ and catalog.toml.
    if config_home is None:
        monkeypatch.delenv("XDG_CONFIG_HOME")
    else:
        monkeypatch.setenv("XDG_CONFIG_HOME", config_home)
    path = files.config_dir() / "catalog.toml"
    if config_home is None or not config_home.strip():
        assert path == private_home / ".config" / "sparktop" / "catalog.toml"
    elif config_home.startswith("/"):
        assert path == Path(config_home) / "sparktop" / "catalog.toml"
    assert user_catalog_path() == path
    private_home.joinpath("ok").mkdir()
    monkeypatch.chdir(private_home / "ok")  # a relative directory, if one is used, lands in the test's tmp
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('[[workload]]\nname = "mine"\nmemory_gb = 2\n')
    catalog = load_catalog(discover=False)
    assert catalog.find("mine") is not None and str(path) in catalog.files


def test_user_catalog_adds_and_overrides(private_home):
    write_user(
        private_home,
        """
[[workload]]
name = "my-tts"
kind = "speech"
memory_gb = [3, 4]
gpu_use = "pipeline"
pipeline = "audio"

[[workload]]
name = "llama3.1:70b"
context = 16384
description = "our 70B, at 16k"

[[model]]
name = "my-llama"
like = "llama-3.1-8b"
context = 8192

[[model.ollama]]
tag = "my-llama:q8"
quant = "Q8_0"
""",
    )
    cat = load_catalog(discover=False)
    assert cat.errors == []
    mine = cat.find("my-tts")
    assert mine.source == "user" and mine.fields["memory_gb"] == (3, 3.5, 4)
    llama = cat.find("llama3.1:70b")
    assert llama.fields["context"] == 16384 and llama.fields["engine"] == "ollama"  # field by field
    assert llama.reference_gb == (40, 40, 40) and llama.description == "our 70B, at 16k"
    assert cat.model("my-llama").arch.context == 8192 and cat.model("my-llama").arch.layers == 32
    assert cat.find("my-llama:q8").fields == {
        "kind": "inference",
        "engine": "ollama",
        "model": "my-llama",
        "quant": "Q8_0",
    }


def test_bad_user_entries_are_reported_with_file_line_and_field(private_home):
    path = write_user(
        private_home,
        """[[workload]]
name = "good-one"
memory_gb = 2

[[workload]]
name = "bad-batch"
kind = "training"
model = "qwen3-0.6b"
batch = "lots"

[[workload]]
name = "bad-kind"
kind = "telepathy"
memory_gb = 1

[[workload]]
name = "no-footprint"
kind = "speech"

[[workload]]
name = "typo"
memory_gb = 1
contxt = 4096

[[model]]
name = "half-model"
layers = 4

[[workload]]
name = "also-good"
memory_gb = 3
""",
    )
    cat = load_catalog(discover=False)
    assert f"{path}:9: batch: expected an integer" in cat.errors
    assert any(e.startswith(f"{path}:13: kind: expected one of") for e in cat.errors)
    assert any(e.startswith(f"{path}:17: name:") and "needs memory_gb" in e for e in cat.errors)
    assert f"{path}:23: contxt: unknown field" in cat.errors
    assert any(e.startswith(f"{path}:25: hidden:") for e in cat.errors)
    assert len(cat.errors) == 5
    assert cat.find("good-one") and cat.find("also-good")  # the rest still loads
    assert cat.find("bad-batch") is None and cat.find("typo") is None


def test_invalid_toml_is_reported_with_its_line(private_home):
    path = write_user(private_home, '[[workload]]\nname = "x"\nmemory_gb = [1, \n')
    cat = load_catalog(discover=False)
    assert len(cat.errors) == 1 and re.match(rf"{re.escape(str(path))}:\d+: invalid TOML", cat.errors[0])
    assert cat.find("llama3.1:8b") is not None  # the built-in catalog still loads


def test_unknown_user_table_is_reported(private_home):
    write_user(private_home, '[[workloads]]\nname = "x"\n')
    cat = load_catalog(discover=False)
    assert any("workloads: unknown table" in e for e in cat.errors)


def test_each_load_gets_a_catalog_of_its_own() -> None:
    """The built-in files are parsed once a process: what one load's user (a plan, the What-if tab) does to
    its catalog never reaches the next load."""
    first = load_catalog(False, discover=False)
    names = set(first.entries)
    victim = next(iter(names))
    first.entries.pop(victim)
    first.errors.append("mine")
    first.files.clear()
    second = load_catalog(False, discover=False)
    assert set(second.entries) == names and not second.errors
    assert [Path(f).name for f in second.files] == ["quants.toml", "models.toml", "reference.toml"]
