"""Memory and decode-speed estimates for one workload: pure functions, no I/O.

Every figure is a `Range` (low / mid / high, bytes) and every estimate keeps its breakdown (`Part`s), so a
view can show where the number comes from. Sizes are bytes; the planner prints them in decimal GB (1e9 bytes),
the unit of the reference's 80 GB / 100 GB lines.

Inference: weights + KV cache + compute buffers + runtime + CUDA context (vLLM instead reserves
`gpu_memory_utilization` x the pool, whatever the model). Training: weights + optimizer states (+ a frozen
reference model for DPO) + the backward pass's peak (activations + loss path, or gradients + optimizer step) +
allocator slack + the holes of lazily made optimizer states + CUDA context + the process's CPU side. Each part
says which side it lives on (GPU or host): one pool on a Spark, two on a machine with a discrete GPU.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from sparktop.core.format import fmt_est
from sparktop.core.snapshot import GB

BANDWIDTH = 273e9  # bytes/s, LPDDR5x on GB10

# Per-process CUDA context (driver state, module images): the reference says 0.5-1 GB.
CUDA_CONTEXT_GB = (0.4, 0.5, 1.0)
# Linux + Docker daemon on a clean machine: the reference says 2-4 GB.
SYSTEM_BASE_GB = (2.0, 3.0, 4.0)
# Share of the peak bandwidth a decoder really gets (kernel efficiency, KV reads, sampling): calibrated on the
# reference's "70B Q4: ~2-3 tok/s, 8B: ~20-30 tok/s".
DECODE_EFFICIENCY = (0.35, 0.45, 0.6)

# Host-side process memory that is neither weights nor KV cache, per engine (GB).
RUNTIME_GB = {
    "ollama": (0.2, 0.3, 0.6),  # ollama serve + its runner (tokenizer, graph metadata)
    "llama.cpp": (0.1, 0.2, 0.5),
    "vllm": (1.0, 1.5, 3.0),  # Python, torch, tokenizer workers: outside the gpu_memory_utilization pool
    "other": (0.5, 1.0, 2.0),  # a Python server (transformers, TGI, SGLang ...)
}
# vLLM: CUDA graphs and the profiling peak of activations live inside the reservation (GB).
VLLM_GRAPHS_GB = 1.0

LLAMA_CPP_UBATCH = 512  # llama.cpp / Ollama physical batch: sizes the compute buffers


# --- ranges and breakdowns ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Range:
    """low <= mid <= high, in bytes (or any unit: tok/s for decode speeds)."""

    low: float
    mid: float
    high: float

    def __post_init__(self) -> None:
        if not (self.low <= self.mid <= self.high):
            lo, mi, hi = sorted((self.low, self.mid, self.high))
            object.__setattr__(self, "low", lo)
            object.__setattr__(self, "mid", mi)
            object.__setattr__(self, "high", hi)

    @classmethod
    def exact(cls, value: float) -> Range:
        return cls(value, value, value)

    @classmethod
    def gb(cls, low: float, mid: float | None = None, high: float | None = None) -> Range:
        """From GB figures: `gb(5)` exact, `gb(7, high=8)` with mid the midpoint, or all three."""
        if high is None:
            high = low
        if mid is None:
            mid = (low + high) / 2
        return cls(low * GB, mid * GB, high * GB)

    @classmethod
    def spread(cls, value: float, low: float, high: float) -> Range:
        """`value` with a relative uncertainty: spread(x, 0.9, 1.2) -> (0.9x, x, 1.2x)."""
        return cls(value * low, value, value * high)

    @classmethod
    def total(cls, ranges: Iterable[Range]) -> Range:
        lo = mi = hi = 0.0
        for r in ranges:
            lo += r.low
            mi += r.mid
            hi += r.high
        return cls(lo, mi, hi)

    def __add__(self, other: Range) -> Range:
        return Range(self.low + other.low, self.mid + other.mid, self.high + other.high)

    def scale(self, k: float) -> Range:
        return Range(self.low * k, self.mid * k, self.high * k)

    def in_gb(self, digits: int = 2) -> dict[str, float]:
        return {
            "low": round(self.low / GB, digits),
            "mid": round(self.mid / GB, digits),
            "high": round(self.high / GB, digits),
        }

    def as_dict(self, digits: int = 2) -> dict[str, float]:
        return {
            "low": round(self.low, digits),
            "mid": round(self.mid, digits),
            "high": round(self.high, digits),
        }


ZERO = Range(0.0, 0.0, 0.0)


def gb_range(t: tuple[float, float, float]) -> Range:
    return Range.gb(*t)


@dataclass(frozen=True)
class Part:
    """One line of a breakdown: what it is, how much, how it was computed."""

    label: str
    bytes: Range
    detail: str = ""
    side: str = "gpu"  # "gpu": device memory (the pool on a Spark); "host": the process's CPU memory


@dataclass
class Estimate:
    parts: list[Part] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # how it was computed, what is assumed
    warnings: list[str] = field(default_factory=list)  # something the user should act on
    bytes_per_token: float | None = None  # bytes read from memory per decoded token (LLMs)
    decode: Range | None = None  # tok/s for one sequence when running alone

    @property
    def total(self) -> Range:
        return Range.total(p.bytes for p in self.parts)

    def side_total(self, side: str) -> Range:
        """What this workload needs on one side: "gpu" (device memory) or "host" (CPU memory)."""
        return Range.total(p.bytes for p in self.parts if p.side == side)

    def add(self, label: str, value: Range, detail: str = "", side: str = "gpu") -> None:
        self.parts.append(Part(label, value, detail, side))


def fmt_count(n: float) -> str:
    for unit, size in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.3g}{unit}"
    return f"{n:.0f}"


# --- architectures -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Architecture:
    """What the estimates need from a model's public config (config.json, GGUF metadata)."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    params: float  # total parameters
    intermediate: int = 0  # dense MLP width (0: unknown, taken as 4 x hidden)
    context: int = 0  # trained context length (0: unknown)
    tied_embeddings: bool = False
    experts: int = 0  # MoE: routed experts per layer
    experts_active: int = 0  # MoE: experts used per token
    moe_intermediate: int = 0  # MoE: width of one expert
    active_params: float = 0.0  # parameters read per token (MoE); 0: all
    sliding_window: int = 0  # tokens kept by sliding-window layers
    sliding_layers: int = 0  # how many layers use the sliding window
    qk_norm: bool = False  # per-head RMSNorm on queries and keys (Qwen3, Gemma 3)
    norms_per_layer: int = 2  # RMSNorms per decoder layer (Gemma 2/3 also norm after attention and MLP)

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def params_per_token(self) -> float:
        return self.active_params or self.params

    @property
    def mlp_width(self) -> int:
        return self.intermediate or 4 * self.hidden

    @property
    def embedding_params(self) -> float:
        """Token embedding plus output head (once if they are tied)."""
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    def estimated_params(self) -> float:
        """Parameters from the shapes alone (for checkpoints whose tensors are packed)."""
        h, hd = self.hidden, self.head_dim
        attn = h * self.heads * hd * 2 + h * self.kv_heads * hd * 2
        if self.is_moe:
            mlp = self.experts * 3 * h * (self.moe_intermediate or self.mlp_width) + self.experts * h
        else:
            mlp = 3 * h * self.mlp_width
        return self.layers * (attn + mlp + 2 * h) + self.embedding_params + h


