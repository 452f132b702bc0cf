"""Small but real model files for the discovery tests: GGUF headers, safetensors headers, an Ollama store and
a Hugging Face cache. Tensor data is zeros (or a sparse hole), never real weights."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path
from typing import Any

GGUF_ALIGN = 32


def _gguf_string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def _gguf_value(value: Any) -> tuple[int, bytes]:
    if isinstance(value, bool):
        return 7, struct.pack("<?", value)
    if isinstance(value, int):
        return (4, struct.pack("<I", value)) if 0 <= value < 2**32 else (11, struct.pack("<q", value))
    if isinstance(value, float):
        return 6, struct.pack("<f", value)
    if isinstance(value, str):
        return 8, _gguf_string(value)
    if isinstance(value, list):
        if all(isinstance(v, str) for v in value):
            body = b"".join(_gguf_string(v) for v in value)
            return 9, struct.pack("<IQ", 8, len(value)) + body
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return 9, struct.pack("<IQ", 5, len(value)) + b"".join(struct.pack("<i", v) for v in value)
        return 9, struct.pack("<IQ", 6, len(value)) + b"".join(struct.pack("<f", float(v)) for v in value)
    raise TypeError(type(value))


def write_gguf(
    path: Path,
    metadata: dict[str, Any],
    tensors: list[tuple[str, list[int]]],
    data_bytes: int = 1024,
    version: int = 3,
) -> Path:
    """A GGUF file: header, metadata, tensor infos, padding, then `data_bytes` of zeros."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(metadata)))
    for key, value in metadata.items():
        vtype, payload = _gguf_value(value)
        out += _gguf_string(key) + struct.pack("<I", vtype) + payload
    offset = 0
    for name, dims in tensors:
        out += _gguf_string(name) + struct.pack("<I", len(dims))
        out += b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", 12, offset)  # Q4_K
        offset += 64
    out += b"\0" * (-len(out) % GGUF_ALIGN)
    out += b"\0" * data_bytes
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(out))
    return path


def tiny_llama_metadata(file_type: int = 15, vocab: int = 5000, **extra: Any) -> dict[str, Any]:
    """A 2-layer llama-shaped model: hidden 64, 4 heads (head dim 16), 2 KV heads, FFN 128."""
    meta: dict[str, Any] = {
        "general.architecture": "llama",
        "general.name": "Tiny Llama",
        "general.file_type": file_type,
        "llama.block_count": 2,
        "llama.context_length": 8192,
        "llama.embedding_length": 64,
        "llama.feed_forward_length": 128,
        "llama.attention.head_count": 4,
        "llama.attention.head_count_kv": 2,
        "llama.rope.freq_base": 500000.0,
        "tokenizer.ggml.model": "gpt2",
        # longer than the parser keeps: it must skip it, counting its length
        "tokenizer.ggml.tokens": [f"tok{i}" for i in range(vocab)],
        "tokenizer.ggml.scores": [0.0] * vocab,
    }
    meta.update(extra)
    return meta


def tiny_llama_tensors(vocab: int = 5000, output: bool = True) -> list[tuple[str, list[int]]]:
    tensors = [("token_embd.weight", [64, vocab])]
    for i in range(2):
        tensors += [
            (f"blk.{i}.attn_q.weight", [64, 64]),
            (f"blk.{i}.attn_k.weight", [64, 32]),
            (f"blk.{i}.attn_v.weight", [64, 32]),
            (f"blk.{i}.attn_output.weight", [64, 64]),
            (f"blk.{i}.ffn_gate.weight", [64, 128]),
            (f"blk.{i}.ffn_up.weight", [64, 128]),
            (f"blk.{i}.ffn_down.weight", [128, 64]),
            (f"blk.{i}.attn_norm.weight", [64]),
            (f"blk.{i}.ffn_norm.weight", [64]),
        ]
    tensors.append(("output_norm.weight", [64]))
    if output:
        tensors.append(("output.weight", [64, vocab]))
    return tensors


def tiny_llama_params(vocab: int = 5000, output: bool = True) -> int:
    total = 0
    for _, dims in tiny_llama_tensors(vocab, output):
        n = 1
        for d in dims:
            n *= d
        total += n
    return total


