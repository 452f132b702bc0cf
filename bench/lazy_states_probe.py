"""Where the caching allocator's hold above max_memory_allocated comes from in a training run: the same run
with the optimizer's states made lazily (PyTorch's way: at the first step()) and made before the first step.

Runs on a machine with an NVIDIA GPU, PyTorch, transformers and peft; not part of the test suite (its results
and the method are in tests/data/README.md, under measured-h200-training.jsonl):

    python3 bench/lazy_states_probe.py

One process per model; each configuration runs three AdamW steps with labels = inputs, and the process empties
the allocator's cache between configurations. Prints one JSON line per configuration: the peaks, the reserved
and allocated GB after each step's forward, backward and optimizer step, and the segments at the end.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure_training import architecture, build_model

G = 1e9


def seg_summary() -> dict[str, Any]:
    segs = torch.cuda.memory_snapshot()
    big = sorted(
        ((s["total_size"] / G, s["allocated_size"] / G) for s in segs if s["total_size"] >= 0.4e9),
        reverse=True,
    )
    small = [s for s in segs if s["total_size"] < 0.4e9]
    return {
        "big": [(round(t, 2), round(a, 2)) for t, a in big[:14]],
        "n_big": len(big),
        "small_n": len(small),
        "small_tot": round(sum(s["total_size"] for s in small) / G, 2),
        "small_alloc": round(sum(s["allocated_size"] for s in small) / G, 2),
    }


def run(
    m: torch.nn.Module,
    tag: str,
    b: int,
    s: int,
    ckpt: bool,
    eager: bool,
    foreach: bool | None = None,
    vocab: int = 151936,
) -> None:
    if ckpt:
        m.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        m.enable_input_require_grads()
    else:
        m.gradient_checkpointing_disable()
    ps = [p for p in m.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(ps, lr=1e-5, foreach=foreach)
    if eager:  # the states AdamW would make at its first step, made now
        for p in ps:
            opt.state[p] = {
                "step": torch.tensor(0.0),
                "exp_avg": torch.zeros_like(p),
                "exp_avg_sq": torch.zeros_like(p),
            }
    tok = torch.randint(0, vocab, (b, s), device="cuda")
    torch.cuda.reset_peak_memory_stats()
    trace = []
    for _ in range(3):
        loss = m(input_ids=tok, labels=tok).loss
        f = (torch.cuda.memory_reserved() / G, torch.cuda.max_memory_allocated() / G)
        loss.backward()
        del loss
        bw = (torch.cuda.memory_reserved() / G, torch.cuda.max_memory_allocated() / G)
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        st = (torch.cuda.memory_reserved() / G, torch.cuda.max_memory_allocated() / G)
        trace.append([round(x, 2) for x in (*f, *bw, *st)])
    pa, pr = torch.cuda.max_memory_allocated() / G, torch.cuda.max_memory_reserved() / G
    row = {
        "run": tag,
        "b": b,
        "s": s,
        "gc": ckpt,
        "eager": eager,
        "foreach": foreach,
        "alloc": round(pa, 2),
        "reserved": round(pr, 2),
        "hold": round(pr - pa, 2),
        "trace(fwd r,a bwd r,a step r,a)": trace,
        "segs": seg_summary(),
    }
    print(json.dumps(row), flush=True)
    opt.state.clear()
    del opt, ps, tok
    for p in m.parameters():
        p.grad = None
    gc.collect()
    torch.cuda.empty_cache()


def main() -> None:
    t0 = time.time()
    m = build_model(architecture("qwen3-4b"))
    m.train()
    gc.collect()
    torch.cuda.empty_cache()
    for b, s, ck in ((1, 1024, False), (4, 1024, False), (8, 1024, True)):
        for eager in (False, True):
            run(m, "qwen3-4b", b, s, ck, eager)
    run(m, "qwen3-4b", 8, 1024, True, False, foreach=False)
    from peft import LoraConfig, get_peft_model

    m.gradient_checkpointing_disable()
    targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    m = get_peft_model(m, LoraConfig(r=16, lora_alpha=32, target_modules=targets))
    m.train()
    run(m, "qwen3-4b-lora", 4, 1024, False, False)
    print("seconds", round(time.time() - t0), flush=True)
    del m
    gc.collect()
    torch.cuda.empty_cache()
    m = build_model(architecture("qwen3-0.6b"))
    m.train()
    for b, s, ck in ((8, 1024, False), (16, 1024, False), (16, 1024, True)):
        run(m, "qwen3-0.6b", b, s, ck, False)
    print("seconds", round(time.time() - t0), flush=True)


if __name__ == "__main__":
    main()