# --- inference ---------------------------------------------------------------------------------------------


def kv_cache_bytes(
    layers: int, kv_heads: int, head_dim: int, context: int, parallel: int, bytes_per_element: float
) -> float:
    """2 (K and V) x layers x KV heads x head dim x context x parallel sequences x bytes per element."""
    return 2.0 * layers * kv_heads * head_dim * context * parallel * bytes_per_element


def arch_kv_cache_bytes(arch: Architecture, context: int, parallel: int, bytes_per_element: float) -> float:
    """The KV formula, with sliding-window layers holding at most their window (Gemma, gpt-oss)."""
    swa_layers = min(arch.sliding_layers, arch.layers) if arch.sliding_window else 0
    full = kv_cache_bytes(
        arch.layers - swa_layers, arch.kv_heads, arch.head_dim, context, parallel, bytes_per_element
    )
    if not swa_layers:
        return full
    window = min(context, arch.sliding_window)
    return full + kv_cache_bytes(
        swa_layers, arch.kv_heads, arch.head_dim, window, parallel, bytes_per_element
    )


def weights_from_params(params: float, bits_per_weight: float) -> float:
    return params * bits_per_weight / 8.0


def llama_cpp_compute_bytes(
    arch: Architecture, context: int, flash_attention: bool, ubatch: int = LLAMA_CPP_UBATCH
) -> float:
    """llama.cpp / Ollama compute buffer: the larger of the f32 logits of one micro-batch and the attention
    scores (only without flash attention), plus one layer's f32 activations."""
    logits = ubatch * arch.vocab * 4.0
    scores = 0.0 if flash_attention else ubatch * context * arch.heads * 4.0
    mlp = arch.moe_intermediate * arch.experts_active if arch.is_moe else arch.mlp_width
    activations = ubatch * (arch.hidden + mlp) * 4.0
    return max(logits, scores) + activations