def write_ollama_model(
    root: Path,
    name: str,
    tag: str,
    gguf: Path,
    namespace: str = "library",
    host: str = "registry.ollama.ai",
    params: dict[str, Any] | None = None,
    file_type: str = "Q4_K_M",
) -> Path:
    """An Ollama store entry: the GGUF as a blob, a config blob, an optional params blob, a manifest."""
    blobs = root / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)

    def blob(data: bytes) -> tuple[str, int]:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        (blobs / digest.replace(":", "-")).write_bytes(data)
        return digest, len(data)

    model_digest, model_size = blob(gguf.read_bytes())
    config_digest, config_size = blob(
        json.dumps({"model_format": "gguf", "model_family": "llama", "file_type": file_type}).encode()
    )
    layers = [
        {"mediaType": "application/vnd.ollama.image.model", "digest": model_digest, "size": model_size},
        {"mediaType": "application/vnd.ollama.image.license", "digest": "sha256:" + "0" * 64, "size": 10},
    ]
    if params is not None:
        digest, size = blob(json.dumps(params).encode())
        layers.append({"mediaType": "application/vnd.ollama.image.params", "digest": digest, "size": size})
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {
            "mediaType": "application/vnd.docker.container.image.v1+json",
            "digest": config_digest,
            "size": config_size,
        },
        "layers": layers,
    }
    path = root / "manifests" / host / namespace / name / tag
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest))
    return path


_ST_BYTES = {"BF16": 2, "F16": 2, "F32": 4, "F8_E4M3": 1, "I32": 4, "U8": 1}


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]], sparse: bool = True) -> int:
    """A .safetensors file with these tensors (dtype, shape); data is a sparse hole (or zeros). Returns the
    data size in bytes."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        n = 1
        for d in shape:
            n *= d
        size = n * _ST_BYTES[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(raw)) + raw)
        if sparse:
            fh.truncate(8 + len(raw) + offset)
        else:
            fh.write(b"\0" * offset)
    return offset


def tiny_hf_config(**extra: Any) -> dict[str, Any]:
    config = {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 32,
        "vocab_size": 1000,
        "max_position_embeddings": 40960,
        "tie_word_embeddings": True,
        "torch_dtype": "bfloat16",
    }
    config.update(extra)
    return config


def tiny_hf_tensors(config: dict[str, Any], dtype: str = "BF16") -> list[dict[str, tuple[str, list[int]]]]:
    """Two shards: embeddings + layer 0, then layer 1 + norm (+ lm_head when untied)."""
    h, inter, v = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    q = config["num_attention_heads"] * config["head_dim"]
    kv = config["num_key_value_heads"] * config["head_dim"]

    def layer(i: int) -> dict[str, tuple[str, list[int]]]:
        p = f"model.layers.{i}."
        return {
            p + "self_attn.q_proj.weight": (dtype, [q, h]),
            p + "self_attn.k_proj.weight": (dtype, [kv, h]),
            p + "self_attn.v_proj.weight": (dtype, [kv, h]),
            p + "self_attn.o_proj.weight": (dtype, [h, q]),
            p + "mlp.gate_proj.weight": (dtype, [inter, h]),
            p + "mlp.up_proj.weight": (dtype, [inter, h]),
            p + "mlp.down_proj.weight": (dtype, [h, inter]),
            p + "input_layernorm.weight": (dtype, [h]),
        }

    first = {"model.embed_tokens.weight": (dtype, [v, h]), **layer(0)}
    second = {**layer(1), "model.norm.weight": (dtype, [h])}
    if not config.get("tie_word_embeddings"):
        second["lm_head.weight"] = (dtype, [v, h])
    return [first, second]


def write_hf_snapshot(
    cache: Path,
    repo_id: str,
    config: dict[str, Any],
    shards: list[dict[str, Any]],
    revision: str = "0123456789abcdef0123456789abcdef01234567",
) -> Path:
    """A Hugging Face hub cache entry: blobs, a snapshot of symlinks to them, refs/main."""
    org, name = repo_id.split("/")
    repo = cache / f"models--{org}--{name}"
    snap = repo / "snapshots" / revision
    blobs = repo / "blobs"
    snap.mkdir(parents=True, exist_ok=True)
    blobs.mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(revision)

    def place(fname: str, write: Any) -> None:
        tmp = blobs / f"tmp-{fname}"
        write(tmp)
        digest = hashlib.sha256(fname.encode() + repo_id.encode()).hexdigest()
        target = blobs / digest
        tmp.rename(target)
        (snap / fname).symlink_to(Path("..") / ".." / "blobs" / digest)

    place("config.json", lambda p: p.write_text(json.dumps(config)))
    for i, shard in enumerate(shards, 1):
        fname = f"model-{i:05d}-of-{len(shards):05d}.safetensors" if len(shards) > 1 else "model.safetensors"
        place(fname, lambda p, s=shard: write_safetensors(p, s))
    return snap
