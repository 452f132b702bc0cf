"""Measure one training run's memory on a real NVIDIA GPU: the rows that tests/unit/test_estimate_measured.py
holds the planner's training estimate to (tests/data/README.md says how each table was made).

Runs on a machine with an NVIDIA GPU, PyTorch, transformers (and peft for LoRA); not part of the test suite:

    python3 bench/measure_training.py --arch qwen3-4b --method sft --batch 4 --seq 1024 [--gc] >> rows.jsonl

The model is built from the architecture in sparktop's catalog (random weights, bf16, directly on the GPU),
trained three AdamW steps with labels = inputs, while a thread samples NVML's per-process used GPU memory
every 20 ms. One run per process: the CUDA context, the caching allocator and the peak RSS are the run's own.
Prints one JSON row.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import threading
import time
import tomllib
from pathlib import Path
from typing import Any

import pynvml
import torch

CATALOG = Path(__file__).resolve().parents[1] / "sparktop" / "plan" / "catalog" / "data" / "models.toml"
GB = 1e9


def architecture(name: str) -> dict[str, Any]:
    for model in tomllib.loads(CATALOG.read_text())["model"]:
        if model["name"] == name:
            return dict(model)
    sys.exit(f"measure_training: {name!r} is not a model of {CATALOG}")


def build_model(arch: dict[str, Any]) -> torch.nn.Module:
    """A decoder of the catalog's shape: Qwen3 (q/k norm) or Llama/Qwen2 layout, bf16 on the GPU."""
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config, Qwen3Config

    common = dict(
        num_hidden_layers=arch["layers"],
        hidden_size=arch["hidden"],
        num_attention_heads=arch["heads"],
        num_key_value_heads=arch["kv_heads"],
        head_dim=arch.get("head_dim", arch["hidden"] // arch["heads"]),
        intermediate_size=arch["intermediate"],
        vocab_size=arch["vocab"],
        tie_word_embeddings=arch.get("tied_embeddings", False),
        max_position_embeddings=arch.get("context", 32768),
    )
    name = arch["name"]
    config: Any
    if name.startswith("qwen3"):
        config = Qwen3Config(**common)
    elif name.startswith("qwen2"):
        config = Qwen2Config(**common)
    else:
        config = LlamaConfig(**common)
    # Built in bf16 on the GPU directly: an fp32 model moved there would leave its copy in the allocator.
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa")
    torch.set_default_dtype(torch.float32)
    return model


class NvmlPeak:
    """Peak of this process's NVML used GPU memory (else of the device's used memory over its level at start,
    when the driver lists no process of this PID, as in a container with its own PID namespace)."""

    def __init__(self) -> None:
        pynvml.nvmlInit()
        self.handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        self.device_base = pynvml.nvmlDeviceGetMemoryInfo(self.handle).used
        self.proc_peak = 0
        self.device_peak = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.thread.start()

    def read(self) -> tuple[int, int]:
        own = 0
        for proc in pynvml.nvmlDeviceGetComputeRunningProcesses(self.handle):
            if proc.pid == os.getpid() and proc.usedGpuMemory:
                own = proc.usedGpuMemory
        return own, pynvml.nvmlDeviceGetMemoryInfo(self.handle).used - self.device_base

    def sample(self) -> None:
        while not self.stop.is_set():
            own, device = self.read()
            self.proc_peak = max(self.proc_peak, own)
            self.device_peak = max(self.device_peak, device)
            time.sleep(0.02)

    def finish(self) -> tuple[int, int]:
        self.stop.set()
        self.thread.join()
        return self.proc_peak, self.device_peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", required=True, help="a model name of sparktop's catalog")
    parser.add_argument("--method", choices=["sft", "lora"], default="sft")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--gc", action="store_true", help="gradient checkpointing")
    args = parser.parse_args()

    peak = NvmlPeak()
    torch.zeros(1, device="cuda")
    time.sleep(0.2)
    ctx = peak.read()[0] or peak.read()[1]
    arch = architecture(args.arch)
    model = build_model(arch)
    params = sum(p.numel() for p in model.parameters())
    if args.gc:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
    if args.method == "lora":
        from peft import LoraConfig, get_peft_model

        targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
        model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules=targets))
    model.train()
    static = torch.cuda.memory_allocated()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
    tokens = torch.randint(0, arch["vocab"], (args.batch, args.seq), device="cuda")
    torch.cuda.reset_peak_memory_stats()
    steps = []
    for _ in range(3):
        start = time.perf_counter()
        loss = model(input_ids=tokens, labels=tokens).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        steps.append(time.perf_counter() - start)
    time.sleep(0.1)
    proc_peak, device_peak = peak.finish()
    row = {
        "arch": args.arch,
        "method": args.method,
        "batch": args.batch,
        "seq": args.seq,
        "precision": "bf16",
        "gc": args.gc,
        "attn": "sdpa",
        "optim": "adamw",
        "params": params,
        "ctx_gb": ctx / GB,
        "static_gb": static / GB,
        "peak_alloc_gb": torch.cuda.max_memory_allocated() / GB,
        "peak_reserved_gb": torch.cuda.max_memory_reserved() / GB,
        # NVML's per-process figure where the driver lists this PID, else the device's rise over the run.
        "nvml_proc_gb": (proc_peak or device_peak) / GB,
        "nvml_source": "process" if proc_peak else "device",
        "maxrss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GB,  # ru_maxrss is in KiB
        "step_s": min(steps),
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0),
    }
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
