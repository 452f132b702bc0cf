"""Models on this machine, with their real sizes, read without loading any weights.

- Ollama: manifests under ~/.ollama/models (or $OLLAMA_MODELS); the model layer is a GGUF blob.
- Hugging Face cache: `models--org--name/snapshots/<rev>/config.json` plus the JSON headers of its
  `*.safetensors` files (8-byte little-endian length, then the header: dtypes, shapes, offsets).
- GGUF files (llama.cpp's cache, ~/models, LM Studio, any directory the user lists): header metadata only.

Everything here reads a few kilobytes to a few megabytes per model; a file that cannot be read becomes one
line in `errors`, never an exception.
"""

from __future__ import annotations

import json
import os
import re
import struct
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import platformdirs

from sparktop.plan.estimate import Architecture

# --- what discovery finds -----------------------------------------------------------------------------------


@dataclass
class LocalModel:
    name: str  # catalog name: the Ollama tag, the HF repo id, the GGUF file's stem
    source: str  # "ollama" | "hf" | "gguf"
    path: str
    weights_bytes: int  # on disk: the model's weights (and projector) files
    arch: Architecture | None = None
    quant: str | None = None  # catalog quant name (Q4_K_M, BF16 ...) when known
    context: int | None = None  # a context length the model's files ask for (Ollama's num_ctx parameter)
    hf_id: str | None = None
    description: str = ""


@dataclass
class DiscoveryResult:
    models: list[LocalModel] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def default_ollama_dir() -> Path:
    if os.environ.get("OLLAMA_MODELS"):
        return Path(os.environ["OLLAMA_MODELS"])
    return Path.home() / ".ollama" / "models"


def default_hf_cache() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    if os.environ.get("HUGGINGFACE_HUB_CACHE"):
        return Path(os.environ["HUGGINGFACE_HUB_CACHE"])
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]) / "hub"
    # $XDG_CACHE_HOME or ~/.cache, read by platformdirs as every other sparktop directory (settings/files.py)
    return platformdirs.user_cache_path() / "huggingface" / "hub"


def default_gguf_dirs() -> list[Path]:
    home = Path.home()
    llama_cache = os.environ.get("LLAMA_CACHE")
    dirs = [Path(llama_cache) if llama_cache else platformdirs.user_cache_path() / "llama.cpp"]
    dirs += [home / "models", home / ".lmstudio" / "models"]
    dirs += [Path(p) for p in os.environ.get("SPARKTOP_GGUF_PATH", "").split(os.pathsep) if p]
    return dirs


def discover(
    *,
    ollama_dir: Path | None = None,
    hf_cache: Path | None = None,
    gguf_dirs: Iterable[Path] | None = None,
    quant_by_file_type: Mapping[int, str] | None = None,
    skip: Collection[str] = (),
) -> DiscoveryResult:
    """Every model found in the default places (or the ones given); `skip` leaves sources out ("ollama",
    "hf", "gguf": the user's setting for it was bad)."""
    result = DiscoveryResult()
    ftypes = dict(quant_by_file_type or {})
    sources = {
        "ollama": lambda: discover_ollama(ollama_dir or default_ollama_dir(), ftypes),
        "hf": lambda: discover_hf(hf_cache or default_hf_cache(), ftypes),
        "gguf": lambda: discover_gguf(
            list(gguf_dirs) if gguf_dirs is not None else default_gguf_dirs(), ftypes
        ),
    }
    for name, find in sources.items():
        if name in skip:
            continue
        part = find()
        result.models += part.models
        result.errors += part.errors
    return result


# --- GGUF ---------------------------------------------------------------------------------------------------

GGUF_MAGIC = b"GGUF"
_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9
_U64 = struct.Struct("<Q")
_MAX_COUNT = 10_000_000
_MAX_STRING = 64 * 1024 * 1024
_SMALL_ARRAY = 4096  # arrays up to this length are kept (per-layer head counts); longer ones only counted


class GGUFError(ValueError):
    pass