def decode_bytes_per_token(
    arch: Architecture | None, weights_bytes: float, context: int, kv_bytes_per_element: float
) -> float:
    """Bytes read per decoded token: the active share of the weights plus the KV cache at half fill."""
    if arch is None:
        return weights_bytes
    active_share = arch.params_per_token / arch.params if arch.params else 1.0
    kv_read = arch_kv_cache_bytes(arch, max(1, context // 2), 1, kv_bytes_per_element)
    return weights_bytes * active_share + kv_read


def decode_rate(bytes_per_token: float, bandwidth: float = BANDWIDTH) -> Range:
    """tok/s for one sequence when the decoder has the bandwidth to itself."""
    if bytes_per_token <= 0:
        return ZERO
    lo, mid, hi = DECODE_EFFICIENCY
    return Range(
        lo * bandwidth / bytes_per_token, mid * bandwidth / bytes_per_token, hi * bandwidth / bytes_per_token
    )


def estimate_inference(
    arch: Architecture | None,
    *,
    engine: str,
    bits_per_weight: float,
    quant: str = "",
    weights_bytes: float | None = None,
    context: int = 4096,
    parallel: int = 1,
    kv_bytes_per_element: float = 2.0,
    kv_dtype: str = "f16",
    flash_attention: bool = True,
    gpu_memory_utilization: float = 0.9,
    pool_bytes: float = 128 * GB,
    bandwidth: float = BANDWIDTH,
) -> Estimate:
    est = Estimate()
    if arch is not None and arch.context and context > arch.context:
        # A warning, not a note: the plan shows it even without -v, so a capped value is never silent.
        est.warnings.append(f"context {context} capped at the model's trained {arch.context}")
        context = arch.context

    # Weights: the file when we have it, else parameters x bits per weight.
    if weights_bytes:
        weights = Range.exact(weights_bytes)
        w_detail = f"{quant} file, {fmt_est(weights_bytes)}" if quant else "model files"
    elif arch is not None:
        w = weights_from_params(arch.params, bits_per_weight)
        weights = Range.spread(w, 0.98, 1.04)
        w_detail = f"{fmt_count(arch.params)} params x {bits_per_weight:g} bits ({quant})"
    else:
        raise ValueError("an inference estimate needs an architecture or the weights' size")

    kv = ZERO
    kv_detail = ""
    if arch is not None:
        kv_total = arch_kv_cache_bytes(arch, context, parallel, kv_bytes_per_element)
        kv = Range.exact(kv_total)
        per_token = arch_kv_cache_bytes(arch, 1, 1, kv_bytes_per_element)
        kv_detail = (
            f"2 x {arch.layers} layers x {arch.kv_heads} KV heads x {arch.head_dim} x {context} ctx x "
            f"{parallel} slot{'s' if parallel != 1 else ''} x {kv_bytes_per_element:g} B ({kv_dtype}); "
            f"{per_token / 1024:.0f} KiB/token"
        )
        if arch.sliding_window and arch.sliding_layers:
            kv_detail += f"; {arch.sliding_layers} sliding-window layers hold {arch.sliding_window} tokens"
    else:
        est.notes.append("architecture unknown: KV cache not estimated")

    cuda = gb_range(CUDA_CONTEXT_GB)
    runtime = gb_range(RUNTIME_GB.get(engine, RUNTIME_GB["other"]))

    if engine == "vllm":
        reserve = gpu_memory_utilization * pool_bytes
        est.add(
            "vLLM reservation",
            Range.exact(reserve),
            f"gpu_memory_utilization {gpu_memory_utilization:g} x {fmt_est(pool_bytes)} pool, "
            "whatever the model",
        )
        est.add("process (Python, tokenizer)", runtime, "outside the reservation", side="host")
        est.add("CUDA context", cuda)
        inside = weights.mid + VLLM_GRAPHS_GB * GB
        room = reserve - inside
        if arch is not None:
            per_token = arch_kv_cache_bytes(arch, 1, 1, kv_bytes_per_element)
            est.notes.append(
                f"inside: weights {fmt_est(weights.mid)} + graphs/activations ~{VLLM_GRAPHS_GB:g} GB; "
                f"KV cache gets the rest, {fmt_est(max(0.0, room))} = "
                f"{max(0.0, room) / per_token:,.0f} tokens"
            )
            if room < kv.mid:
                est.warnings.append(
                    f"vLLM will refuse to start: {context} ctx x {parallel} needs {fmt_est(kv.mid)} of KV "
                    f"cache but the reservation leaves {fmt_est(max(0.0, room))}"
                )
        elif room < 0:
            est.warnings.append("vLLM will refuse to start: the weights do not fit in the reservation")
    else:
        est.add("weights", weights, w_detail)
        if arch is not None:
            est.add("KV cache", kv, kv_detail)
            if engine in ("ollama", "llama.cpp"):
                compute = llama_cpp_compute_bytes(arch, context * parallel, flash_attention)
                fa = "flash attention" if flash_attention else "no flash attention"
                est.add(
                    "compute buffers",
                    Range.spread(compute, 0.8, 1.5),
                    f"micro-batch {LLAMA_CPP_UBATCH}: logits, {fa}",
                )
            else:
                compute = llama_cpp_compute_bytes(arch, context * parallel, flash_attention, ubatch=2048)
                est.add("activations", Range.spread(compute, 0.6, 1.5), "prefill of 2048 tokens")
        est.add("runtime", runtime, engine, side="host")
        est.add("CUDA context", cuda)

    bpt = decode_bytes_per_token(arch, weights.mid, context, kv_bytes_per_element)
    est.bytes_per_token = bpt
    est.decode = decode_rate(bpt, bandwidth)
    return est


# --- training ----------------------------------------------------------------------------------------------
#
# The training estimate is the peak of one training process, counted the way PyTorch holds it: the
# persistent tensors (weights, optimizer states, a DPO reference), plus the larger of the backward pass's two
# peaks (every saved activation and the loss path when backward starts; every gradient and the optimizer's
# temporaries when it ends), plus what the caching allocator keeps above that (its slack, and the holes
# the lazily made optimizer states leave: lazy_state_hold), the CUDA context, and the process's CPU side.
# Every term is counted from the architecture; checked against 36 runs of five architectures, 27 measured on
# an H100 (Qwen3-0.6B, Qwen3-1.7B) and 9 on an H200 (Llama-3.2-1B, Qwen3-4B, Qwen2.5-1.5B):
# tests/data/measured-*.jsonl, tests/unit/test_estimate_measured.py, bench/bench_estimator.py.

METHODS = ("sft", "dpo", "lora", "qlora", "dpo-lora", "dpo-qlora")
PRECISIONS = ("bf16", "fp32", "mixed")
OPTIMIZERS = ("adamw", "adamw-8bit", "sgd")
# How the loss turns logits into a loss: Hugging Face's cross-entropy upcasts the logits to fp32; a loss in
# the activation dtype does not (TRL's per-token log-probs for DPO); a fused linear + cross-entropy (Liger,
# Cut Cross-Entropy) never materialises the logits.
LOSSES = ("hf", "no-upcast", "fused")
NF4_BITS = 4.127  # bitsandbytes NF4, block 64, double-quantised absmax

# A CUDA process's memory outside the caching allocator: the context (0.64 GB measured on an H100 with
# PyTorch 2) plus cuBLAS / cuDNN handles; NVML minus the allocator's reserved peak was 0.80 GB in every run.
TRAINING_CONTEXT_GB = (0.6, 0.8, 1.1)
# The training process's own CPU memory: Python, torch, transformers, tokenizer (peak RSS 1.53-1.68 GB in
# every measured run). On a Spark it comes out of the same pool.
TRAINING_PROCESS_GB = (1.3, 1.6, 2.2)
# One DataLoader worker: a forked Python process; its own heap, prefetched batches and the copy-on-write pages
# it touches.
DATALOADER_WORKER_GB = (0.2, 0.4, 0.8)
# The caching allocator keeps freed blocks to reuse them; what it holds above the allocated peak grows with
# the largest tensor it has had to place: measured 0.08-0.92 x that tensor (median 0.55) over 15 runs; where
# the optimizer's states existed before the first step (so without the hold below), 0.65 and 0.68 x
# (Qwen3-4B, 4 x 1024 and checkpointed 8 x 1024, on an H200).
ALLOCATOR_SLACK = (0.1, 0.55, 0.95)
# PyTorch's optimizers make their states at the first step(), after the first backward pass has freed its
# transient segments; the states settle there, and the gradients and the step's temporaries, freed every step,
# come back as holes that the next step's transients fit only in part (lazy_state_hold). Share of what fits
# that they reuse: all at best, half at worst (an activation wider than a weight's gradient fits none of them;
# measured 0.6 for Qwen3-4B at 4 x 1024).
HOLD_REUSE = (1.0, 0.75, 0.5)
# The count of saved tensors is exact for the kernels it assumes; the band covers kernels that copy a little
# more or less (a contiguous copy, a fused norm).
ACTIVATION_BAND = (0.95, 1.0, 1.06)


def default_loss(method: str) -> str:
    """DPO (TRL) computes per-token log-probs in the activation dtype; SFT through transformers upcasts."""
    return "no-upcast" if method.startswith("dpo") else "hf"


def lora_params(arch: Architecture, rank: int) -> float:
    """LoRA adapters on every linear layer of attention and MLP (q, k, v, o, gate, up, down):
    rank x (in + out) each."""
    h, q, kv = arch.hidden, arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    mlp = arch.moe_intermediate if arch.is_moe else arch.mlp_width
    per_layer = (h + q) + 2 * (h + kv) + (q + h) + 3 * (h + mlp)
    return float(rank * per_layer * arch.layers)


def norm_saved_bytes(hidden: int, act_bytes: float, residual_bytes: float) -> float:
    """One RMSNorm (Hugging Face): its fp32 input (the upcast, or the fp32 residual itself) and its
    normalised output in the residual dtype, kept for the weight's gradient; under autocast (an fp32 residual,
    bf16 activations) also the bf16 copy the next linears read."""
    cast = act_bytes * hidden if residual_bytes != act_bytes else 0.0
    return 4.0 * hidden + residual_bytes * hidden + cast


def activation_bytes_per_token_layer(
    arch: Architecture,
    seq_len: int,
    act_bytes: float,
    residual_bytes: float,
    efficient_attention: bool,
) -> float:
    """What one decoder layer keeps for the backward pass, per token, for a Hugging Face decoder:
    - its RMSNorms (norm_saved_bytes), and the per-head q/k norms where the model has them (fp32 upcast +
      normalised output);
    - attention: Q after RoPE, K, V and the attention output, plus the transposed copy o_proj reads; a
      memory-efficient kernel keeps only a fp32 log-sum-exp per head, eager attention keeps the fp32 softmax
      and its copy in the activation dtype for every score (heads x seq per token);
    - a gated MLP (SwiGLU / GeGLU): gate, act(gate), up and their product, each MLP-wide; an MoE layer keeps
      that per routed expert, plus each expert's copy of its input and the router's fp32 logits."""
    h = arch.hidden
    q = arch.heads * arch.head_dim
    kv = arch.kv_heads * arch.head_dim
    norms = arch.norms_per_layer * norm_saved_bytes(h, act_bytes, residual_bytes)
    qk_norms = (4.0 + act_bytes) * (q + kv) if arch.qk_norm else 0.0
    attention = act_bytes * (q + 2 * kv + q + q)
    if efficient_attention:
        attention += 4.0 * arch.heads
    else:
        probs_copy = act_bytes if act_bytes != 4.0 else 0.0
        attention += arch.heads * seq_len * (4.0 + probs_copy)
    if arch.is_moe:
        k = max(1, arch.experts_active)
        width = arch.moe_intermediate or arch.mlp_width
        mlp = k * (act_bytes * h + 4 * act_bytes * width) + 4.0 * arch.experts
    else:
        mlp = 4 * act_bytes * arch.mlp_width
    return norms + qk_norms + attention + mlp


def lora_activation_bytes_per_token_layer(arch: Architecture, rank: int, act_bytes: float) -> float:
    """What adapters add per layer and token: every adapted linear keeps its own copy of its input (the
    adapter path's dropout / dtype cast) and its rank-r intermediate (fp32 adapters). Adapters shrink the
    trainable weights, not the activations."""
    h, q = arch.hidden, arch.heads * arch.head_dim
    if arch.is_moe:
        width = (arch.moe_intermediate or arch.mlp_width) * max(1, arch.experts_active)
        mlp_inputs = 2 * h * max(1, arch.experts_active) + width
    else:
        mlp_inputs = 2 * h + arch.mlp_width
    inputs = 3 * h + q + mlp_inputs  # q, k, v read the normed input; o the attention output; gate, up, down
    return act_bytes * inputs + 7 * 4.0 * rank


def loss_bytes_per_token(arch: Architecture, loss: str, act_bytes: float) -> Range:
    """The loss path at the start of the backward pass, per token.
    hf: the fp32 log-softmax kept for backward, its gradient and the gradient of the fp32 logits (3 x 4 B x
    vocab); no-upcast: the same three in the activation dtype; high side: the training loop still holds the
    logits it was returned. fused: the logits are made chunk by chunk, the chunk sized to the hidden states;
    what stays is the fp32 gradient of the hidden states and one chunk."""
    vocab = arch.vocab
    if loss == "fused":
        per = 3 * 4.0 * arch.hidden
        return Range(per, per, 1.5 * per)
    elem = 4.0 if loss == "hf" else act_bytes
    per = 3 * elem * vocab
    return Range(per, per, per + act_bytes * vocab)


def lazy_state_hold(states: float, room: float, saved: float, loss_path: float, logits_fit: bool) -> Range:
    """What the caching allocator holds above the allocated peak because the optimizer makes its states late.

    The first step runs without states: its saved activations and loss path take segments that its backward
    pass frees, and then the gradients, the states and the step's temporaries settle there; what finds no room
    gets segments of its own size. From then on the gradients and the temporaries (`room`) leave holes each
    step, and the next step's transients meet those holes instead of the whole segments they had: holes inside
    the old segments take any of them, holes that are a single weight's own segment only activations (and the
    logits, where a logits block is no larger than the embedding's gradient). Whatever does not fit takes
    fresh segments, and at the run's peak, the transients' or the step's, the holes not refilled are held:
    min(room, transients) - HOLD_REUSE x what fits. Measured on an H200 with Qwen3-4B: 17.2 GB held at
    8 x 1024 checkpointed, 3.4 GB with the states made before the first step; 8.1 vs 1.6 GB at 4 x 1024."""
    if states <= 0 or room <= 0:
        return ZERO
    transients = saved + loss_path
    own = min(room, max(0.0, room + states - transients))  # in segments of a single weight's size
    fits = min(transients, room - own + (own if logits_fit else min(own, saved)))
    lo, mid, hi = (max(0.0, min(room, transients) - k * fits) for k in HOLD_REUSE)
    return Range(lo, mid, hi)


def estimate_training(
    arch: Architecture,
    *,
    method: str = "sft",
    batch: int = 4,
    seq_len: int = 2048,
    precision: str = "bf16",
    optimizer: str = "adamw",
    gradient_checkpointing: bool = False,
    efficient_attention: bool = True,
    lora_rank: int = 16,
    loss: str | None = None,
    dataloader_workers: int = 0,
) -> Estimate:
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}")
    loss = loss or default_loss(method)
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {', '.join(LOSSES)}")
    if dataloader_workers < 0:
        raise ValueError("dataloader workers must be 0 or more")
    est = Estimate()
    p = arch.params
    dpo = method.startswith("dpo")
    adapter = method.removeprefix("dpo-") if method.startswith("dpo-") else method
    adapter = adapter if adapter in ("lora", "qlora") else "full"

    act_bytes = 4.0 if precision == "fp32" else 2.0
    # Under autocast the residual stream stays fp32: the embedding is not autocast, the residual adds promote.
    residual_bytes = 4.0 if precision in ("fp32", "mixed") else 2.0
    # Bytes per parameter of the trained weights, their gradients and one optimizer state.
    if precision == "bf16":
        w_b, w_note, g_b, state_b = 2.0, "bf16", 2.0, 2.0
    elif precision == "fp32":
        w_b, w_note, g_b, state_b = 4.0, "fp32", 4.0, 4.0
    else:  # mixed: fp32 master weights, bf16 copies cached by autocast for the step
        w_b, w_note, g_b, state_b = 6.0, "fp32 master + bf16 autocast copies", 4.0, 4.0

    def optimizer_bytes(n: float, state: float) -> tuple[float, float, str]:
        """States, the step's temporaries (foreach AdamW builds sqrt(v) for every parameter), a note."""
        if optimizer == "adamw":
            return n * 2 * state, n * state, f"AdamW: 2 states x {state:g} B"
        if optimizer == "adamw-8bit":
            return n * 2.0, 0.0, "8-bit AdamW: 2 states x 1 B"
        return 0.0, 0.0, "SGD without momentum: no state"

    if adapter == "full":
        est.add("weights", Range.exact(p * w_b), f"{fmt_count(p)} params x {w_b:g} B ({w_note})")
        opt, opt_temp, opt_note = optimizer_bytes(p, state_b)
        est.add("optimizer states", Range.exact(opt), opt_note)
        if dpo:
            ref_b = 4.0 if precision == "fp32" else 2.0
            est.add("reference model", Range.exact(p * ref_b), f"frozen copy for DPO, {ref_b:g} B/param")
        grads = step_grads = p * g_b
        grads_note = f"{fmt_count(p)} x {g_b:g} B"
    else:
        trainable = lora_params(arch, lora_rank)
        if adapter == "qlora":
            emb = arch.embedding_params
            base = (p - emb) * NF4_BITS / 8 + emb * 2.0
            base_note = f"NF4 ({NF4_BITS} bits) + embeddings/head in bf16"
        else:
            base_b = 4.0 if precision == "fp32" else 2.0
            base = p * base_b
            base_note = f"frozen, {base_b:g} B/param"
        est.add("base weights", Range.exact(base), f"{fmt_count(p)} params, {base_note}")
        opt, opt_temp, opt_note = optimizer_bytes(trainable, 4.0)
        est.add(
            "LoRA adapters + grads + optimizer",
            Range.exact(trainable * 8.0 + opt),
            f"rank {lora_rank} on q,k,v,o,gate,up,down: {fmt_count(trainable)} params, fp32 weights and "
            f"grads, {opt_note}",
        )
        if dpo:
            est.notes.append("DPO with adapters: the reference model is the base with adapters off (no copy)")
        grads = 0.0  # the adapters' gradients are counted with them
        step_grads = trainable * 4.0
        grads_note = ""

    # DPO runs chosen and rejected completions through the policy together; the reference runs without grad.
    rows = batch * (2 if dpo else 1)
    tokens = float(rows) * seq_len
    per_layer = activation_bytes_per_token_layer(
        arch, seq_len, act_bytes, residual_bytes, efficient_attention
    )
    if adapter != "full":
        per_layer += lora_activation_bytes_per_token_layer(arch, lora_rank, act_bytes)
    final_norm = norm_saved_bytes(arch.hidden, act_bytes, residual_bytes)
    attn_kind = "memory-efficient attention" if efficient_attention else "eager attention (s^2 scores)"
    lo_k, _, hi_k = ACTIVATION_BAND
    if gradient_checkpointing:
        kept = arch.layers * residual_bytes * arch.hidden + final_norm
        acts = Range.spread(tokens * kept, lo_k, hi_k)
        act_detail = (
            f"checkpointing: {arch.layers} layer inputs kept; {rows} x {seq_len} tokens x {kept / 1e3:.0f} kB"
        )
        # Later in the backward pass one layer is recomputed while the gradients pile up.
        recompute = tokens * (kept + per_layer) + grads
    else:
        acts = Range.spread(tokens * (arch.layers * per_layer + final_norm), lo_k, hi_k)
        act_detail = (
            f"{arch.layers} layers x {per_layer / 1e3:.1f} kB per token; {rows} x {seq_len} tokens, "
            f"{attn_kind}"
        )
        recompute = 0.0
    loss_path = loss_bytes_per_token(arch, loss, act_bytes).scale(tokens)
    loss_detail = {
        "hf": "fp32 log-softmax, its gradient, the fp32 logits' gradient: 12 B",
        "no-upcast": f"log-softmax, its gradient, the logits' gradient: 3 x {act_bytes:g} B",
        "fused": "fused linear + cross-entropy: no full logits",
    }[loss]
    loss_detail = f"loss {loss}: {rows} x {seq_len} x {arch.vocab} vocab, {loss_detail}"
    if loss == "fused":
        loss_detail = f"loss fused: {rows} x {seq_len} tokens, fp32 hidden-state gradient + one chunk"

    # The backward pass peaks either when it starts (activations + loss path) or when it ends (every
    # gradient + the optimizer step's temporaries); zero_grad(set_to_none) frees gradients between steps.
    end_peak = grads + opt_temp
    start_peak = acts + loss_path
    if max(end_peak, recompute) > start_peak.mid:
        if recompute >= end_peak:
            label = "activations (recompute)"
            detail = f"{act_detail}; one layer recomputed beside the gradients"
        else:
            label = "gradients + optimizer step"
            detail = f"{grads_note}, plus the step's temporaries"
        peak = max(end_peak, recompute)
        above = f"{detail}; above the peak at the loss ({fmt_est(start_peak.mid)})"
        est.add(label, Range.spread(peak, lo_k, hi_k), above)
    else:
        est.add("activations", acts, act_detail)
        est.add("loss (logits)", loss_path, loss_detail)
        if grads:
            est.notes.append(
                f"gradients ({fmt_est(grads)}) are allocated as the backward pass frees activations: "
                "not at the peak"
            )

    # The largest single tensor sizes the allocator's fragmentation.
    loss_elem = 4.0 if loss == "hf" else act_bytes
    candidates = [
        tokens * arch.vocab * loss_elem if loss != "fused" else tokens * arch.hidden * 4.0,
        tokens * arch.mlp_width * act_bytes,
        arch.vocab * arch.hidden * (w_b if adapter == "full" else 2.0),
    ]
    if not efficient_attention:
        candidates.append(rows * arch.heads * float(seq_len) ** 2 * 4.0)
    largest = max(candidates)
    slack = Range(*(k * largest for k in ALLOCATOR_SLACK))
    slack_detail = f"caching allocator: {ALLOCATOR_SLACK[1]:g} x the largest tensor ({fmt_est(largest)})"
    if precision == "mixed" and adapter == "full":
        # autocast's bf16 weight copies are freed after every step and leave holes of their size
        copies = 2.0 * p
        slack = slack + Range(0.0, copies, copies)
        slack_detail += f" + the freed autocast copies ({fmt_est(copies)})"
    est.add("allocator slack", slack, slack_detail)
    # The gradients and the step's temporaries come and go every step; the largest of them is the
    # embedding's gradient (full fine-tuning), which a logits block may fit.
    room = step_grads + opt_temp
    largest_grad = arch.vocab * arch.hidden * g_b if adapter == "full" else 0.0
    logits_fit = loss == "fused" or tokens * arch.vocab * loss_elem <= largest_grad
    hold = lazy_state_hold(opt, room, acts.mid, loss_path.mid, logits_fit)
    if hold.high > 0:
        est.add(
            "allocator hold (lazy states)",
            hold,
            f"optimizer states made at the first step settle where its transients were; the gradients' and "
            f"the step's temporaries' {fmt_est(room)} come back as holes the next step reuses in part",
        )
    est.add("CUDA context", gb_range(TRAINING_CONTEXT_GB), "context + cuBLAS/cuDNN handles")
    est.add(
        "process (CPU side)",
        gb_range(TRAINING_PROCESS_GB),
        "Python, torch, transformers, tokenizer",
        side="host",
    )
    if dataloader_workers:
        lo, mid, hi = DATALOADER_WORKER_GB
        est.add(
            "dataloader workers",
            Range.gb(lo, mid, hi).scale(dataloader_workers),
            f"{dataloader_workers} x {mid:g} GB (forked Python processes)",
            side="host",
        )
    if loss != "fused" and loss_path.mid > 0.3 * est.total.mid:
        est.notes.append(
            "logits dominate: a smaller batch x sequence, or a fused linear + cross-entropy loss "
            "(loss = fused), cuts them most"
        )
    return est


# --- fixed footprints ---------------------------------------------------------------------------------------


def estimate_fixed(
    footprint: Range, label: str = "footprint", detail: str = "", gpu: bool = True
) -> Estimate:
    """A workload whose memory is known as a figure (the reference table, a measurement), plus its CUDA
    context when it uses the GPU."""
    est = Estimate()
    est.add(label, footprint, detail)
    if gpu:
        est.add("CUDA context", gb_range(CUDA_CONTEXT_GB))
    return est


def system_base() -> Range:
    return gb_range(SYSTEM_BASE_GB)
