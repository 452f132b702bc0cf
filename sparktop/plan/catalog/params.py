"""The parameters a workload has, with their types and choices: one definition shared by the built-in and user
catalogs, plan files, the CLI and the What-if form."""

from __future__ import annotations

import contextlib
import math
import re
from dataclasses import dataclass
from typing import Any

KINDS = ("inference", "speech", "training", "other")
# Upper bounds that keep every estimate a finite float: the longest contexts models train on are ~10M tokens;
# a petabyte is no workload's footprint.
MAX_TOKENS = 100_000_000
MAX_MEMORY_GB = 1_000_000.0
# Shorthands accepted for `kind` in plan files: kind = "vllm" means an inference workload served by vLLM.
KIND_ALIASES = {
    "llm": "inference",
    "tts": "speech",
    "stt": "speech",
    "audio": "speech",
    "fine-tuning": "training",
    "finetune": "training",
    "fine-tune": "training",
    "train": "training",
}
ENGINES = ("ollama", "llama.cpp", "vllm", "other")
ENGINE_ALIASES = {
    "llamacpp": "llama.cpp",
    "llama-cpp": "llama.cpp",
    "llama-server": "llama.cpp",
    "server": "other",
    "transformers": "other",
    "tgi": "other",
    "sglang": "other",
}
GPU_USES = ("sustained", "interactive", "pipeline", "batch", "none")
METHODS = ("sft", "dpo", "lora", "qlora", "dpo-lora", "dpo-qlora")
PRECISIONS = ("bf16", "fp32", "mixed")
OPTIMIZERS = ("adamw", "adamw-8bit", "sgd")
# How the loss turns logits into a loss (what it keeps for the backward pass): transformers' cross-entropy
# upcasts to fp32; a loss in the activation dtype does not (TRL's DPO); a fused linear + cross-entropy (Liger,
# Cut Cross-Entropy) never holds the full logits.
LOSSES = ("hf", "no-upcast", "fused")
LOSS_ALIASES = {
    "transformers": "hf",
    "huggingface": "hf",
    "cross-entropy": "hf",
    "bf16": "no-upcast",
    "noupcast": "no-upcast",
    "liger": "fused",
    "cce": "fused",
    "cut-cross-entropy": "fused",
}
OPTIMIZER_ALIASES = {
    "adam": "adamw",
    "adamw8bit": "adamw-8bit",
    "adam8bit": "adamw-8bit",
    "8bit-adam": "adamw-8bit",
    "paged-adamw-8bit": "adamw-8bit",
    "adamw-torch": "adamw",
}


@dataclass(frozen=True)
class ParamSpec:
    key: str
    type: str  # "int" | "float" | "bool" | "str" | "choice"
    label: str
    help: str = ""
    choices: tuple[str, ...] = ()  # empty for "choice" params whose choices come from the catalog
    minimum: float | None = None
    maximum: float | None = None
    unit: str = ""
    scope: str = "all"  # "all", "inference", "training", "model", "vllm", "llama", "lora", "pipeline"


PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec("label", "str", "Label", "name shown for this workload"),
    ParamSpec("kind", "choice", "Kind", "what the workload is", KINDS),
    ParamSpec(
        "gpu_use",
        "choice",
        "GPU use",
        "sustained (training), interactive (chat), pipeline (a stage of a sequential pipeline), batch, none",
        GPU_USES,
    ),
    ParamSpec(
        "pipeline", "str", "Pipeline", "stages of the same pipeline run one after the other", scope="pipeline"
    ),
    ParamSpec(
        "duty", "float", "Duty cycle", "share of the time it keeps the GPU busy", minimum=0.0, maximum=1.0
    ),
    ParamSpec(
        "memory_gb",
        "float",
        "Memory",
        "a measured footprint: replaces the estimate",
        minimum=0.0,
        maximum=MAX_MEMORY_GB,
        unit="GB",
    ),
    ParamSpec("model", "choice", "Model", "a model preset or a model found on this machine", scope="model"),
    ParamSpec("engine", "choice", "Engine", "what serves the model", ENGINES, scope="inference"),
    ParamSpec("quant", "choice", "Quantisation", "weights format", scope="inference"),
    ParamSpec(
        "context",
        "int",
        "Context",
        "context length per sequence",
        minimum=1,
        maximum=MAX_TOKENS,
        unit="tokens",
        scope="inference",
    ),
    ParamSpec(
        "parallel",
        "int",
        "Parallel",
        "sequences served at once (KV cache slots)",
        minimum=1,
        maximum=4096,
        scope="inference",
    ),
    ParamSpec("kv_dtype", "choice", "KV cache type", "element type of the KV cache", scope="inference"),
    ParamSpec("flash_attention", "bool", "Flash attention", "smaller compute buffers", scope="llama"),
    ParamSpec(
        "gpu_memory_utilization",
        "float",
        "GPU memory utilisation",
        "share of the pool vLLM reserves up front",
        minimum=0.01,
        maximum=1.0,
        scope="vllm",
    ),
    ParamSpec(
        "method",
        "choice",
        "Method",
        "full fine-tuning (sft, dpo) or adapters (lora, qlora)",
        METHODS,
        scope="training",
    ),
    ParamSpec(
        "batch", "int", "Batch", "micro-batch size per step", minimum=1, maximum=65536, scope="training"
    ),
    ParamSpec(
        "seq_len",
        "int",
        "Sequence length",
        "tokens per sample",
        minimum=1,
        maximum=MAX_TOKENS,
        unit="tokens",
        scope="training",
    ),
    ParamSpec(
        "precision",
        "choice",
        "Precision",
        "bf16, fp32, or mixed (fp32 master weights + bf16 autocast)",
        PRECISIONS,
        scope="training",
    ),
    ParamSpec("optimizer", "choice", "Optimizer", "AdamW, 8-bit AdamW or SGD", OPTIMIZERS, scope="training"),
    ParamSpec(
        "gradient_checkpointing",
        "bool",
        "Gradient checkpointing",
        "recompute activations in backward",
        scope="training",
    ),
    ParamSpec(
        "efficient_attention",
        "bool",
        "Memory-efficient attention",
        "flash / SDPA: no s^2 scores",
        scope="training",
    ),
    ParamSpec("lora_rank", "int", "LoRA rank", "adapter rank", minimum=1, maximum=4096, scope="lora"),
    ParamSpec(
        "loss",
        "choice",
        "Loss kernel",
        "hf (fp32 upcast, 12 B x vocab per token), no-upcast (6 B), fused (Liger / CCE: no logits kept)",
        LOSSES,
        scope="training",
    ),
    ParamSpec(
        "dataloader_workers",
        "int",
        "Dataloader workers",
        "DataLoader worker processes (num_workers): host memory beside the training process",
        minimum=0,
        maximum=256,
        scope="training",
    ),
)
SPECS: dict[str, ParamSpec] = {p.key: p for p in PARAMS}
# Other spellings accepted in files and on the command line.
KEY_ALIASES = {
    "ctx": "context",
    "num_ctx": "context",
    "context_length": "context",
    "n_ctx": "context",
    "num_parallel": "parallel",
    "np": "parallel",
    "quantization": "quant",
    "quantisation": "quant",
    "kv_cache_type": "kv_dtype",
    "cache_type_k": "kv_dtype",
    "fa": "flash_attention",
    "batch_size": "batch",
    "sequence_length": "seq_len",
    "max_seq_length": "seq_len",
    "max_length": "seq_len",
    "seq": "seq_len",
    "gpu_mem": "gpu_memory_utilization",
    "memory": "memory_gb",
    "gb": "memory_gb",
    "rank": "lora_rank",
    "lora_r": "lora_rank",
    "gradient_checkpoint": "gradient_checkpointing",
    "checkpointing": "gradient_checkpointing",
    "flash_attn": "efficient_attention",
    "use": "gpu_use",
    "dtype": "precision",
    "loss_kernel": "loss",
    "num_workers": "dataloader_workers",
    "dataloader_num_workers": "dataloader_workers",
    "workers": "dataloader_workers",
}