class _Reader:
    """Sequential reads from the start of a file, buffered in growing chunks (the header of a large model is a
    few MB: the tokenizer's vocabulary)."""

    def __init__(self, fh: Any, chunk: int = 1 << 20) -> None:
        self.fh = fh
        self.buf = bytearray()
        self.pos = 0
        self.chunk = chunk
        self.eof = False

    def _need(self, n: int) -> None:
        while len(self.buf) - self.pos < n:
            if self.eof:
                raise GGUFError("file ends inside the header")
            data = self.fh.read(max(self.chunk, n))
            if not data:
                self.eof = True
                continue
            if self.pos > (1 << 22):  # drop what has been parsed
                del self.buf[: self.pos]
                self.pos = 0
            self.buf += data
            self.chunk = min(self.chunk * 2, 1 << 24)

    def unpack(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        self._need(size)
        value = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return value[0] if len(value) == 1 else value

    def skip(self, n: int) -> None:
        self._need(n)
        self.pos += n

    def string(self) -> str:
        n = self.unpack("<Q")
        if n > _MAX_STRING:
            raise GGUFError(f"string of {n} bytes in the header")
        self._need(n)
        raw = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return raw.decode("utf-8", errors="replace")

    def skip_strings(self, count: int) -> None:
        """Skip `count` strings (a tokenizer's vocabulary: the hot loop of a header)."""
        u64 = _U64.unpack_from
        for _ in range(count):
            if len(self.buf) - self.pos < 8:
                self._need(8)
            (n,) = u64(self.buf, self.pos)
            if n > _MAX_STRING:
                raise GGUFError(f"string of {n} bytes in the header")
            self.pos += 8
            if len(self.buf) - self.pos < n:
                self._need(n)
            self.pos += n


@dataclass
class GGUFHeader:
    version: int
    tensor_count: int
    metadata: dict[str, Any]  # scalars, strings, and arrays up to _SMALL_ARRAY items
    array_lengths: dict[str, int]  # every array's length (the long ones are not kept)
    params: int | None = None  # sum of the tensors' element counts
    has_output_tensor: bool = False  # False: the output layer reuses the token embedding (tied)


def _read_value(r: _Reader, vtype: int) -> Any:
    if vtype in _SCALARS:
        return r.unpack(_SCALARS[vtype])
    if vtype == _STRING:
        return r.string()
    raise GGUFError(f"unknown value type {vtype}")


def read_gguf_header(path: str | os.PathLike[str], tensors: bool = True) -> GGUFHeader:
    """Parse a GGUF header (versions 2 and 3): metadata key/values, and the tensor infos for the parameter
    count. Reads nothing past the tensor infos."""
    with open(path, "rb") as fh:
        r = _Reader(fh)
        r._need(4)
        if bytes(r.buf[:4]) != GGUF_MAGIC:
            raise GGUFError("not a GGUF file (bad magic)")
        r.pos = 4
        version = r.unpack("<I")
        if version not in (2, 3):
            raise GGUFError(f"unsupported GGUF version {version}")
        tensor_count = r.unpack("<Q")
        kv_count = r.unpack("<Q")
        if tensor_count > _MAX_COUNT or kv_count > _MAX_COUNT:
            raise GGUFError("implausible tensor or key count")
        meta: dict[str, Any] = {}
        lengths: dict[str, int] = {}
        for _ in range(kv_count):
            key = r.string()
            vtype = r.unpack("<I")
            if vtype == _ARRAY:
                etype = r.unpack("<I")
                count = r.unpack("<Q")
                if count > _MAX_COUNT * 10:
                    raise GGUFError(f"implausible array length for {key}")
                lengths[key] = count
                if count <= _SMALL_ARRAY:
                    meta[key] = [_read_value(r, etype) for _ in range(count)]
                elif etype in _SCALARS:
                    r.skip(struct.calcsize(_SCALARS[etype]) * count)
                elif etype == _STRING:
                    r.skip_strings(count)
                else:
                    raise GGUFError(f"array of type {etype} in {key}")
            else:
                meta[key] = _read_value(r, vtype)
        header = GGUFHeader(version, tensor_count, meta, lengths)
        if tensors:
            total = 0
            for _ in range(tensor_count):
                name = r.string()
                n_dims = r.unpack("<I")
                if n_dims > 8:
                    raise GGUFError(f"tensor {name} has {n_dims} dimensions")
                count = 1
                for _ in range(n_dims):
                    count *= r.unpack("<Q")
                r.skip(4 + 8)  # type, offset
                total += count
                if name == "output.weight":
                    header.has_output_tensor = True
            header.params = total
        return header


def _int(value: Any, reduce: str = "max") -> int:
    if isinstance(value, list):
        nums = [int(v) for v in value if isinstance(v, int | float)]
        if not nums:
            return 0
        return max(nums) if reduce == "max" else int(sum(nums) / len(nums))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    return 0


# Families whose layers norm queries and keys per head, and those with four RMSNorms per layer: both change
# what training keeps for the backward pass.
_QK_NORM_FAMILIES = ("qwen3", "qwen3moe", "qwen3-moe", "gemma3", "olmo2", "olmoe")
_FOUR_NORM_FAMILIES = ("gemma2", "gemma3")


def _family(name: str) -> str:
    return name.lower().replace("_text", "").replace("_", "-")


# Sliding-window layer counts by architecture when the file does not list them.
def _sliding_layers(arch: str, layers: int) -> int:
    if arch in ("gemma2", "gpt-oss", "gptoss"):
        return layers // 2
    if arch == "gemma3":
        return layers - layers // 6
    if arch == "cohere2":
        return layers - layers // 4
    return 0


def gguf_architecture(header: GGUFHeader) -> Architecture | None:
    """The estimate's view of a GGUF model, or None when the file lacks the shapes (not a decoder LLM)."""
    meta = header.metadata
    arch = meta.get("general.architecture")
    if not isinstance(arch, str):
        return None

    def get(key: str, default: Any = 0) -> Any:
        return meta.get(f"{arch}.{key}", default)

    layers = _int(get("block_count"))
    hidden = _int(get("embedding_length"))
    heads = _int(get("attention.head_count"))
    if not (layers and hidden and heads):
        return None
    kv_heads = _int(get("attention.head_count_kv", heads)) or heads
    head_dim = _int(get("attention.key_length")) or hidden // heads
    vocab = _int(get("vocab_size")) or header.array_lengths.get("tokenizer.ggml.tokens", 0)
    experts = _int(get("expert_count"))
    experts_active = _int(get("expert_used_count"))
    intermediate = _int(get("feed_forward_length"))
    moe_intermediate = _int(get("expert_feed_forward_length")) or (intermediate if experts else 0)
    window = _int(get("attention.sliding_window"))
    params = float(header.params or 0)
    arch_obj = Architecture(
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        vocab=vocab,
        params=params,
        intermediate=intermediate,
        context=_int(get("context_length")),
        tied_embeddings=not header.has_output_tensor,
        experts=experts,
        experts_active=experts_active,
        moe_intermediate=moe_intermediate,
        sliding_window=window,
        sliding_layers=_sliding_layers(arch, layers) if window else 0,
        qk_norm=_family(arch) in _QK_NORM_FAMILIES,
        norms_per_layer=4 if _family(arch) in _FOUR_NORM_FAMILIES else 2,
    )
    if not params:
        arch_obj = replace(arch_obj, params=arch_obj.estimated_params())
    if experts and experts_active:
        idle = (experts - experts_active) * 3 * hidden * (moe_intermediate or intermediate) * layers
        arch_obj = replace(arch_obj, active_params=max(arch_obj.params - idle, arch_obj.params * 0.02))
    return arch_obj


def _quant_from_ftype(meta: Mapping[str, Any], ftypes: Mapping[int, str]) -> str | None:
    ftype = meta.get("general.file_type")
    if isinstance(ftype, int):
        return ftypes.get(ftype)
    return None


_PART_RE = re.compile(r"^(?P<stem>.*)-(?P<part>\d{5})-of-(?P<parts>\d{5})\.gguf$", re.IGNORECASE)


def discover_gguf(dirs: Iterable[Path], ftypes: Mapping[int, str], max_depth: int = 5) -> DiscoveryResult:
    result = DiscoveryResult()
    groups: dict[str, list[Path]] = {}
    seen: set[Path] = set()
    for root in dirs:
        if not root.is_dir():
            continue
        root_depth = len(root.parts)
        for dirpath, dirnames, filenames in os.walk(root):
            if len(Path(dirpath).parts) - root_depth >= max_depth:
                dirnames[:] = []
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for fname in filenames:
                if not fname.lower().endswith(".gguf") or "mmproj" in fname.lower():
                    continue
                path = Path(dirpath) / fname
                try:
                    real = path.resolve()
                except OSError:
                    continue
                if real in seen:
                    continue
                seen.add(real)
                m = _PART_RE.match(fname)
                key = str(Path(dirpath) / m.group("stem")) if m else str(path)
                groups.setdefault(key, []).append(path)
    for key, paths in sorted(groups.items()):
        paths.sort()
        first = paths[0]
        stem = Path(key).name if _PART_RE.match(first.name) else first.name[: -len(".gguf")]
        try:
            size = sum(p.stat().st_size for p in paths)
            header = read_gguf_header(first)
        except (OSError, GGUFError) as exc:
            result.errors.append(f"{first}: {exc}")
            continue
        meta = header.metadata
        arch = gguf_architecture(header)
        label = meta.get("general.name") if isinstance(meta.get("general.name"), str) else stem
        result.models.append(
            LocalModel(
                name=re.sub(r"[\s_]+", "-", stem.strip().lower()),
                source="gguf",
                path=str(first),
                weights_bytes=size,
                arch=arch,
                quant=_quant_from_ftype(meta, ftypes),
                description=f"GGUF file: {label}",
            )
        )
    return result


# --- Ollama -------------------------------------------------------------------------------------------------

OLLAMA_REGISTRY = "registry.ollama.ai"
_MODEL_MEDIA = "application/vnd.ollama.image.model"
_PROJECTOR_MEDIA = "application/vnd.ollama.image.projector"
_PARAMS_MEDIA = "application/vnd.ollama.image.params"


def _blob(root: Path, digest: str) -> Path:
    return root / "blobs" / digest.replace(":", "-")


def ollama_name(host: str, namespace: str, repo: str, tag: str) -> str:
    if host == OLLAMA_REGISTRY:
        return f"{repo}:{tag}" if namespace == "library" else f"{namespace}/{repo}:{tag}"
    return f"{host}/{namespace}/{repo}:{tag}"


def discover_ollama(root: Path, ftypes: Mapping[int, str]) -> DiscoveryResult:
    result = DiscoveryResult()
    manifests = root / "manifests"
    if not manifests.is_dir():
        return result
    for path in sorted(manifests.glob("*/*/*/*")):
        if not path.is_file():
            continue
        host, namespace, repo, tag = path.relative_to(manifests).parts
        name = ollama_name(host, namespace, repo, tag)
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
            layers = manifest.get("layers") or []
            model_layers = [x for x in layers if x.get("mediaType") == _MODEL_MEDIA]
            if not model_layers:
                result.errors.append(f"{path}: no model layer in the manifest")
                continue
            model_layer = model_layers[0]
            size = sum(
                int(x.get("size") or 0)
                for x in layers
                if x.get("mediaType") in (_MODEL_MEDIA, _PROJECTOR_MEDIA)
            )
            blob = _blob(root, str(model_layer["digest"]))
            arch = None
            quant = None
            if blob.is_file():
                header = read_gguf_header(blob)
                arch = gguf_architecture(header)
                quant = _quant_from_ftype(header.metadata, ftypes)
                size = size or blob.stat().st_size
            else:
                result.errors.append(f"{path}: model blob {blob.name} is missing")
            config_digest = (manifest.get("config") or {}).get("digest")
            if quant is None and config_digest and _blob(root, config_digest).is_file():
                config = json.loads(_blob(root, config_digest).read_text(encoding="utf-8"))
                quant = config.get("file_type") or None
            context = None
            for layer in layers:
                if layer.get("mediaType") == _PARAMS_MEDIA and _blob(root, layer["digest"]).is_file():
                    params = json.loads(_blob(root, layer["digest"]).read_text(encoding="utf-8"))
                    if isinstance(params.get("num_ctx"), int):
                        context = params["num_ctx"]
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            result.errors.append(f"{path}: {exc}")
            continue
        result.models.append(
            LocalModel(
                name=name,
                source="ollama",
                path=str(path),
                weights_bytes=size,
                arch=arch,
                quant=quant,
                context=context,
                description=f"Ollama model {name}",
            )
        )
    return result


# --- Hugging Face cache -------------------------------------------------------------------------------------

_FLOAT_DTYPES = {"F64", "F32", "F16", "BF16", "F8_E4M3", "F8_E5M2"}


def read_safetensors_header(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON header of a .safetensors file: 8-byte little-endian length, then that many bytes of JSON."""
    with open(path, "rb") as fh:
        raw = fh.read(8)
        if len(raw) != 8:
            raise ValueError("too short for a safetensors file")
        (n,) = struct.unpack("<Q", raw)
        if n > 100 * 1024 * 1024:
            raise ValueError(f"implausible header length {n}")
        data = fh.read(n)
        if len(data) != n:
            raise ValueError("file ends inside the header")
    header = json.loads(data)
    if not isinstance(header, dict):
        raise ValueError("header is not a JSON object")
    return header


@dataclass
class SafetensorsSummary:
    params: int  # elements of the floating-point tensors
    bytes: int  # tensor data
    dtypes: dict[str, int]  # dtype -> bytes
    lm_head_params: int = 0  # a stored copy of a tied output layer is not a parameter of its own


def summarize_safetensors(paths: Iterable[Path]) -> SafetensorsSummary:
    params = total = lm_head = 0
    dtypes: dict[str, int] = {}
    for path in paths:
        for name, info in read_safetensors_header(path).items():
            if name == "__metadata__" or not isinstance(info, dict):
                continue
            dtype = str(info.get("dtype", ""))
            start, end = info.get("data_offsets", (0, 0))
            nbytes = int(end) - int(start)
            count = 1
            for dim in info.get("shape", []):
                count *= int(dim)
            total += nbytes
            dtypes[dtype] = dtypes.get(dtype, 0) + nbytes
            if dtype in _FLOAT_DTYPES:
                params += count
                if name.endswith("lm_head.weight"):
                    lm_head += count
    return SafetensorsSummary(params, total, dtypes, lm_head)


def _text_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The language model's part of a (possibly multimodal) config."""
    cfg = dict(config)
    for outer in ("thinker_config", "llm_config", "language_config"):
        if isinstance(cfg.get(outer), dict):
            cfg = {**cfg, **cfg[outer]}
    if isinstance(cfg.get("text_config"), dict):
        cfg = {**cfg, **cfg["text_config"]}
    return cfg


def _first(cfg: Mapping[str, Any], *keys: str) -> int:
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value:
            return int(value)
    return 0


def hf_architecture(config: Mapping[str, Any], params: float = 0.0) -> Architecture | None:
    cfg = _text_config(config)
    layers = _first(cfg, "num_hidden_layers", "n_layer", "num_layers")
    hidden = _first(cfg, "hidden_size", "n_embd", "d_model")
    heads = _first(cfg, "num_attention_heads", "n_head")
    if not (layers and hidden and heads):
        return None
    experts = _first(cfg, "num_local_experts", "num_experts", "n_routed_experts")
    intermediate = _first(cfg, "intermediate_size", "ffn_dim", "n_inner")
    moe_intermediate = _first(cfg, "moe_intermediate_size") or (intermediate if experts else 0)
    window = _first(cfg, "sliding_window") if cfg.get("use_sliding_window", True) is not False else 0
    sliding_layers = 0
    if window:
        types = cfg.get("layer_types")
        if isinstance(types, list):
            sliding_layers = sum(1 for t in types if t == "sliding_attention")
        else:
            pattern = _first(cfg, "sliding_window_pattern")
            model_type = str(cfg.get("model_type", ""))
            if pattern:
                sliding_layers = layers - layers // pattern
            else:
                sliding_layers = _sliding_layers(model_type.replace("_text", "").replace("_", "-"), layers)
    arch = Architecture(
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=_first(cfg, "num_key_value_heads", "num_kv_heads") or heads,
        head_dim=_first(cfg, "head_dim") or hidden // heads,
        vocab=_first(cfg, "vocab_size", "padded_vocab_size"),
        params=float(params),
        intermediate=intermediate,
        context=_first(cfg, "max_position_embeddings", "max_sequence_length", "seq_length", "n_positions"),
        tied_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        experts=experts,
        experts_active=_first(cfg, "num_experts_per_tok", "num_experts_per_token", "experts_per_token"),
        moe_intermediate=moe_intermediate,
        sliding_window=window,
        sliding_layers=sliding_layers,
        qk_norm=_family(str(cfg.get("model_type", ""))) in _QK_NORM_FAMILIES,
        norms_per_layer=4 if _family(str(cfg.get("model_type", ""))) in _FOUR_NORM_FAMILIES else 2,
    )
    if not arch.params:
        arch = replace(arch, params=arch.estimated_params())
    if arch.experts and arch.experts_active:
        idle = (arch.experts - arch.experts_active) * 3 * hidden * moe_intermediate * layers
        arch = replace(arch, active_params=max(arch.params - idle, arch.params * 0.02))
    return arch


def hf_quant(config: Mapping[str, Any], dtypes: Mapping[str, int]) -> str | None:
    qc = config.get("quantization_config")
    if isinstance(qc, dict):
        method = str(qc.get("quant_method", "")).lower()
        bits = qc.get("bits") or qc.get("w_bit")
        if method == "mxfp4":
            return "MXFP4"
        if method in ("fp8", "fbgemm_fp8"):
            return "FP8"
        if method == "bitsandbytes":
            return "NF4" if qc.get("load_in_4bit") else "INT8"
        if method in ("awq", "gptq", "compressed-tensors", "autoround"):
            return "INT8" if bits == 8 else "AWQ"
    if dtypes:
        main = max(dtypes, key=lambda d: dtypes[d])
        return {"BF16": "BF16", "F16": "F16", "F32": "F32", "F8_E4M3": "FP8"}.get(main)
    dtype = str(_text_config(config).get("torch_dtype") or config.get("dtype") or "")
    return {"bfloat16": "BF16", "float16": "F16", "float32": "F32"}.get(dtype)


def _snapshot(repo_dir: Path) -> Path | None:
    snapshots = repo_dir / "snapshots"
    ref = repo_dir / "refs" / "main"
    if ref.is_file():
        candidate = snapshots / ref.read_text(encoding="utf-8").strip()
        if candidate.is_dir():
            return candidate
    dirs = [d for d in snapshots.iterdir() if d.is_dir()] if snapshots.is_dir() else []
    return max(dirs, key=lambda d: d.stat().st_mtime) if dirs else None


def discover_hf(cache: Path, ftypes: Mapping[int, str]) -> DiscoveryResult:
    result = DiscoveryResult()
    if not cache.is_dir():
        return result
    for repo_dir in sorted(cache.glob("models--*")):
        parts = repo_dir.name.split("--")
        if len(parts) < 3:
            continue
        repo_id = f"{parts[1]}/{'--'.join(parts[2:])}"
        try:
            snap = _snapshot(repo_dir)
            if snap is None:
                continue
            ggufs = sorted(p for p in snap.glob("*.gguf") if "mmproj" not in p.name.lower())
            if not (snap / "config.json").is_file():
                if ggufs:  # a GGUF repository: each file is a model of its own
                    found = discover_gguf([snap], ftypes, max_depth=1)
                    for model in found.models:
                        model.hf_id = repo_id
                        model.source = "hf"
                    result.models += found.models
                    result.errors += found.errors
                continue
            config = json.loads((snap / "config.json").read_text(encoding="utf-8"))
            tensors = sorted(snap.glob("*.safetensors"))
            summary = summarize_safetensors(tensors) if tensors else SafetensorsSummary(0, 0, {})
            if not tensors:
                summary.bytes = sum(p.stat().st_size for p in snap.glob("*.bin"))
            quantized = isinstance(config.get("quantization_config"), dict)
            params = summary.params
            if _text_config(config).get("tie_word_embeddings"):
                params -= summary.lm_head_params
            arch = hf_architecture(config, 0.0 if quantized else params)
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            result.errors.append(f"{repo_dir}: {exc}")
            continue
        if not summary.bytes and arch is None:
            continue
        result.models.append(
            LocalModel(
                name=repo_id,
                source="hf",
                path=str(snap),
                weights_bytes=summary.bytes,
                arch=arch,
                quant=hf_quant(config, summary.dtypes),
                hf_id=repo_id,
                description=f"Hugging Face cache: {repo_id}",
            )
        )
    return result