def canonical_key(key: str) -> str | None:
    k = key.strip().lower().replace("-", "_")
    k = KEY_ALIASES.get(k, k)
    return k if k in SPECS else None


def norm_token(text: str) -> str:
    """Lowercase, spaces and underscores as hyphens: how names and choices are compared."""
    return re.sub(r"[\s_]+", "-", text.strip().lower())


_TRUE = {"true", "yes", "on", "1", "y"}
_FALSE = {"false", "no", "off", "0", "n"}


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("expected an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip().lower().replace("_", "").replace(",", "")
        # A sign is read too, so `-4` is refused by the range check ("must be at least 1"), not as "not an
        # integer"; the digits are bounded so a 400-digit number cannot overflow a float later.
        m = re.fullmatch(r"([-+]?\d{1,15}(?:\.\d+)?)([km]?)", text)
        if m:
            number = float(m.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2)]
            if number.is_integer():
                return int(number)
    raise ValueError("expected an integer")


def _to_float(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError("expected a number")
    number: float | None = None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        with contextlib.suppress(ValueError):
            number = float(value.strip())
    if number is None:
        raise ValueError("expected a number")
    if not math.isfinite(number):
        raise ValueError(f"must be a finite number, not {number}")
    return number


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    raise ValueError("expected true or false")


def match_choice(
    value: str, choices: tuple[str, ...] | list[str], aliases: dict[str, str] | None = None
) -> str:
    """The canonical choice for `value`, forgiving case, spaces, underscores and hyphens."""
    text = norm_token(value)
    if aliases:
        text = norm_token(aliases.get(text, text))
    for choice in choices:
        if norm_token(choice) == text:
            return choice
    squashed = text.replace("-", "").replace(".", "")
    for choice in choices:
        if norm_token(choice).replace("-", "").replace(".", "") == squashed:
            return choice
    raise ValueError(f"expected one of {', '.join(choices)}")


_CHOICE_ALIASES = {
    "kind": KIND_ALIASES,
    "engine": ENGINE_ALIASES,
    "optimizer": OPTIMIZER_ALIASES,
    "loss": LOSS_ALIASES,
}


def coerce(spec: ParamSpec, value: Any, choices: tuple[str, ...] | list[str] | None = None) -> Any:
    """`value` converted to the parameter's type, or ValueError with a short message. `choices` overrides the
    spec's own (for the catalog-backed choices: quant, kv_dtype, model)."""
    if spec.type == "int":
        out: Any = _to_int(value)
    elif spec.type == "float":
        out = _to_float(value)
    elif spec.type == "bool":
        return _to_bool(value)
    elif spec.type == "str":
        if not isinstance(value, str) or not value.strip():
            raise ValueError("expected a non-empty string")
        return value.strip()
    else:
        if not isinstance(value, str):
            raise ValueError("expected a string")
        options = tuple(choices) if choices is not None else spec.choices
        if spec.key == "kind" and engine_from_kind(value):
            return "inference"
        return match_choice(value, options, _CHOICE_ALIASES.get(spec.key))
    if spec.minimum is not None and out < spec.minimum:
        raise ValueError(f"must be at least {spec.minimum:g}")
    if spec.maximum is not None and out > spec.maximum:
        raise ValueError(f"must be at most {spec.maximum:g}")
    return out


def kind_label(kind: str, engine: str | None) -> str:
    """What a KIND column shows: the engine of an inference workload ("llm" for a generic server)."""
    if kind != "inference":
        return kind
    return "llm" if engine in (None, "other") else engine


def engine_from_kind(value: Any) -> str | None:
    """`kind = "vllm"` in a plan file: the engine it names, if it names one ("other" is a kind)."""
    if not isinstance(value, str):
        return None
    text = norm_token(value)
    if text == "other":
        return None
    text = ENGINE_ALIASES.get(text, text)
    for engine in ENGINES:
        if norm_token(engine) == text:
            return engine
    return None
